package transport

import "net/http"

// SpillBytes is the size past which an HTTP answer carrying tasks is
// written while it is made (a2a.Spill), in pieces of about this size,
// rather than built whole first: a read of a large task or page then
// holds the tasks and one piece, not their whole encoding beside them. A
// smaller answer is built whole and written in one Write, as before
// (net/http then sends a Content-Length for one under its 2 KB buffer,
// and chunks the others).
const SpillBytes = 256 << 10

// Spiller writes an HTTP answer while it is made: Spill is the a2a.Spill
// its encoder is given, Finish writes the rest. Until a piece has been
// written (Started) the answer can still become an error answer; after,
// it is 200 and chunked.
type Spiller struct {
	W           http.ResponseWriter
	ContentType []string // set unless the answer has one

	started bool
	err     error // the first write's error: the rest is dropped
}

// Spill writes dst out once it reaches SpillBytes and returns dst[:0] to
// go on with; a smaller dst is returned as it is.
func (s *Spiller) Spill(dst []byte) []byte {
	if len(dst) < SpillBytes {
		return dst
	}
	if !s.started {
		s.started = true
		if h := s.W.Header(); h.Get("Content-Type") == "" {
			h["Content-Type"] = s.ContentType
		}
		s.W.WriteHeader(http.StatusOK)
	}
	if s.err == nil {
		_, s.err = s.W.Write(dst)
	}
	return dst[:0]
}

// Started reports whether part of the answer has been written.
func (s *Spiller) Started() bool { return s.started }

// Finish writes rest, the end of a started answer, or, when its encoder
// failed (err), aborts the response, so that the caller sees it broken
// rather than read a short document as whole. The encoders fail only on
// a value the protocol cannot express, which the stores never hold.
func (s *Spiller) Finish(rest []byte, err error) error {
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if s.err == nil {
		_, s.err = s.W.Write(rest)
	}
	return s.err
}
