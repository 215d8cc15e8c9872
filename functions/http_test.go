package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/functions"
)

// MustServe starts an HTTP server on loopback for the test.
func MustServe(tb testing.TB, h http.HandlerFunc) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv
}

// Reply answers every request with status and body.
func Reply(status int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func TestHTTPBackend_Success(t *testing.T) {
	for _, method := range []string{"", http.MethodPut} {
		t.Run("method="+method, func(t *testing.T) {
			type request struct {
				method, contentType, accept, key string
				body                             []byte
			}
			got := make(chan request, 1)
			srv := MustServe(t, func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				got <- request{
					method:      r.Method,
					contentType: r.Header.Get("Content-Type"),
					accept:      r.Header.Get("Accept"),
					key:         r.Header.Get("X-Api-Key"),
					body:        body,
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, "{\"greeting\": \"hello\",\n \"n\": 1}\n")
			})
			b := &functions.HTTPBackend{URL: srv.URL + "/fn", Method: method, Headers: map[string]string{"X-Api-Key": "k-123"}}
			input := json.RawMessage(`{"name":"world"}`)
			res, err := b.Invoke(context.Background(), input)
			AssertOutput(t, res, err, `{"greeting":"hello","n":1}`)

			r := <-got
			wantMethod := method
			if wantMethod == "" {
				wantMethod = http.MethodPost
			}
			if r.method != wantMethod {
				t.Errorf("method = %q, want %q", r.method, wantMethod)
			}
			if r.contentType != "application/json" || r.accept != "application/json, application/x-ndjson" {
				t.Errorf("Content-Type = %q, Accept = %q, want application/json and application/json, application/x-ndjson", r.contentType, r.accept)
			}
			if r.key != "k-123" {
				t.Errorf("X-Api-Key = %q, want k-123", r.key)
			}
			if !bytes.Equal(r.body, input) {
				t.Errorf("body = %s, want %s", r.body, input)
			}
		})
	}
}

func TestHTTPBackend_Signals(t *testing.T) {
	t.Run("input required", func(t *testing.T) {
		srv := MustServe(t, Reply(http.StatusOK, "application/json", `{"a2a.input_required":{"question":"Which city?"}}`))
		res, err := (&functions.HTTPBackend{URL: srv.URL}).Invoke(context.Background(), json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if res.InputRequired != "Which city?" || res.Output != nil {
			t.Fatalf("Invoke = %+v, want question %q", res, "Which city?")
		}
	})
	t.Run("error", func(t *testing.T) {
		srv := MustServe(t, Reply(http.StatusOK, "application/json", `{"a2a.error":"no such city"}`))
		_, err := (&functions.HTTPBackend{URL: srv.URL}).Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function reported an error: no such city")
	})
	t.Run("invalid JSON", func(t *testing.T) {
		srv := MustServe(t, Reply(http.StatusOK, "text/html", `<html>oops</html>`))
		_, err := (&functions.HTTPBackend{URL: srv.URL}).Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function returned invalid JSON")
	})
	t.Run("JSON as text", func(t *testing.T) {
		srv := MustServe(t, Reply(http.StatusOK, "text/plain", `{"ok":true}`))
		res, err := (&functions.HTTPBackend{URL: srv.URL}).Invoke(context.Background(), json.RawMessage(`{}`))
		AssertOutput(t, res, err, `{"ok":true}`)
	})
}

func TestHTTPBackend_Status(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusInternalServerError, http.StatusServiceUnavailable} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			srv := MustServe(t, Reply(status, "application/json", `{"ok":true}`))
			url := srv.URL + "/fn?token=s3cret"
			_, err := (&functions.HTTPBackend{URL: url}).Invoke(context.Background(), json.RawMessage(`{}`))
			ce := AssertReason(t, err, fmt.Sprintf("function returned HTTP %d", status))
			if strings.Contains(ce.Error(), "s3cret") || strings.Contains(ce.Error(), srv.URL) {
				t.Errorf("error %q holds the URL", ce.Error())
			}
		})
	}
}

