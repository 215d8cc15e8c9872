package connlimit_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/internal/connlimit"
	"github.com/a2ad/a2ad/internal/testkit"
)

// wantClosed checks that the Accept whose error done yields returns
// net.ErrClosed within 5 seconds of Close; doing says what it would be
// doing otherwise.
func wantClosed(tb testing.TB, done <-chan error, doing string) {
	tb.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			tb.Errorf("Accept after Close = %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		tb.Fatalf("Accept still %s after Close", doing)
	}
}

// events counts the hooks' calls.
type events struct {
	open, refused, pausedMax, pausedErr atomic.Int64
}

func (e *events) hook(cfg *connlimit.Config) {
	cfg.OnOpen = func(d int) { e.open.Add(int64(d)) }
	cfg.OnRefuse = func() { e.refused.Add(1) }
	cfg.OnPause = func(p connlimit.Pause) {
		if p == connlimit.PauseMax {
			e.pausedMax.Add(1)
		} else {
			e.pausedErr.Add(1)
		}
	}
}

// watched is cfg with its hooks counted in ev and its log kept in log.
func watched(cfg connlimit.Config) (_ connlimit.Config, ev *events, log *testkit.SyncBuffer) {
	ev, log = &events{}, &testkit.SyncBuffer{}
	cfg.Logger = zerolog.New(log)
	ev.hook(&cfg)
	return cfg, ev, log
}

// serve accepts on l until it is closed, handing each connection to the
// test; Accept's final error goes on the second channel.
func serve(tb testing.TB, l *connlimit.Listener) (<-chan net.Conn, <-chan error) {
	tb.Helper()
	conns := make(chan net.Conn, 1024)
	done := make(chan error, 1)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				done <- err
				close(done) // a second receive, by the cleanup, gets nil
				return
			}
			conns <- c
		}
	}()
	tb.Cleanup(func() {
		l.Close()
		<-done
		close(conns)
		for c := range conns {
			c.Close()
		}
	})
	return conns, done
}

func listen(tb testing.TB, cfg connlimit.Config) *connlimit.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return connlimit.New(ln, cfg)
}

