package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultMaxResponseBytes caps what an http or exec backend may return,
// unless its function sets max_response_bytes or max_output_bytes.
const DefaultMaxResponseBytes = 1 << 20

// MaxResponseBytesLimit is the largest max_response_bytes or
// max_output_bytes a catalogue may set (the default before it had one).
// What a2ad holds in memory for a call is a multiple of its cap (see the
// README), so this bounds the memory of --max-concurrent calls.
const MaxResponseBytesLimit = 4 << 20

// defaultClient is the client of HTTPBackends without their own. It does not
// follow redirects, and it has no overall timeout: the call's context
// bounds each request.
var defaultClient = &http.Client{
	Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   16,
		ExpectContinueTimeout: time.Second,
	},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// HTTPBackend calls a function by POSTing its input as JSON to URL.
type HTTPBackend struct {
	URL    string
	Method string // POST unless set
	// Headers are sent with every call. Their values are resolved from
	// the environment at load and must never be logged.
	Headers map[string]string
	// MaxResponseBytes caps the response body; 0 means
	// DefaultMaxResponseBytes. In an application/x-ndjson body it caps
	// the result and each line, and all of the body, progress lines
	// included, is capped at 4 times as much.
	MaxResponseBytes int64
	// Client is the HTTP client; nil means a shared default client, which
	// does not follow redirects.
	Client *http.Client
}

// Kind returns "http".
func (b *HTTPBackend) Kind() string { return "http" }

// Invoke sends input as the JSON body of one request (POST unless Method
// says otherwise) and applies the backend contract to a 2xx answer. An
// answer with the Content-Type application/x-ndjson is read as it
// streams: each progress line is reported to ReportProgress(ctx) as it
// arrives (see readOutput), and the other lines are the result. Any other
// body is the result as a whole, progress lines or not.
//
// Its *CallError reasons are "call canceled" and "call timed out" once ctx
// is done, "function backend unavailable" if the request could not be made
// or its answer not read, "function returned HTTP <code>" for any other
// status (redirects are not followed), "function response exceeds <N>
// bytes" (N is MaxResponseBytes, or 4 times that for all of an ndjson
// body), "function wrote a malformed progress line" (ndjson only),
// "function backend misconfigured" for a URL or method that no request can
// be built from, and those of the contract (see parseResult). No reason
// holds the URL or a header value.
func (b *HTTPBackend) Invoke(ctx context.Context, input json.RawMessage) (Result, error) {
	if ctx.Err() != nil {
		return Result{}, contextError(ctx)
	}
	req, err := b.request(ctx, input)
	if err != nil {
		return Result{}, &CallError{Reason: "function backend misconfigured", Err: stripURL(err)}
	}
	client := b.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, contextError(ctx)
		}
		return Result{}, &CallError{Reason: "function backend unavailable", Err: stripURL(err)}
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Keep a little of the body for the log.
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return Result{}, &CallError{
			Reason: fmt.Sprintf("function returned HTTP %d", resp.StatusCode),
			Err:    fmt.Errorf("http status %q, body %q", resp.Status, snippet),
		}
	}
	return b.result(ctx, resp)
}

// result reads a 2xx answer and applies the backend contract to it.
func (b *HTTPBackend) result(ctx context.Context, resp *http.Response) (Result, error) {
	limit := b.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	ct := resp.Header.Get("Content-Type")
	if isNDJSONMediaType(ct) {
		body, err := readOutput(ctx, resp.Body, limit)
		switch {
		case outputFailed(err):
			return Result{}, outputCallError(err, "response")
		case err != nil:
			return Result{}, readError(ctx, err)
		}
		return parseResult(ctx, body)
	}
	if resp.ContentLength > limit {
		return Result{}, &CallError{Reason: fmt.Sprintf("function response exceeds %d bytes", limit)}
	}
	body, err := readCapped(resp.Body, limit)
	switch {
	case errors.Is(err, errTooLarge):
		return Result{}, &CallError{Reason: fmt.Sprintf("function response exceeds %d bytes", limit)}
	case err != nil:
		return Result{}, readError(ctx, err)
	}
	res, err := parseResult(ctx, body)
	if err != nil {
		var ce *CallError
		if errors.As(err, &ce) && ce.Reason == reasonInvalidJSON && !isJSONMediaType(ct) {
			ce.Err = fmt.Errorf("%w, response content type %q", ce.Err, truncateUTF8(ct, 128))
		}
		return Result{}, err
	}
	return res, nil
}

// readError is the error of an answer whose body could not be read to
// its end.
func readError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return contextError(ctx)
	}
	return &CallError{Reason: "function backend unavailable", Err: fmt.Errorf("read response: %w", stripURL(err))}
}

// request builds the backend's request for input: the configured method
// (POST by default) and headers (a Host header sets the request's host),
// then the headers of the call in ctx (see Call.Header) and the W3C
// traceparent of its span, if it is traced, which win over configured
// ones of the same name.
func (b *HTTPBackend) request(ctx context.Context, input json.RawMessage) (*http.Request, error) {
	method := b.Method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, b.URL, bytes.NewReader(input))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	// application/x-ndjson: a2ad reads progress lines from it as they come.
	req.Header.Set("Accept", "application/json, application/x-ndjson")
	for k, v := range b.Headers {
		if http.CanonicalHeaderKey(k) == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if c, ok := CallFrom(ctx); ok {
		c.Header(req.Header)
	}
	traceHeader(ctx, req.Header)
	return req, nil
}

// stripURL drops the URL from a *url.Error, so that neither the address
// nor anything in its query string ends up in the log.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", strings.ToLower(ue.Op), ue.Err)
	}
	return err
}

// isJSONMediaType reports whether ct is application/json or a +json type.
func isJSONMediaType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// isNDJSONMediaType reports whether ct is application/x-ndjson, with or
// without parameters.
func isNDJSONMediaType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/x-ndjson")
}
