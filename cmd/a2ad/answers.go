package main

import (
	"context"

	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/transport"
)

// answers applies a callers.Answers to the server's principals, by their
// limit key, as the in-flight caps count them.
type answers struct{ a *callers.Answers }

// answerAdmitter is the bound of --max-answer-bytes-per-caller; nil (no
// bound) for 0.
func answerAdmitter(max int64) transport.AnswerAdmitter {
	if max <= 0 {
		return nil
	}
	return answers{callers.NewAnswers(max, transport.DefaultAnswerWait)}
}

// AdmitAnswer implements transport.AnswerAdmitter.
func (a answers) AdmitAnswer(ctx context.Context, p transport.Principal, n int64) (func(), *transport.Denial) {
	if release, ok := a.a.Acquire(ctx, p.LimitKey, n); ok {
		return release, nil
	}
	return nil, &transport.Denial{Scope: "caller", RetryAfter: callers.InFlightRetry}
}