// dialFrom connects to addr from the loopback address src (all of
// 127.0.0.0/8 is loopback on Linux); it skips the test where that is not
// possible.
func dialFrom(tb testing.TB, src, addr string) net.Conn {
	tb.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		if src != "127.0.0.1" && errors.Is(err, syscall.EADDRNOTAVAIL) {
			tb.Skipf("cannot dial from %s here: %v", src, err)
		}
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

func accepted(tb testing.TB, conns <-chan net.Conn, within time.Duration) net.Conn {
	tb.Helper()
	select {
	case c := <-conns:
		return c
	case <-time.After(within):
		tb.Fatalf("no connection accepted within %s", within)
		return nil
	}
}

func notAccepted(tb testing.TB, conns <-chan net.Conn, wait time.Duration) {
	tb.Helper()
	select {
	case c := <-conns:
		tb.Fatalf("connection from %s accepted, want none", c.RemoteAddr())
	case <-time.After(wait):
	}
}

// closedByPeer reports whether c reads EOF (or a reset) within wait.
func closedByPeer(c net.Conn, wait time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func TestPerAddressCap(t *testing.T) {
	cfg, ev, log := watched(connlimit.Config{PerAddr: 2, Name: "main"})
	l := listen(t, cfg)
	conns, _ := serve(t, l)
	addr := l.Addr().String()

	a1 := dialFrom(t, "127.0.0.2", addr)
	accepted(t, conns, 5*time.Second)
	dialFrom(t, "127.0.0.2", addr)
	s2 := accepted(t, conns, 5*time.Second)
	// The third from the same address is closed at once, never handed on.
	a3 := dialFrom(t, "127.0.0.2", addr)
	if !closedByPeer(a3, 5*time.Second) {
		t.Fatal("a third connection from 127.0.0.2 stayed open past --max-conns-per-ip 2")
	}
	notAccepted(t, conns, 50*time.Millisecond)
	if closedByPeer(a1, 50*time.Millisecond) {
		t.Error("an admitted connection was closed")
	}
	// Another address has its own count.
	dialFrom(t, "127.0.0.3", addr)
	accepted(t, conns, 5*time.Second)
	if got := l.Open(); got != 3 {
		t.Errorf("Open() = %d, want 3", got)
	}
	// Closing one (twice: http.Server may) frees one place, once.
	s2.Close()
	s2.Close()
	dialFrom(t, "127.0.0.2", addr)
	accepted(t, conns, 5*time.Second)
	a5 := dialFrom(t, "127.0.0.2", addr)
	if !closedByPeer(a5, 5*time.Second) {
		t.Error("a double Close freed two places")
	}
	if got := l.Open(); got != 3 {
		t.Errorf("Open() = %d, want 3", got)
	}
	// The listener closes a refused connection before it tells the hook
	// and logs: the client may see the close first.
	for deadline := time.Now().Add(5 * time.Second); ev.refused.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(log.String(), "connection refused") && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if ev.refused.Load() != 2 || ev.open.Load() != 3 || ev.pausedMax.Load() != 0 {
		t.Errorf("hooks: refused %d open %d paused %d, want 2, 3, 0", ev.refused.Load(), ev.open.Load(), ev.pausedMax.Load())
	}
	// One log line for both refusals (rate-limited), naming the address.
	if n := strings.Count(log.String(), "connection refused: too many open from one address"); n != 1 {
		t.Errorf("%d refusal log lines, want 1:\n%s", n, log)
	}
	if !strings.Contains(log.String(), `"remote_ip":"127.0.0.2"`) || !strings.Contains(log.String(), `"max_conns_per_ip":2`) ||
		!strings.Contains(log.String(), `"listener":"main"`) {
		t.Errorf("refusal log line lacks the address, the cap or the listener:\n%s", log)
	}
}

func TestMaxWaitsForAClose(t *testing.T) {
	cfg, ev, log := watched(connlimit.Config{Max: 2, Name: "main"})
	l := listen(t, cfg)
	conns, done := serve(t, l)
	addr := l.Addr().String()

	dialFrom(t, "127.0.0.1", addr)
	s1 := accepted(t, conns, 5*time.Second)
	dialFrom(t, "127.0.0.1", addr)
	accepted(t, conns, 5*time.Second)
	// The third waits in the backlog: neither accepted nor closed.
	c3 := dialFrom(t, "127.0.0.1", addr)
	notAccepted(t, conns, 200*time.Millisecond)
	if closedByPeer(c3, 10*time.Millisecond) {
		t.Fatal("a connection past the cap was closed; it should wait")
	}
	if ev.pausedMax.Load() != 1 {
		t.Errorf("%d pauses at the cap, want 1", ev.pausedMax.Load())
	}
	if !strings.Contains(log.String(), `"max_conns":2`) || !strings.Contains(log.String(), "connection cap reached: not accepting until a connection closes") {
		t.Errorf("no log line of the cap:\n%s", log)
	}
	select {
	case err := <-done:
		t.Fatalf("Accept failed at the cap: %v", err)
	default:
	}
	// A close lets it in.
	s1.Close()
	s3 := accepted(t, conns, 5*time.Second)
	if _, err := c3.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	_ = s3.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(s3, buf); err != nil || buf[0] != 'x' {
		t.Fatalf("the waiting connection was not the one accepted: %q, %v", buf, err)
	}
	// Close ends an Accept waiting at the cap.
	dialFrom(t, "127.0.0.1", addr)
	time.Sleep(50 * time.Millisecond)
	l.Close()
	wantClosed(t, done, "waiting at the cap")
}

// fakeListener fails Accept with err until its budget of failures is
// spent, then hands out conns; it records when each Accept was called.
type fakeListener struct {
	mu       sync.Mutex
	err      error
	failures int // -1: fail forever
	calls    []time.Time
	conns    chan net.Conn
	closed   chan struct{}
	once     sync.Once
}

func newFake(err error, failures int) *fakeListener {
	return &fakeListener{err: err, failures: failures, conns: make(chan net.Conn, 16), closed: make(chan struct{})}
}

func (f *fakeListener) Accept() (net.Conn, error) {
	f.mu.Lock()
	f.calls = append(f.calls, time.Now())
	fail := f.failures != 0
	if f.failures > 0 {
		f.failures--
	}
	f.mu.Unlock()
	select {
	case <-f.closed:
		return nil, net.ErrClosed
	default:
	}
	if fail {
		return nil, f.err
	}
	select {
	case c := <-f.conns:
		return c, nil
	case <-f.closed:
		return nil, net.ErrClosed
	}
}

func (f *fakeListener) Close() error {
	f.once.Do(func() { close(f.closed) })
	return nil
}

func (f *fakeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

func (f *fakeListener) Calls() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.calls...)
}

// pipeConn is one end of a net.Pipe with the remote address given.
type pipeConn struct {
	net.Conn
	remote net.Addr
	closed atomic.Int32
}

func (c *pipeConn) RemoteAddr() net.Addr { return c.remote }
func (c *pipeConn) Close() error {
	c.closed.Add(1)
	return c.Conn.Close()
}

func newPipeConn(tb testing.TB, remote string) *pipeConn {
	tb.Helper()
	a, b := net.Pipe()
	tb.Cleanup(func() { a.Close(); b.Close() })
	return &pipeConn{Conn: a, remote: net.TCPAddrFromAddrPort(netip.MustParseAddrPort(remote))}
}

// TestAcceptErrorsBackOff: out of file descriptors, Accept waits with a
// growing backoff instead of spinning or failing the server's loop, and
// serves the next connection once the errors pass.
func TestAcceptErrorsBackOff(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS} {
		t.Run(errno.Error(), func(t *testing.T) {
			fake := newFake(&net.OpError{Op: "accept", Net: "tcp", Err: errno}, 5)
			want := newPipeConn(t, "192.0.2.1:1000")
			fake.conns <- want
			cfg, ev, log := watched(connlimit.Config{Max: 4, PerAddr: 4, Name: "main"})
			l := connlimit.New(fake, cfg)
			t.Cleanup(func() { l.Close() })
			c, err := l.Accept()
			if err != nil {
				t.Fatalf("Accept = %v, want the connection after the errors", err)
			}
			if c.RemoteAddr().String() != "192.0.2.1:1000" {
				t.Errorf("Accept returned a connection from %s", c.RemoteAddr())
			}
			calls := fake.Calls()
			if len(calls) != 6 {
				t.Fatalf("%d calls to the inner Accept, want 6 (5 failures, then the connection)", len(calls))
			}
			// 5, 10, 20, 40, 80 ms between the calls, at least.
			for i := 1; i < len(calls); i++ {
				if gap, min := calls[i].Sub(calls[i-1]), (5*time.Millisecond)<<(i-1); gap < min {
					t.Errorf("gap %d after %v: %v, want at least %v", i, errno, gap, min)
				}
			}
			if ev.pausedErr.Load() != 5 {
				t.Errorf("%d pauses after errors, want 5", ev.pausedErr.Load())
			}
			// One log line (rate-limited), with the error.
			if n := strings.Count(log.String(), "accept failed; retrying"); n != 1 || !strings.Contains(log.String(), errno.Error()) {
				t.Errorf("%d accept-error log lines, want 1 naming %q:\n%s", n, errno.Error(), log)
			}
			// Every failure gave its slot back: all 4 are free but the one taken.
			if got := l.Open(); got != 1 {
				t.Errorf("Open() = %d, want 1", got)
			}
		})
	}
}

