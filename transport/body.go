package transport

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2ad/a2ad/a2a"
)

// DefaultBodyGrace is the time a request body has before Config.MinBodyRate
// applies.
const DefaultBodyGrace = 5 * time.Second

// unreadBodyWait is how long a request answered without reading its body
// (refused, unauthenticated, the wrong type) may take to deliver the rest
// of it: a body already sent is discarded and the connection kept; a body
// still on its way has the connection closed under it.
const unreadBodyWait = 250 * time.Millisecond

// Errors of a body that arrives too late, for the 408 answer.
var (
	errBodyTimeout = errors.New("request body timeout")
	errBodyTooSlow = errors.New("request body too slow")
)

// bodyReader reads a request body under two limits: the whole body by end
// (the request's read timeout), and, once grace has passed, on average at
// least rate bytes a second since the body started. Each Read sets the
// connection's read deadline to when the next byte must have come; a Read
// cut by it returns errBodyTimeout or errBodyTooSlow.
type bodyReader struct {
	r     io.Reader
	rc    http.ResponseController
	set   time.Time // the read deadline set last
	start time.Time
	end   time.Time // zero: no read timeout
	grace time.Duration
	rate  int64 // bytes a second; 0: no floor
	n     int64 // bytes read so far
	eof   bool
}

// Read implements io.Reader.
func (b *bodyReader) Read(p []byte) (int, error) {
	if b.eof {
		// After EOF net/http watches the connection for the client going
		// away; a deadline set now would cut that watch, and with it the
		// request's context.
		return 0, io.EOF
	}
	deadline, cause := b.deadline()
	if !deadline.IsZero() && !deadline.Equal(b.set) {
		// A ResponseWriter without deadlines (a test recorder) reads
		// without limits. A deadline that has not moved (a small body:
		// the grace period's) is not set again: the Read that finds the
		// end of the body would set it twice.
		_ = b.rc.SetReadDeadline(deadline)
		b.set = deadline
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	switch {
	case err == io.EOF:
		b.eof = true
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		return n, cause
	}
	return n, err
}

// deadline is when the next byte must have come, and the error to report
// if it has not; zero when nothing limits it.
func (b *bodyReader) deadline() (time.Time, error) {
	d, cause := b.end, errBodyTimeout
	if b.rate > 0 {
		// The average since start stays at least rate while elapsed is
		// at most n/rate; the grace period covers the start.
		need := time.Duration(float64(b.n) / float64(b.rate) * float64(time.Second))
		floor := b.start.Add(max(b.grace, need))
		if d.IsZero() || floor.Before(d) {
			d, cause = floor, errBodyTooSlow
		}
	}
	return d, cause
}

// bodyDeadlineError refuses a body that came too late with HTTP 408 and
// closes the connection: what is left of the body cannot be told from a
// next request.
func (c *Core) bodyDeadlineError(err error) *Refusal {
	msg := "request body not received within " + c.cfg.ReadTimeout.String()
	if errors.Is(err, errBodyTooSlow) {
		msg = "request body arrived slower than " + strconv.FormatInt(c.cfg.MinBodyRate, 10) + " bytes/s"
	}
	return &Refusal{Status: http.StatusRequestTimeout, Message: msg, Close: true}
}

// bufPool holds the buffers the bindings encode answers into: one pool,
// so that a buffer one binding grew serves the others.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// Buffer is an empty buffer from the bindings' pool; PutBuffer gives it
// back once what was written into it is sent.
func Buffer() *[]byte { return bufPool.Get().(*[]byte) }

// PutBuffer gives b back to the pool.
func PutBuffer(b *[]byte) { bufPool.Put(b) }

// LeaveBody is called before answering a request whose body is not read:
// net/http discards what is left of it to keep the connection, and this
// bounds how long that may take.
func LeaveBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 {
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(unreadBodyWait))
}

// TooLarge refuses a body over the size cap with HTTP 413.
func (c *Core) TooLarge() *Refusal {
	return &Refusal{Status: http.StatusRequestEntityTooLarge,
		Message: "request body exceeds " + strconv.FormatInt(c.cfg.MaxBodyBytes, 10) + " bytes"}
}

// MaxBodyBytes is the cap on a request body (or a gRPC message).
func (c *Core) MaxBodyBytes() int64 { return c.cfg.MaxBodyBytes }