func TestHTTPBackend_RedirectNotFollowed(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/fn", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	})
	hits := make(chan struct{}, 1)
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
		hits <- struct{}{}
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
	srv := MustServe(t, mux.ServeHTTP)
	_, err := (&functions.HTTPBackend{URL: srv.URL + "/fn"}).Invoke(context.Background(), json.RawMessage(`{}`))
	AssertReason(t, err, "function returned HTTP 302")
	select {
	case <-hits:
		t.Fatal("redirect was followed")
	default:
	}
}

func TestHTTPBackend_Oversize(t *testing.T) {
	srv := MustServe(t, Reply(http.StatusOK, "application/json", `{"a":"0123456789"}`)) // 18 bytes
	t.Run("over", func(t *testing.T) {
		_, err := (&functions.HTTPBackend{URL: srv.URL, MaxResponseBytes: 17}).Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function response exceeds 17 bytes")
	})
	t.Run("at limit", func(t *testing.T) {
		res, err := (&functions.HTTPBackend{URL: srv.URL, MaxResponseBytes: 18}).Invoke(context.Background(), json.RawMessage(`{}`))
		AssertOutput(t, res, err, `{"a":"0123456789"}`)
	})
	t.Run("default", func(t *testing.T) {
		big := MustServe(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `"`)
			_, _ = io.Copy(w, io.LimitReader(zeros{}, functions.DefaultMaxResponseBytes))
			_, _ = io.WriteString(w, `"`)
		})
		_, err := (&functions.HTTPBackend{URL: big.URL}).Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function response exceeds 1048576 bytes") // the default cap, 1 MiB
	})
}

// zeros reads as endless '0's.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

// MustServeBlocking starts a server whose handler reads the request and
// then blocks until the client goes away or the test ends; started
// receives once per request.
func MustServeBlocking(tb testing.TB, started chan<- struct{}) *httptest.Server {
	tb.Helper()
	release := make(chan struct{})
	srv := MustServe(tb, func(w http.ResponseWriter, r *http.Request) {
		// The server notices a closed connection only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		select { // never block here: a blocked handler would hang srv.Close
		case started <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	tb.Cleanup(func() { close(release) }) // runs before srv.Close
	return srv
}

func TestHTTPBackend_Timeout(t *testing.T) {
	started := make(chan struct{}, 1)
	srv := MustServeBlocking(t, started)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err := (&functions.HTTPBackend{URL: srv.URL}).Invoke(ctx, json.RawMessage(`{}`))
	AssertReason(t, err, "call timed out")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("Invoke took %v after a 200ms deadline", d)
	}
}

func TestHTTPBackend_Cancel(t *testing.T) {
	started := make(chan struct{}, 1)
	srv := MustServeBlocking(t, started)
	errStop := errors.New("stopped by test")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		<-started
		cancel(errStop)
	}()
	begin := time.Now()
	_, err := (&functions.HTTPBackend{URL: srv.URL}).Invoke(ctx, json.RawMessage(`{}`))
	AssertReason(t, err, "call canceled")
	if !errors.Is(err, errStop) {
		t.Errorf("error %v does not wrap the cancel cause", err)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("Invoke took %v", d)
	}
}

func TestHTTPBackend_Unavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = (&functions.HTTPBackend{URL: "http://" + addr + "/fn?token=s3cret"}).Invoke(context.Background(), json.RawMessage(`{}`))
	ce := AssertReason(t, err, "function backend unavailable")
	if strings.Contains(ce.Error(), "s3cret") {
		t.Errorf("error %q holds the URL", ce.Error())
	}
}

func TestHTTPBackend_Misconfigured(t *testing.T) {
	_, err := (&functions.HTTPBackend{URL: "http://h/\x7f?token=s3cret"}).Invoke(context.Background(), json.RawMessage(`{}`))
	ce := AssertReason(t, err, "function backend misconfigured")
	if strings.Contains(ce.Error(), "s3cret") {
		t.Errorf("error %q holds the URL", ce.Error())
	}
}
