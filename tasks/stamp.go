package tasks

import (
	"sync/atomic"
	"time"

	"github.com/a2ad/a2ad/a2a"
)

// stamps keeps the status timestamp last formatted. a2a.Timestamp has
// millisecond precision, and the statuses of a send (submitted, working,
// its outcome), and those of sends running together, mostly fall in the
// same millisecond: they share one string instead of formatting it again.
type stamps struct{ last atomic.Pointer[stamp] }

type stamp struct {
	sec  int64 // Unix seconds
	ms   int   // the millisecond within
	text string
}

// format returns a2a.Timestamp(t).
func (ss *stamps) format(t time.Time) string {
	sec, ms := t.Unix(), t.Nanosecond()/int(time.Millisecond)
	if p := ss.last.Load(); p != nil && p.sec == sec && p.ms == ms {
		return p.text
	}
	p := &stamp{sec: sec, ms: ms, text: a2a.Timestamp(t)}
	ss.last.Store(p)
	return p.text
}