func TestAcceptErrorsDoNotSpin(t *testing.T) {
	fake := newFake(&net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}, -1)
	l := connlimit.New(fake, connlimit.Config{Logger: zerolog.Nop()})
	done := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		done <- err
	}()
	time.Sleep(400 * time.Millisecond)
	l.Close()
	wantClosed(t, done, "backing off")
	// 5+10+20+40+80+160 = 315 ms: 7 calls in 400 ms; a spinning loop makes
	// thousands.
	if n := len(fake.Calls()); n < 2 || n > 8 {
		t.Errorf("%d calls to the inner Accept in 400 ms of EMFILE, want 2 to 8", n)
	}
}

func TestAcceptErrorsThatDoNotPassAreReturned(t *testing.T) {
	boom := errors.New("boom")
	fake := newFake(boom, 1)
	l := connlimit.New(fake, connlimit.Config{Max: 1})
	defer l.Close()
	if _, err := l.Accept(); !errors.Is(err, boom) {
		t.Fatalf("Accept = %v, want the inner error", err)
	}
	// Its slot was given back.
	fake.conns <- newPipeConn(t, "192.0.2.1:1")
	if _, err := l.Accept(); err != nil {
		t.Fatalf("Accept after a failure = %v", err)
	}
}

// TestAddressKeys: IPv6 clients count per /64; an IPv4-mapped address
// counts as its IPv4 address.
func TestAddressKeys(t *testing.T) {
	fake := newFake(nil, 0)
	cfg, ev, _ := watched(connlimit.Config{PerAddr: 1})
	l := connlimit.New(fake, cfg)
	defer l.Close()
	for _, tc := range []struct {
		remote string
		admit  bool
	}{
		{"[2001:db8:1:2::1]:1000", true},
		{"[2001:db8:1:2:ffff::9]:1001", false}, // the same /64
		{"[2001:db8:1:3::1]:1000", true},       // the next /64
		{"192.0.2.7:1000", true},
		{"[::ffff:192.0.2.7]:1001", false}, // the same IPv4 address
		{"192.0.2.8:1000", true},
	} {
		c := newPipeConn(t, tc.remote)
		fake.conns <- c
		want := newPipeConn(t, "198.51.100.1:1") // a marker: admitted unless c is
		fake.conns <- want
		got, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if tc.admit {
			if got.RemoteAddr().String() != c.RemoteAddr().String() {
				t.Errorf("%s refused, want admitted", tc.remote)
				continue
			}
			// Take the marker too, then close it: its address stays free.
			m, _ := l.Accept()
			m.Close()
		} else {
			if got.RemoteAddr().String() != want.RemoteAddr().String() || c.closed.Load() != 1 {
				t.Errorf("%s admitted, want closed at once", tc.remote)
			}
			got.Close()
		}
	}
	if ev.refused.Load() != 2 {
		t.Errorf("%d refused, want 2", ev.refused.Load())
	}
}

// ExampleNew caps a listener at 4096 connections, 256 from any one
// address.
func ExampleNew() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	l := connlimit.New(ln, connlimit.Config{Max: 4096, PerAddr: 256, Name: "main", Logger: zerolog.Nop()})
	defer l.Close()
	fmt.Println(l.Open())
	// Output: 0
}
