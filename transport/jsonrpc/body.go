package jsonrpc

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
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
	rc    *http.ResponseController
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
	if !deadline.IsZero() {
		// A ResponseWriter without deadlines (a test recorder) reads
		// without limits.
		_ = b.rc.SetReadDeadline(deadline)
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

// bodyDeadlineError answers a body that came too late with HTTP 408 and
// closes the connection: what is left of the body cannot be told from a
// next request.
func (s *Server) bodyDeadlineError(w http.ResponseWriter, err error) error {
	w.Header().Set("Connection", "close")
	msg := "request body not received within " + s.cfg.ReadTimeout.String()
	if errors.Is(err, errBodyTooSlow) {
		msg = "request body arrived slower than " + strconv.FormatInt(s.cfg.MinBodyRate, 10) + " bytes/s"
	}
	return echo.NewHTTPError(http.StatusRequestTimeout, msg)
}

// leaveBody is called before answering a request whose body is not read:
// net/http discards what is left of it to keep the connection, and this
// bounds how long that may take.
func leaveBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 {
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(unreadBodyWait))
}
