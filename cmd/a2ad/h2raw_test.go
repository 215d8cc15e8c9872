package main

// h2raw: a client of the gRPC listener at the HTTP/2 frame level, for the
// attacks a real gRPC client will not make (streams that never finish
// their message, a subscriber that never reads, a flood of reset
// streams).

import (
	"bytes"
	binenc "encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"
)

// streamEnd is how the server ended a stream: RST_STREAM with code, or
// trailers with grpc-status.
type streamEnd struct {
	rst    bool
	code   http2.ErrCode
	status string // grpc-status of the trailers
	at     time.Time
}

// h2raw is one plaintext HTTP/2 connection to a gRPC listener.
type h2raw struct {
	conn net.Conn
	wmu  sync.Mutex
	w    *http2.Framer
	hbuf bytes.Buffer
	enc  *hpack.Encoder

	mu         sync.Mutex
	maxStreams uint32 // the server's SETTINGS_MAX_CONCURRENT_STREAMS; 0 until read
	ends       map[uint32]streamEnd
	dataBytes  int64 // DATA payload received
	goAway     *http2.ErrCode
	closed     chan struct{} // closed when the connection's reads end
	readErr    error
}

// dialH2 opens a connection to addr from the loopback address source
// ("" for any), sends the preface and settings (window: the initial
// stream window it grants the server) and reads frames until the
// connection ends, which it does when the test ends.
func dialH2(tb testing.TB, addr, source string, window uint32) *h2raw {
	tb.Helper()
	h, err := newH2(addr, source, window)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = h.conn.Close() })
	return h
}

// newH2 is dialH2 for any goroutine: the caller closes h.conn.
func newH2(addr, source string, window uint32) (*h2raw, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	if source != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	h := &h2raw{conn: c, w: http2.NewFramer(c, nil), ends: map[uint32]streamEnd{}, closed: make(chan struct{})}
	h.enc = hpack.NewEncoder(&h.hbuf)
	// A server that closes the connection at once fails these writes;
	// the reads then end, which is how the caller learns it.
	if _, err := c.Write([]byte(http2.ClientPreface)); err == nil {
		_ = h.w.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window})
	}
	go h.read()
	return h, nil
}

func (h *h2raw) read() {
	defer close(h.closed)
	r := http2.NewFramer(nil, h.conn)
	r.ReadMetaHeaders = hpack.NewDecoder(65536, nil)
	for {
		f, err := r.ReadFrame()
		if err != nil {
			h.mu.Lock()
			h.readErr = err
			h.mu.Unlock()
			return
		}
		h.mu.Lock()
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if v, ok := f.Value(http2.SettingMaxConcurrentStreams); ok {
				h.maxStreams = v
			}
			if !f.IsAck() {
				h.write(func() error { return h.w.WriteSettingsAck() })
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				h.write(func() error { return h.w.WritePing(true, f.Data) })
			}
		case *http2.RSTStreamFrame:
			if _, ok := h.ends[f.StreamID]; !ok { // after trailers, the trailers tell
				h.ends[f.StreamID] = streamEnd{rst: true, code: f.ErrCode, at: time.Now()}
			}
		case *http2.MetaHeadersFrame:
			if f.StreamEnded() {
				h.ends[f.StreamID] = streamEnd{status: grpcStatus(f), at: time.Now()}
			}
		case *http2.DataFrame:
			h.dataBytes += int64(len(f.Data()))
		case *http2.GoAwayFrame:
			code := f.ErrCode
			h.goAway = &code
		}
		h.mu.Unlock()
	}
}

// write runs one framer write under the write lock; errors end nothing
// (the reads see the connection's end).
func (h *h2raw) write(fn func() error) error {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	return fn()
}

// open sends the headers of a call to method on stream id, with the
// given extra metadata (name, value pairs).
func (h *h2raw) open(id uint32, method string, md ...string) error {
	return h.write(func() error {
		h.hbuf.Reset()
		fields := []string{":method", "POST", ":scheme", "http", ":path", "/lf.a2a.v1.A2AService/" + method,
			":authority", "a2ad", "content-type", "application/grpc", "te", "trailers"}
		fields = append(fields, md...)
		for i := 0; i+1 < len(fields); i += 2 {
			_ = h.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return h.w.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h.hbuf.Bytes(), EndHeaders: true})
	})
}

// send sends data on stream id, ending the client's half with end.
func (h *h2raw) send(id uint32, data []byte, end bool) error {
	return h.write(func() error { return h.w.WriteData(id, end, data) })
}

// reset sends RST_STREAM CANCEL on stream id.
func (h *h2raw) reset(id uint32) error {
	return h.write(func() error { return h.w.WriteRSTStream(id, http2.ErrCodeCancel) })
}

// grpcFrame is msg in gRPC's length-prefixed framing.
func grpcFrame(tb testing.TB, msg proto.Message) []byte {
	tb.Helper()
	b, err := proto.Marshal(msg)
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]byte, 5, 5+len(b))
	binenc.BigEndian.PutUint32(out[1:], uint32(len(b)))
	return append(out, b...)
}

// ended returns how the server ended stream id, if it did.
func (h *h2raw) ended(id uint32) (streamEnd, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.ends[id]
	return e, ok
}

// snapshot is the server's settings and stream ends so far.
func (h *h2raw) snapshot() (maxStreams uint32, ends map[uint32]streamEnd) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ends = make(map[uint32]streamEnd, len(h.ends))
	for k, v := range h.ends {
		ends[k] = v
	}
	return h.maxStreams, ends
}

// isClosed reports whether the connection's reads have ended.
func (h *h2raw) isClosed() bool {
	select {
	case <-h.closed:
		return true
	default:
		return false
	}
}

// waitClosed waits up to d for the server to end the connection and
// reports whether it did.
func (h *h2raw) waitClosed(d time.Duration) bool {
	select {
	case <-h.closed:
		return true
	case <-time.After(d):
		return false
	}
}

// grpcStatus is the grpc-status of trailers f.
func grpcStatus(f *http2.MetaHeadersFrame) string {
	for _, hf := range f.RegularFields() {
		if hf.Name == "grpc-status" {
			return hf.Value
		}
	}
	return ""
}
