package functions

import (
	"errors"
	"io"
)

// blockSize is the size of the blocks a blocks buffer holds its bytes in.
const blockSize = 64 << 10

// blocks is a buffer that grows by whole blocks, so that growing never
// copies (nor leaves behind as garbage) what it already holds. Bytes
// joins it once, into a slice of the exact size: reading an output of N
// bytes costs N for the blocks and N for the result, where appending to
// one slice would allocate about 5N in all on the way.
type blocks struct {
	b [][]byte
	n int
}

// Write appends p; it never fails.
func (bb *blocks) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if len(bb.b) == 0 || len(bb.b[len(bb.b)-1]) == blockSize {
			bb.b = append(bb.b, make([]byte, 0, blockSize))
		}
		last := &bb.b[len(bb.b)-1]
		k := min(len(p), blockSize-len(*last))
		*last = append(*last, p[:k]...)
		p = p[k:]
	}
	bb.n += n
	return n, nil
}

// Len is the number of bytes written.
func (bb *blocks) Len() int { return bb.n }

// Bytes returns what was written, in one new slice, and empties bb.
func (bb *blocks) Bytes() []byte {
	out := make([]byte, 0, bb.n)
	for i, b := range bb.b {
		out = append(out, b...)
		bb.b[i] = nil // garbage as soon as it is copied
	}
	bb.b, bb.n = nil, 0
	return out
}

// errTooLarge is the error of readCapped for a body over its limit.
var errTooLarge = errors.New("body too large")

// readCapped reads r to its end, and returns errTooLarge as soon as more
// than limit bytes arrive.
func readCapped(r io.Reader, limit int64) ([]byte, error) {
	var bb blocks
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if int64(bb.Len()+n) > limit {
			return nil, errTooLarge
		}
		_, _ = bb.Write(buf[:n])
		if err == io.EOF {
			return bb.Bytes(), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// appendGrow appends p to dst, doubling dst's capacity when it must grow,
// so that growing a line of N bytes allocates at most about 2N in all
// (append grows large slices by a quarter at a time: about 5N).
func appendGrow(dst, p []byte) []byte {
	if need := len(dst) + len(p); need > cap(dst) {
		grown := make([]byte, len(dst), max(need, 2*cap(dst), 512))
		copy(grown, dst)
		dst = grown
	}
	return append(dst, p...)
}