// Admit applies the size cap to the declared length of the call's body,
// then the rate limits and in-flight caps, before the body is read: an
// admitted call holds its caller's in-flight slot while its body arrives,
// so slow bodies run into the caller's cap. Every call takes a token, a
// malformed one too. The body is charged as declared before it is read,
// so that many bodies at once cannot all pass a caller's budget (ReadBody
// charges the rest). release frees the in-flight slot once the call is
// answered; it is never nil, and is to be called even on a refusal.
func (c *Core) Admit(cl *Call, declared int64) (release func(), ref *Refusal) {
	release = func() {}
	if declared > c.cfg.MaxBodyBytes {
		cl.rpcErr = a2a.ErrInvalidRequest
		return release, c.TooLarge()
	}
	refuse := func(d *Denial) *Refusal {
		cl.denial = d
		cl.rpcErr = deniedError(d)
		return deniedRefusal(d)
	}
	if c.cfg.Admit != nil {
		rel, d := c.cfg.Admit.Admit(cl.principal)
		if d != nil {
			return release, refuse(d)
		}
		release = rel
	}
	if c.cfg.Bytes != nil {
		if d := c.cfg.Bytes.TakeBytes(cl.principal, max(declared, 0)); d != nil {
			return release, refuse(d)
		}
	}
	return release, nil
}

// ReadBody reads r's body into buf, within the read timeout and rate
// floor and the size cap, and charges the caller's byte budget with what
// came beyond (or short of) what was declared.
func (c *Core) ReadBody(cl *Call, w http.ResponseWriter, r *http.Request, buf []byte) ([]byte, *Refusal) {
	if r.Body == nil || r.Body == http.NoBody {
		// No body (a GET, a POST with Content-Length 0): nothing to
		// read, and no deadline to set. net/http watches such a
		// connection for the client going away from the start; a read
		// deadline set now would end that watch when it passed, and
		// with it the context of this request (a stream cut at the
		// grace period) and of every later one on the connection.
		return buf[:0], nil
	}
	br := bodyReader{
		r: r.Body, rc: *http.NewResponseController(w), start: time.Now(),
		grace: c.cfg.BodyGrace, rate: c.cfg.MinBodyRate,
	}
	if c.cfg.ReadTimeout > 0 {
		br.end = br.start.Add(c.cfg.ReadTimeout)
	}
	body, err := readAll(buf, &br, c.cfg.MaxBodyBytes+1)
	if declared := max(r.ContentLength, 0); c.cfg.Bytes != nil && int64(len(body)) != declared {
		c.cfg.Bytes.ChargeBytes(cl.principal, int64(len(body))-declared)
	}
	if err != nil {
		cl.rpcErr = a2a.ErrInvalidRequest
		if errors.Is(err, errBodyTimeout) || errors.Is(err, errBodyTooSlow) {
			cl.bodyLate = true
			return body, c.bodyDeadlineError(err)
		}
		return body, &Refusal{Status: http.StatusBadRequest, Message: "could not read the request body"}
	}
	if int64(len(body)) > c.cfg.MaxBodyBytes {
		cl.rpcErr = a2a.ErrInvalidRequest
		return body, c.TooLarge()
	}
	return body, nil
}

// readAll reads r into b until EOF or limit bytes: io.ReadAll into a
// pooled buffer, through an io.LimitReader of its own (r by its type, so
// that neither reader is allocated).
func readAll(b []byte, r *bodyReader, limit int64) ([]byte, error) {
	for left := limit; ; {
		if left <= 0 {
			return b, nil
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		room := b[len(b):cap(b)]
		if int64(len(room)) > left {
			room = room[:left]
		}
		n, err := r.Read(room)
		left -= int64(n)
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// versionKey is a2a.VersionHeader as net/http keys headers
// ("A2a-Version"): Header.Get would make that string anew on every call.
var versionKey = http.CanonicalHeaderKey(a2a.VersionHeader)

// VersionAsked is the A2A version an HTTP request asks for: its
// A2A-Version header, else the query parameter of that name; "" when it
// names none. The query is parsed only when there is one.
func VersionAsked(r *http.Request) string {
	if v := r.Header[versionKey]; len(v) > 0 && v[0] != "" {
		return v[0]
	}
	if r.URL.RawQuery == "" {
		return ""
	}
	return r.URL.Query().Get(a2a.VersionHeader)
}

// IsJSON accepts application/json and any application/*+json type, with
// parameters such as charset.
func IsJSON(ct string) bool {
	if ct == "application/json" { // most requests: no parameters to parse
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}
