package grpc

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// TestFrameReaderCountsResets: the client's bytes, fed in pieces of
// every size, yield the RST_STREAM frames among them, whatever frames
// surround them and wherever the pieces cut them.
func TestFrameReaderCountsResets(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(clientPreface)
	fr := http2.NewFramer(&b, nil)
	_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	for id := uint32(1); id < 100; id += 2 {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: bytes.Repeat([]byte{0x83}, int(id)), EndHeaders: true})
		_ = fr.WriteData(id, false, bytes.Repeat([]byte{3}, 300)) // 0x03 bytes in payloads are not frames
		_ = fr.WriteRSTStream(id, http2.ErrCodeCancel)
	}
	_ = fr.WritePing(false, [8]byte{3, 3, 3})
	for _, piece := range []int{1, 2, 5, 9, 10, 1000, b.Len()} {
		f := frameReader{preface: len(clientPreface)}
		n := 0
		for rest := b.Bytes(); len(rest) > 0; {
			k := min(piece, len(rest))
			n += f.feed(rest[:k], rstStreamFrame)
			rest = rest[k:]
		}
		if n != 50 || f.have != 0 || f.skip != 0 {
			t.Errorf("pieces of %d bytes: %d resets (at %d/%d), want 50 at a frame's end", piece, n, f.have, f.skip)
		}
	}
}

// TestBucket: a burst, then the rate.
func TestBucket(t *testing.T) {
	now := time.Now()
	b := bucket{rate: 100, burst: 10, tokens: 10, last: now}
	if !b.take(10, now) || b.take(1, now) {
		t.Fatal("a burst of 10: want 10 taken, the 11th refused")
	}
	b = bucket{rate: 100, burst: 10, tokens: 0, last: now}
	if !b.take(5, now.Add(50*time.Millisecond)) || b.take(1, now.Add(50*time.Millisecond)) {
		t.Error("50 ms at 100/s: want 5 tokens")
	}
	if !b.take(10, now.Add(time.Hour)) {
		t.Error("refilled to the burst")
	}
}

// TestPenalties: an address is held off until its time, then let in, and
// expired entries go at the next add.
func TestPenalties(t *testing.T) {
	var p penalties
	now := time.Now()
	p.add("10.0.0.1", now.Add(time.Second))
	if !p.holds("10.0.0.1", now) || p.holds("10.0.0.2", now) || p.holds("10.0.0.1", now.Add(2*time.Second)) {
		t.Error("want 10.0.0.1 held for a second, 10.0.0.2 never")
	}
	p.add("10.0.0.3", now.Add(-time.Second)) // already over: swept at the next add
	p.add("10.0.0.4", now.Add(time.Second))
	if len(p.until) != 2 {
		t.Errorf("entries %v, want the two still running", p.until)
	}
}
