package connlimit

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Pause says why a Listener stopped accepting for a while.
type Pause int

// The pauses.
const (
	// PauseMax: Max connections are open; accepting resumes when one
	// closes.
	PauseMax Pause = iota
	// PauseError: accept failed with an error that passes (EMFILE,
	// ENFILE, ENOBUFS, ENOMEM); accepting resumes after a backoff.
	PauseError
)

// Config configures a Listener. The zero value caps nothing.
type Config struct {
	// Max caps the connections open at once; 0 means no cap.
	Max int
	// PerAddr caps the connections open at once from one client address
	// (an IPv6 client's whole /64); 0 means no cap.
	PerAddr int
	// Name names the listener in log lines ("main", "admin").
	Name   string
	Logger zerolog.Logger

	// OnOpen, when set, is told of each connection opened (+1) and
	// closed (-1). OnRefuse, when set, is told of each connection closed
	// at once because its address had PerAddr open. OnPause, when set,
	// is told each time accepting pauses. They run on the accepting or
	// closing goroutine and must be quick.
	OnOpen   func(delta int)
	OnRefuse func()
	OnPause  func(Pause)
}

// LogEvery is the least time between two log lines of one kind.
const LogEvery = 10 * time.Second

// The backoff after an accept error that passes, as net/http's own.
const (
	minBackoff = 5 * time.Millisecond
	maxBackoff = time.Second
)

// Listener wraps a net.Listener with the caps of a Config. It is safe for
// concurrent use.
type Listener struct {
	net.Listener
	cfg   Config
	slots chan struct{} // nil: no overall cap
	done  chan struct{} // closed by Close
	once  sync.Once

	mu     sync.Mutex
	open   int
	byAddr map[netip.Addr]int
	logs   [3]logState // refused, paused at Max, accept errors
}

type logState struct {
	last       time.Time
	suppressed int
}

const (
	logRefused = iota
	logMax
	logError
)

// New wraps ln. Close the Listener, not ln.
func New(ln net.Listener, cfg Config) *Listener {
	l := &Listener{
		Listener: ln,
		cfg:      cfg,
		done:     make(chan struct{}),
		byAddr:   make(map[netip.Addr]int),
	}
	if cfg.Max > 0 {
		l.slots = make(chan struct{}, cfg.Max)
	}
	return l
}

// Open returns the number of connections open now.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Accept waits for a slot under Max, then for a connection whose address
// has fewer than PerAddr open. It returns net.ErrClosed (wrapped) once
// the Listener is closed, and any accept error that does not pass.
func (l *Listener) Accept() (net.Conn, error) {
	backoff := time.Duration(0)
	for {
		if err := l.takeSlot(); err != nil {
			return nil, err
		}
		c, err := l.Listener.Accept()
		if err != nil {
			l.giveSlot()
			if !passes(err) {
				return nil, err
			}
			backoff = min(max(2*backoff, minBackoff), maxBackoff)
			l.pause(PauseError, logError, func(e *zerolog.Event) {
				e.Err(err).Dur("retry_in", backoff).Msg("accept failed; retrying")
			})
			select {
			case <-l.done:
				return nil, net.ErrClosed
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		key, keyed := addrKey(c.RemoteAddr())
		if !l.admit(key, keyed) {
			_ = c.Close()
			l.giveSlot()
			if l.cfg.OnRefuse != nil {
				l.cfg.OnRefuse()
			}
			l.logf(logRefused, func(e *zerolog.Event) {
				e.Str("remote_ip", key.String()).Int("max_conns_per_ip", l.cfg.PerAddr).
					Msg("connection refused: too many open from one address")
			})
			continue
		}
		if l.cfg.OnOpen != nil {
			l.cfg.OnOpen(1)
		}
		return &conn{Conn: c, l: l, key: key, keyed: keyed}, nil
	}
}

// Close stops accepting; a blocked Accept returns net.ErrClosed.
// Connections already accepted stay open.
func (l *Listener) Close() error {
	err := net.ErrClosed
	l.once.Do(func() {
		close(l.done)
		err = l.Listener.Close()
	})
	return err
}

// takeSlot takes one of Max slots, waiting for one if none is free.
func (l *Listener) takeSlot() error {
	select {
	case <-l.done:
		return net.ErrClosed
	default:
	}
	if l.slots == nil {
		return nil
	}
	select {
	case l.slots <- struct{}{}:
		return nil
	default:
	}
	l.pause(PauseMax, logMax, func(e *zerolog.Event) {
		e.Int("max_conns", l.cfg.Max).Msg("connection cap reached: not accepting until a connection closes")
	})
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-l.done:
		return net.ErrClosed
	}
}

func (l *Listener) giveSlot() {
	if l.slots != nil {
		<-l.slots
	}
}

// admit counts a connection from key, unless key has PerAddr open.
func (l *Listener) admit(key netip.Addr, keyed bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if keyed && l.cfg.PerAddr > 0 {
		if l.byAddr[key] >= l.cfg.PerAddr {
			return false
		}
		l.byAddr[key]++
	}
	l.open++
	return true
}

// release gives back what a closed connection held.
func (l *Listener) release(key netip.Addr, keyed bool) {
	l.mu.Lock()
	l.open--
	if keyed && l.cfg.PerAddr > 0 {
		if n := l.byAddr[key]; n <= 1 {
			delete(l.byAddr, key)
		} else {
			l.byAddr[key] = n - 1
		}
	}
	l.mu.Unlock()
	l.giveSlot()
	if l.cfg.OnOpen != nil {
		l.cfg.OnOpen(-1)
	}
}

func (l *Listener) pause(p Pause, kind int, msg func(*zerolog.Event)) {
	if l.cfg.OnPause != nil {
		l.cfg.OnPause(p)
	}
	l.logf(kind, msg)
}

// logf writes one warning of kind, unless one was written less than
// LogEvery ago; it says how many it left out since the last.
func (l *Listener) logf(kind int, msg func(*zerolog.Event)) {
	l.mu.Lock()
	st := &l.logs[kind]
	now := time.Now()
	if !st.last.IsZero() && now.Sub(st.last) < LogEvery {
		st.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := st.suppressed
	st.last, st.suppressed = now, 0
	l.mu.Unlock()
	e := l.cfg.Logger.Warn().Str("listener", l.cfg.Name)
	if suppressed > 0 {
		e = e.Int("suppressed", suppressed)
	}
	msg(e)
}

// passes reports whether an accept error is one to wait out: the process
// or the system is out of descriptors or memory for now, or the net
// package calls it temporary.
func passes(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// addrKey is the address a connection counts against: its IP, or the /64
// of an IPv6 one. keyed is false for an address that is not IP.
func addrKey(a net.Addr) (key netip.Addr, keyed bool) {
	var ip netip.Addr
	switch a := a.(type) {
	case *net.TCPAddr:
		ip, _ = netip.AddrFromSlice(a.IP)
	default:
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			return netip.Addr{}, false
		}
		ip = ap.Addr()
	}
	if !ip.IsValid() {
		return netip.Addr{}, false
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		ip = p.Addr()
	}
	return ip, true
}

// conn gives back its slots when closed, once.
type conn struct {
	net.Conn
	l     *Listener
	key   netip.Addr
	keyed bool
	once  sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.key, c.keyed) })
	return err
}

// CloseWrite half-closes the connection when the underlying one can, as
// net/http does before closing after an error answer.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
