package grpc

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/peer"
)

// guardedCreds wraps the listener's credentials (insecure ones for
// plaintext): each connection, once through its handshake, is a *conn,
// which reads the client's HTTP/2 frames as they pass (after TLS) to
// count its reset streams, and which a stream's guard can close.
type guardedCreds struct {
	credentials.TransportCredentials
	resets Limits
	srv    *Server
}

func newGuardedCreds(c credentials.TransportCredentials, s *Server) credentials.TransportCredentials {
	if c == nil {
		c = insecure.NewCredentials()
	}
	return guardedCreds{TransportCredentials: c, resets: s.limits, srv: s}
}

func (g guardedCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	if g.srv.penalties.holds(hostOf(raw.RemoteAddr()), time.Now()) {
		return nil, nil, errPenalty
	}
	c, info, err := g.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		return nil, nil, err
	}
	gc := &conn{Conn: c, raw: raw, srv: g.srv,
		bucket: bucket{rate: float64(g.resets.ResetRate), burst: float64(g.resets.ResetBurst), tokens: float64(g.resets.ResetBurst), last: time.Now()},
		frames: frameReader{preface: len(clientPreface)}}
	return gc, connInfo{AuthInfo: info, conn: gc}, nil
}

func (g guardedCreds) Clone() credentials.TransportCredentials {
	g.TransportCredentials = g.TransportCredentials.Clone()
	return g
}

// connInfo is the AuthInfo of a guarded connection: the credentials'
// own (TLSInfo over TLS), and the connection.
type connInfo struct {
	credentials.AuthInfo
	conn *conn
}

// connOf is the guarded connection of the call of ctx; nil for none.
func connOf(ctx context.Context) *conn {
	if p, ok := peer.FromContext(ctx); ok {
		if ci, ok := p.AuthInfo.(connInfo); ok {
			return ci.conn
		}
	}
	return nil
}

// authInfo is the credentials' own AuthInfo of p.
func authInfo(p *peer.Peer) credentials.AuthInfo {
	if ci, ok := p.AuthInfo.(connInfo); ok {
		return ci.AuthInfo
	}
	return p.AuthInfo
}

// errResetFlood is the read error of a connection closed for resetting
// streams faster than its budget; errPenalty the handshake's error of a
// connection from an address that did so within Limits.ResetPenalty.
var (
	errResetFlood = errors.New("grpc: the client reset streams faster than allowed")
	errPenalty    = errors.New("grpc: the client's address reset streams faster than allowed a moment ago")
)

// conn is a connection of the listener after its handshake.
type conn struct {
	net.Conn          // what grpc-go reads and writes (TLS decrypted)
	raw      net.Conn // the TCP connection
	srv      *Server
	frames   frameReader // only grpc-go's reading goroutine reads
	bucket   bucket
	once     sync.Once
	written  atomic.Int64 // bytes grpc-go has written (see guard.send)
}

// Write counts what grpc-go writes.
func (c *conn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

// Read passes the client's bytes to grpc-go, counting the RST_STREAM
// frames among them: past the budget (Limits.ResetRate, ResetBurst) the
// connection is closed.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if resets := c.frames.feed(p[:n], rstStreamFrame); resets > 0 && !c.bucket.take(resets, time.Now()) {
		c.srv.penalties.add(hostOf(c.raw.RemoteAddr()), time.Now().Add(c.srv.limits.ResetPenalty))
		c.close("reset_flood")
		return 0, errResetFlood
	}
	return n, err
}

// close closes the connection under the grpc-go transport (which then
// ends its calls), once, saying why in the log.
func (c *conn) close(why string) {
	c.once.Do(func() {
		log := c.srv.core.Logger()
		log.Warn().Str("client_addr", c.raw.RemoteAddr().String()).Str("reason", why).Msg("gRPC connection closed")
		_ = c.raw.Close()
	})
}

// The HTTP/2 client preface and the frame type of RST_STREAM.
const (
	clientPreface  = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	rstStreamFrame = 0x3
)

// frameReader follows the frames of an HTTP/2 client's byte stream
// (after the preface) without buffering them: it only reads each frame's
// 9-byte header and skips its payload.
type frameReader struct {
	preface int // preface bytes still to skip
	hdr     [9]byte
	have    int // bytes of hdr read
	skip    int // payload bytes still to skip
}

// feed reads b and returns how many frame headers of type typ it ended.
func (f *frameReader) feed(b []byte, typ byte) int {
	n := 0
	for len(b) > 0 {
		switch {
		case f.preface > 0:
			k := min(f.preface, len(b))
			f.preface -= k
			b = b[k:]
		case f.skip > 0:
			k := min(f.skip, len(b))
			f.skip -= k
			b = b[k:]
		default:
			k := copy(f.hdr[f.have:], b)
			f.have += k
			b = b[k:]
			if f.have == len(f.hdr) {
				f.have = 0
				f.skip = int(f.hdr[0])<<16 | int(f.hdr[1])<<8 | int(f.hdr[2])
				if f.hdr[3] == typ {
					n++
				}
			}
		}
	}
	return n
}

// bucket is a token bucket: rate tokens a second, at most burst.
type bucket struct {
	rate, burst, tokens float64
	last                time.Time
}

// take takes n tokens at now, reporting whether there were.
func (b *bucket) take(n int, now time.Time) bool {
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	b.tokens -= float64(n)
	return b.tokens >= 0
}

// penalties are the addresses whose new connections are refused at the
// handshake until a time: those that flooded a connection with resets.
// Without them the flood would go on over new connections, each allowed
// its own budget.
type penalties struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// add refuses host's connections until t. Expired entries go then (adds
// are rare: one per abusive connection).
func (p *penalties) add(host string, t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for h, u := range p.until {
		if u.Before(now) {
			delete(p.until, h)
		}
	}
	if p.until == nil {
		p.until = map[string]time.Time{}
	}
	p.until[host] = t
}

// holds reports whether host's connections are refused at now.
func (p *penalties) holds(host string, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	u, ok := p.until[host]
	return ok && now.Before(u)
}

// hostOf is the host of addr, without its port.
func hostOf(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}
