package jsonrpc_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/jsonrpc"
)

// admitFn is a transport.Admitter from a func.
type admitFn func(p transport.Principal) (func(), *transport.Denial)

func (f admitFn) Admit(p transport.Principal) (func(), *transport.Denial) { return f(p) }

var _ transport.Admitter = admitFn(nil)

// rawConn is a client connection that writes requests byte by byte as
// the test says, and reads answers.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dialRaw(tb testing.TB, ts *httptest.Server) *rawConn {
	tb.Helper()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// head writes the request line and headers of a POST /a2a with the
// given Content-Length (-1: chunked).
func (c *rawConn) head(tb testing.TB, contentLength int, extra ...string) {
	tb.Helper()
	h := "POST /a2a HTTP/1.1\r\nHost: a2ad\r\nContent-Type: application/json\r\n"
	if contentLength < 0 {
		h += "Transfer-Encoding: chunked\r\n"
	} else {
		h += "Content-Length: " + strconv.Itoa(contentLength) + "\r\n"
	}
	for _, e := range extra {
		h += e + "\r\n"
	}
	c.write(tb, h+"\r\n")
}

func (c *rawConn) write(tb testing.TB, s string) {
	tb.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		tb.Fatalf("write: %v", err)
	}
}

// answer reads one response within wait; it returns its status, "close"
// if it says the server closes the connection after it, and its body.
func (c *rawConn) answer(tb testing.TB, wait time.Duration) (int, string, string) {
	tb.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		tb.Fatalf("no answer within %s: %v", wait, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("read answer: %v", err)
	}
	conn := ""
	if resp.Close {
		conn = "close"
	}
	return resp.StatusCode, conn, strings.TrimSpace(string(b))
}

// want408 reads the answer to a body cut off: no sooner than atLeast
// after start, a 408 that says want, and the connection closed.
func (c *rawConn) want408(t *testing.T, start time.Time, atLeast time.Duration, want string) {
	t.Helper()
	status, conn, body := c.answer(t, 5*time.Second)
	if took := time.Since(start); took < atLeast {
		t.Errorf("cut after %v, before %v", took, atLeast)
	}
	if status != http.StatusRequestTimeout || conn != "close" || body != want {
		t.Errorf("HTTP %d Connection %q %s, want 408, close and %s", status, conn, body, want)
	}
	if !c.closedWithin(5 * time.Second) {
		t.Error("connection left open after a 408")
	}
}

// closedWithin reports whether the server closes the connection within
// wait.
func (c *rawConn) closedWithin(wait time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	_, err := c.r.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestSlowBodyIs408: once the grace period is over, a body arriving
// slower than MinBodyRate on average is cut off with HTTP 408, and the
// connection closed; the service never sees it.
func TestSlowBodyIs408(t *testing.T) {
	fake := okService()
	ts := MustServe(t, fake, func(c *jsonrpc.Config) {
		c.MinBodyRate = 1024
		c.BodyGrace = 300 * time.Millisecond
		c.ReadTimeout = 10 * time.Second
	})
	for _, tc := range []struct {
		name    string
		length  int
		trickle string // sent every 100 ms
	}{
		{"content-length", len(getT1), "{"},
		{"chunked", -1, "1\r\n \r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, ts)
			start := time.Now()
			c.head(t, tc.length)
			stop := make(chan struct{})
			go func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
						_, _ = io.WriteString(c, tc.trickle)
					}
				}
			}()
			defer close(stop)
			// Not within the grace period.
			c.want408(t, start, 300*time.Millisecond, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"request body arrived slower than 1024 bytes/s"}}`)
		})
	}
	if n := fake.Calls(); n != 0 {
		t.Errorf("task service called %d times for bodies cut off", n)
	}
}

// TestLateBodyIs408: a body not in within ReadTimeout is cut off, even
// above the rate floor.
func TestLateBodyIs408(t *testing.T) {
	fake := okService()
	ts := MustServe(t, fake, func(c *jsonrpc.Config) {
		c.ReadTimeout = 300 * time.Millisecond
	})
	c := dialRaw(t, ts)
	start := time.Now()
	c.head(t, len(getT1))
	c.write(t, getT1[:10])
	// Not before the read timeout.
	c.want408(t, start, 300*time.Millisecond, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"request body not received within 300ms"}}`)
	if n := fake.Calls(); n != 0 {
		t.Errorf("task service called %d times for a late body", n)
	}
}

// TestBodyAboveTheFloorIsServed: a body that takes longer than the grace
// period but arrives faster than the floor on average is served, and
// the connection kept.
func TestBodyAboveTheFloorIsServed(t *testing.T) {
	ts := MustServe(t, okService(), func(c *jsonrpc.Config) {
		c.MinBodyRate = 1024
		c.BodyGrace = 100 * time.Millisecond
		c.ReadTimeout = 10 * time.Second
	})
	body := padTo(t, getT1, 1000) // 1000 bytes in 10 pieces, 50 ms apart: ~2 KB/s
	c := dialRaw(t, ts)
	c.head(t, len(body))
	for i := 0; i < len(body); i += 100 {
		c.write(t, body[i:i+100])
		time.Sleep(50 * time.Millisecond)
	}
	status, conn, got := c.answer(t, 5*time.Second)
	want := `{"jsonrpc":"2.0","id":1,"result":` + taskJSON(t, task("t1")) + `}`
	if status != http.StatusOK || conn == "close" || got != want {
		t.Fatalf("body at 2 KB/s: HTTP %d Connection %q %s", status, conn, got)
	}
	// The connection serves the next request: no deadline was left on it.
	time.Sleep(200 * time.Millisecond)
	c.head(t, len(getT1))
	c.write(t, getT1)
	if status, _, got := c.answer(t, 5*time.Second); status != http.StatusOK || got != want {
		t.Errorf("second request on the connection: HTTP %d %s", status, got)
	}
}

