package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultURL is the admin listener's base URL when --admin-listen keeps
// its default.
const DefaultURL = "http://127.0.0.1:8081"

// Client calls the admin listener of one a2ad. It uses no proxy: the
// listener answers loopback callers only.
type Client struct {
	base string
	hc   *http.Client
}

// NewClient returns a client of the admin listener at base, an http or
// https URL with a host (a trailing slash is dropped). It returns an
// error if base is not one.
func NewClient(base string) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not the base URL of an admin listener (an http or https URL with a host)", base)
	}
	return &Client{
		base: strings.TrimRight(base, "/"),
		hc:   &http.Client{Transport: &http.Transport{Proxy: nil, ResponseHeaderTimeout: 30 * time.Second}},
	}, nil
}

// Close closes the client's idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// StatusError is an answer other than 200.
type StatusError struct {
	Code   int    // 404
	Status string // "404 Not Found"
	// Message is the error body's message ({"message": ...}), "" when it
	// has none.
	Message string

	body []byte // the answer, for errors that carry a report (a reload's 422)
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return "the server answered " + e.Status
	}
	return "the server answered " + e.Status + ": " + e.Message
}

// statusError reads the error of resp from its body: the admin
// listener's {"message": ...}, or the main listener's {"error": ...},
// which says where the admin listener is when --server names the main one.
func statusError(resp *http.Response) *StatusError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e struct {
		ErrorBody
		Error json.RawMessage `json:"error"` // a string, or a JSON-RPC error object (the main listener's)
	}
	_ = json.Unmarshal(body, &e)
	msg := e.Message
	if msg == "" {
		var s string
		var obj struct{ Message string }
		if json.Unmarshal(e.Error, &s) == nil {
			msg = s
		} else if json.Unmarshal(e.Error, &obj) == nil {
			msg = obj.Message
		}
	}
	if msg == "" && !json.Valid(body) {
		// A text answer says what is wrong too (a PostgreSQL store's
		// backup): its first line, bounded, rather than a bare status.
		line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
		msg = truncateText(line, 300)
	}
	if strings.Contains(msg, "HTTP request to an HTTPS server") {
		msg = "the admin listener speaks TLS (--tls-cert): give the URL as https://..."
	}
	return &StatusError{Code: resp.StatusCode, Status: resp.Status, Message: msg, body: body}
}

// TaskFilter selects the tasks of a listing; a nil field is not sent, and
// the server applies its default.
type TaskFilter struct {
	State    *string
	Function *string
	// Caller is a caller's id; "" is the anonymous caller.
	Caller    *string
	Limit     *int
	PageToken *string
}

func (f TaskFilter) query() url.Values {
	q := url.Values{}
	for name, v := range map[string]*string{"state": f.State, "function": f.Function, "caller": f.Caller, "page_token": f.PageToken} {
		if v != nil {
			q.Set(name, *v)
		}
	}
	if f.Limit != nil {
		q.Set("limit", strconv.Itoa(*f.Limit))
	}
	return q
}

// Tasks returns a page of the tasks f selects, newest first, and the
// answer as the server sent it. Errors: *StatusError for an answer other
// than 200 (400 for a filter the server refuses), else a transport or
// decoding error.
func (c *Client) Tasks(ctx context.Context, f TaskFilter) (*TaskList, []byte, error) {
	var list TaskList
	raw, err := c.call(ctx, http.MethodGet, "/admin/v1/tasks?"+f.query().Encode(), &list)
	if err != nil {
		return nil, nil, err
	}
	return &list, raw, nil
}

// Task returns a task and its event log, and the answer as the server
// sent it. Errors as Tasks; a task that does not exist is a 404.
func (c *Client) Task(ctx context.Context, id string) (*TaskView, []byte, error) {
	var v TaskView
	raw, err := c.call(ctx, http.MethodGet, "/admin/v1/tasks/"+url.PathEscape(id), &v)
	if err != nil {
		return nil, nil, err
	}
	return &v, raw, nil
}

// Cancel cancels a task that is not terminal, as its caller would, and
// returns it as it then stands. Errors as Task; a terminal task is a 409.
func (c *Client) Cancel(ctx context.Context, id string) (*TaskView, error) {
	var v TaskView
	if _, err := c.call(ctx, http.MethodPost, "/admin/v1/tasks/"+url.PathEscape(id)+"/cancel", &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// Reload asks the server to read its catalogue and keys file again (POST
// /admin/v1/reload) and returns its report. A reload in which a part kept
// what was in force (HTTP 422) returns the report and a *StatusError;
// other errors are as Tasks'.
func (c *Client) Reload(ctx context.Context) (*ReloadReport, []byte, error) {
	var r ReloadReport
	raw, err := c.call(ctx, http.MethodPost, "/admin/v1/reload", &r)
	var se *StatusError
	if errors.As(err, &se) && se.Code == http.StatusUnprocessableEntity && se.body != nil {
		if json.Unmarshal(se.body, &r) == nil {
			return &r, se.body, err
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return &r, raw, nil
}

// DeadLetters returns a page of dead letters, oldest first: up to limit
// (0: the server's default), after the page pageToken ("" from the
// first) names.
func (c *Client) DeadLetters(ctx context.Context, limit int, pageToken string) (*DeadLetterList, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if pageToken != "" {
		q.Set("page_token", pageToken)
	}
	var list DeadLetterList
	if _, err := c.call(ctx, http.MethodGet, "/admin/v1/dead-letters?"+q.Encode(), &list); err != nil {
		return nil, err
	}
	return &list, nil
}

// RetryDeadLetter puts dead letter id back in the push outbox, its
// attempts reset, and returns it as it was. An unknown id is a 404.
func (c *Client) RetryDeadLetter(ctx context.Context, id uint64) (*DeadLetter, error) {
	var d DeadLetter
	if _, err := c.call(ctx, http.MethodPost, "/admin/v1/dead-letters/"+strconv.FormatUint(id, 10)+"/retry", &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// DropDeadLetter deletes dead letter id and returns it as it was. An
// unknown id is a 404.
func (c *Client) DropDeadLetter(ctx context.Context, id uint64) (*DeadLetter, error) {
	var d DeadLetter
	if _, err := c.call(ctx, http.MethodDelete, "/admin/v1/dead-letters/"+strconv.FormatUint(id, 10), &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// call sends the request and decodes a 200's body into out, which it
// returns.
func (c *Client) call(ctx context.Context, method, path string, out any) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the admin listener at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(resp)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("the answer is not the operator view's JSON: %w", err)
	}
	return raw, nil
}

// Backup copies the store of the server to w, through the backup
// endpoint, and fails unless it got the whole file. Errors:
// *StatusError for an answer other than 200, else the transport's.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+BackupPath, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, statusError(resp)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("the download ended after %d bytes: %w", n, err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, fmt.Errorf("the download ended after %d of %d bytes", n, resp.ContentLength)
	}
	return n, nil
}

// truncateText is s cut to at most n bytes, on a rune boundary.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
