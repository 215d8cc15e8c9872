package transporttest

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
)

// Limits is a fake of the limits: an Admitter that refuses with Deny
// while it is set, and an AuthThrottle that refuses every address once
// MaxFails authentications failed (none when it is 0).
type Limits struct {
	mu       sync.Mutex
	deny     *transport.Denial
	fails    int
	MaxFails int
	// Retry is the throttle's retry delay.
	Retry time.Duration
}

var (
	_ transport.Admitter     = (*Limits)(nil)
	_ transport.AuthThrottle = (*Limits)(nil)
)

// Deny makes every call refused with d from now on; nil admits them.
func (l *Limits) Deny(d *transport.Denial) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deny = d
}

// Admit implements transport.Admitter.
func (l *Limits) Admit(transport.Principal) (func(), *transport.Denial) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.deny != nil {
		d := *l.deny
		return nil, &d
	}
	return func() {}, nil
}

// Check implements transport.AuthThrottle: each refusal is a record of
// its own (report 1).
func (l *Limits) Check(string) (time.Duration, int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.MaxFails > 0 && l.fails >= l.MaxFails {
		return l.Retry, 1, false
	}
	return 0, 0, true
}

// Fail implements transport.AuthThrottle.
func (l *Limits) Fail(string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fails++
}

// OneKey authenticates the requests that send the key, as a bearer token
// or in X-API-Key, as the caller "c1".
type OneKey string

var _ transport.Authenticator = OneKey("")

// Authenticate implements transport.Authenticator.
func (k OneKey) Authenticate(r *http.Request, _ string) (transport.Principal, transport.AuthResult) {
	got := r.Header.Get("X-API-Key")
	if a := r.Header.Get("Authorization"); a != "" {
		got = strings.TrimPrefix(a, "Bearer ")
	}
	switch got {
	case "":
		return transport.Principal{}, transport.NoCredentials
	case string(k):
		return transport.Principal{Caller: tasks.Caller{ID: "c1"}, LimitKey: "c1"}, transport.Authenticated
	}
	return transport.Principal{}, transport.BadCredentials
}

// CheckThrottledAudit checks the audit log of a binding's limits test:
// every record names the binding, and the last one is the throttled
// call's refusal.
func CheckThrottledAudit(tb testing.TB, log, binding string) {
	tb.Helper()
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec["transport"] != binding {
			tb.Errorf("audit record %s: transport %v, want %s", l, rec["transport"], binding)
		}
	}
	if !strings.Contains(lines[len(lines)-1], `"outcome":"transport_denied","reason":"auth_throttled","code":-32052`) {
		tb.Errorf("the throttled call's record: %s", lines[len(lines)-1])
	}
}
