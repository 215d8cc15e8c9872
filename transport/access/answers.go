package access

import (
	"context"

	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/transport"
)

// Answers applies a callers.Answers to the core's principals, by their
// limit key, as the in-flight caps count them: the bound on one caller's
// read answers in flight.
type Answers struct{ A *callers.Answers }

var _ transport.AnswerAdmitter = Answers{}

// NewAnswers is the bound of max bytes of one caller's answers in flight
// (a2ad's --max-answer-bytes-per-caller); nil (no bound) for 0.
func NewAnswers(max int64) transport.AnswerAdmitter {
	if max <= 0 {
		return nil
	}
	return Answers{callers.NewAnswers(max, transport.DefaultAnswerWait)}
}

// AdmitAnswer implements transport.AnswerAdmitter.
func (a Answers) AdmitAnswer(ctx context.Context, p transport.Principal, n int64) (func(), *transport.Denial) {
	if release, ok := a.A.Acquire(ctx, p.LimitKey, n); ok {
		return release, nil
	}
	return nil, &transport.Denial{Scope: "caller", RetryAfter: callers.InFlightRetry}
}
