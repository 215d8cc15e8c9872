package transport

import (
	"context"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// AnswerAdmitter bounds the bytes of each caller's answers in flight:
// AdmitAnswer takes n bytes for an answer of p, waiting briefly for room,
// and returns the func that gives them back once the answer is written;
// or it says why not (a Denial of scope "caller", not rate limited).
type AnswerAdmitter interface {
	AdmitAnswer(ctx context.Context, p Principal, n int64) (release func(), d *Denial)
}

// AnswerBytes is the size of t as the answer bytes are counted: the bytes
// of its messages' and artifacts' parts (tasks.PartBytes), which is what
// grows; the rest of a task is small.
func AnswerBytes(t *a2a.Task) int64 {
	if t == nil {
		return 0
	}
	var n int64
	if t.Status.Message != nil {
		n += tasks.PartBytes(t.Status.Message.Parts)
	}
	for i := range t.History {
		n += tasks.PartBytes(t.History[i].Parts)
	}
	for i := range t.Artifacts {
		n += tasks.PartBytes(t.Artifacts[i].Parts)
	}
	return n
}

// holdAnswer admits an answer of n bytes of cl's caller (see
// AnswerAdmitter) after charging them to its budget of bytes; the bytes
// in flight are given back when the call ends (End). A refusal is the
// bytes rate or in-flight error, retryable, noted in the call's record.
func (c *Core) holdAnswer(ctx context.Context, cl *Call, n int64) *a2a.Error {
	if n == 0 {
		return nil
	}
	if c.cfg.Bytes != nil {
		// The caller's budget of bytes pays for what it reads as for what
		// it sends: an answer is charged, and one that finds the budget in
		// debt is refused as a request would be, so that one caller's
		// reads cannot take the server's cores from the others.
		if d := c.cfg.Bytes.TakeBytes(cl.principal, n); d != nil {
			cl.denial, cl.rpcErr = d, deniedError(d)
			return cl.rpcErr
		}
	}
	if c.cfg.Answers == nil {
		return nil
	}
	release, d := c.cfg.Answers.AdmitAnswer(ctx, cl.principal, n)
	if d != nil {
		cl.denial, cl.rpcErr = d, deniedError(d)
		return cl.rpcErr
	}
	prev := cl.answered
	cl.answered = func() {
		release()
		if prev != nil {
			prev()
		}
	}
	return nil
}

// reserveAnswer holds, while a get or list reads its tasks, the room of
// the largest answer it may make (Config.AnswerReserve) among its
// caller's answers in flight, so that one caller's reads wait for each
// other before the work of reading, not after it. The returned func
// gives it back (before holdAnswer takes the answer's real size); nil
// and a refusal as holdAnswer's when there was no room in time.
func (c *Core) reserveAnswer(ctx context.Context, cl *Call) (func(), *a2a.Error) {
	if c.cfg.Answers == nil || c.cfg.AnswerReserve <= 0 {
		return func() {}, nil
	}
	release, d := c.cfg.Answers.AdmitAnswer(ctx, cl.principal, c.cfg.AnswerReserve)
	if d == nil && c.cfg.Bytes != nil {
		// A read that waited may find that the answers before it put
		// the budget in debt: refused before it reads, not after.
		if d = c.cfg.Bytes.TakeBytes(cl.principal, 0); d != nil {
			release()
		}
	}
	if d != nil {
		cl.denial, cl.rpcErr = d, deniedError(d)
		return nil, cl.rpcErr
	}
	return release, nil
}

// DefaultAnswerWait is how long an answer past its caller's bound waits
// for room before it is refused.
const DefaultAnswerWait = time.Second
