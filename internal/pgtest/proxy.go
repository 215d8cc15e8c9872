package pgtest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a TCP proxy on a loopback port in front of the test server,
// for tests of a server that goes away while a2ad runs: Cut closes its
// listener and every connection through it, Restore listens again on
// the same port. The shared server itself is never stopped.
type Proxy struct {
	tb       testing.TB
	upstream string // host:port of the test server
	addr     string // the proxy's own host:port

	mu    sync.Mutex
	ln    net.Listener // nil while cut
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy starts a proxy in front of the server of dsn and returns it;
// it is closed when tb ends. DSN gives dsn pointed at the proxy.
func NewProxy(tb testing.TB, dsn string) *Proxy {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		tb.Fatalf("pgtest: the test server's URL does not parse")
	}
	p := &Proxy{tb: tb, upstream: u.Host, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	tb.Cleanup(func() { p.Cut(); p.wg.Wait() })
	return p
}

// DSN is dsn with its host and port replaced by the proxy's.
func (p *Proxy) DSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		p.tb.Fatalf("pgtest: URL does not parse")
	}
	u.Host = p.addr
	return u.String()
}

// Cut closes the listener and every connection through the proxy: the
// server is gone, as far as its clients can tell, and a new connection
// is refused.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

// Restore listens again on the proxy's port, after Cut.
func (p *Proxy) Restore() {
	p.tb.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.tb.Fatalf("pgtest: listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by Cut
			}
			p.pipe(c)
		}
	}()
}

// pipe joins c to a new connection to the server, both ways, until
// either side ends or Cut closes them.
func (p *Proxy) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // cut meanwhile
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := func() {
		c.Close()
		up.Close()
		p.mu.Lock()
		delete(p.conns, c)
		delete(p.conns, up)
		p.mu.Unlock()
	}
	var once sync.Once
	for _, pair := range [][2]net.Conn{{up, c}, {c, up}} {
		p.wg.Add(1)
		go func(dst, src net.Conn) {
			defer p.wg.Done()
			_, _ = io.Copy(dst, src) // either way it ends, the pair ends
			once.Do(done)
		}(pair[0], pair[1])
	}
}