// TestAdmissionBeforeTheBody: a request is admitted (or refused) as soon
// as its headers are in. An admitted one holds its slot while its body
// arrives; a refused one is answered without its body being read.
func TestAdmissionBeforeTheBody(t *testing.T) {
	var admitted, active atomic.Int64
	refuse := atomic.Bool{}
	ts := MustServe(t, okService(), func(c *jsonrpc.Config) {
		c.Admit = admitFn(func(transport.Principal) (func(), *transport.Denial) {
			if refuse.Load() {
				return nil, &transport.Denial{Scope: "caller", RetryAfter: time.Second}
			}
			admitted.Add(1)
			active.Add(1)
			return func() { active.Add(-1) }, nil
		})
		c.ReadTimeout = 10 * time.Second
	})

	// Admitted with no body byte sent: the slot is held from then on.
	c := dialRaw(t, ts)
	c.head(t, len(getT1))
	deadline := time.Now().Add(5 * time.Second)
	for admitted.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if admitted.Load() != 1 || active.Load() != 1 {
		t.Fatalf("after the headers: %d admitted, %d active; want 1, 1", admitted.Load(), active.Load())
	}
	c.write(t, getT1)
	if status, _, _ := c.answer(t, 5*time.Second); status != http.StatusOK {
		t.Fatalf("admitted request: HTTP %d", status)
	}
	if active.Load() != 0 {
		t.Errorf("%d slots held after the answer, want 0", active.Load())
	}

	// Refused: answered at once, with id null (the body was not read) in
	// the version the header asks for.
	refuse.Store(true)
	for _, tc := range []struct {
		header, want string
	}{
		{"A2A-Version: 0.3", `{"jsonrpc":"2.0","id":null,"error":{"code":-32053,"message":"Too many requests in flight for this caller; retry after data.retryAfterMs milliseconds","data":{"retryAfterMs":1000,"scope":"caller"}}}`},
		{"A2A-Version: 1.0", `{"jsonrpc":"2.0","id":null,"error":{"code":-32053,"message":"Too many requests in flight for this caller; retry after data.retryAfterMs milliseconds","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TOO_MANY_IN_FLIGHT","domain":"github.com/a2ad/a2ad","metadata":{"retryAfterMs":"1000","scope":"caller"}}]}}`},
	} {
		c := dialRaw(t, ts)
		start := time.Now()
		c.head(t, len(getT1), tc.header)
		status, _, body := c.answer(t, 5*time.Second)
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: refused after %v, want at once", tc.header, took)
		}
		if status != http.StatusTooManyRequests || body != tc.want {
			t.Errorf("%s: refused request: HTTP %d %s\nwant 429 %s", tc.header, status, body, tc.want)
		}
		// The body never comes: the connection is closed soon after.
		if !c.closedWithin(3 * time.Second) {
			t.Errorf("%s: connection of a refused request with its body still unsent left open", tc.header)
		}
	}
	if admitted.Load() != 1 {
		t.Errorf("%d admitted, want 1", admitted.Load())
	}

	// A refused request whose body is all sent keeps its connection.
	c = dialRaw(t, ts)
	c.head(t, len(getT1))
	c.write(t, getT1)
	if status, conn, _ := c.answer(t, 5*time.Second); status != http.StatusTooManyRequests || conn == "close" {
		t.Fatalf("refused request with its body sent: HTTP %d Connection %q", status, conn)
	}
	refuse.Store(false)
	c.head(t, len(getT1))
	c.write(t, getT1)
	if status, _, _ := c.answer(t, 5*time.Second); status != http.StatusOK {
		t.Errorf("next request on the connection: HTTP %d", status)
	}
}

// TestUnreadBodyOfAnUnauthenticatedRequest: a request refused at
// authentication with its body still to come does not hold the
// connection until the read timeout.
func TestUnreadBodyOfAnUnauthenticatedRequest(t *testing.T) {
	ts := MustServe(t, okService(), func(c *jsonrpc.Config) {
		c.Auth = authFn(func(*http.Request, string) (transport.Principal, transport.AuthResult) {
			return transport.Principal{}, transport.NoCredentials
		})
		c.ReadTimeout = time.Minute
	})
	c := dialRaw(t, ts)
	c.head(t, 100)
	c.write(t, "{")
	if status, _, _ := c.answer(t, 5*time.Second); status != http.StatusUnauthorized {
		t.Fatalf("HTTP %d, want 401", status)
	}
	if !c.closedWithin(3 * time.Second) {
		t.Error("connection of an unauthenticated request with its body still unsent left open")
	}
}

// authFn is a transport.Authenticator from a func.
type authFn func(r *http.Request, clientAddr string) (transport.Principal, transport.AuthResult)

func (f authFn) Authenticate(r *http.Request, clientAddr string) (transport.Principal, transport.AuthResult) {
	return f(r, clientAddr)
}
