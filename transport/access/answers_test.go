package access

import (
	"context"
	"testing"
	"time"

	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/transport"
)

// TestAnswers: no bound for 0; past the bound a caller's answer waits,
// then is denied with scope "caller", while another caller's is admitted.
func TestAnswers(t *testing.T) {
	if a := NewAnswers(0); a != nil {
		t.Errorf("NewAnswers(0) = %v, want nil (no bound)", a)
	}
	a := Answers{callers.NewAnswers(10, time.Millisecond)}
	acme, globex := transport.Principal{LimitKey: "acme"}, transport.Principal{LimitKey: "globex"}
	release, d := a.AdmitAnswer(context.Background(), acme, 10)
	if d != nil {
		t.Fatalf("first answer denied: %+v", d)
	}
	if _, d := a.AdmitAnswer(context.Background(), acme, 1); d == nil || d.Scope != "caller" || d.RetryAfter != callers.InFlightRetry {
		t.Errorf("answer past the bound = %+v, want scope caller, retry after %v", d, callers.InFlightRetry)
	}
	if rel, d := a.AdmitAnswer(context.Background(), globex, 10); d != nil {
		t.Errorf("another caller's answer denied: %+v", d)
	} else {
		rel()
	}
	release()
	if rel, d := a.AdmitAnswer(context.Background(), acme, 10); d != nil {
		t.Errorf("answer after the release denied: %+v", d)
	} else {
		rel()
	}
}
