package callers_test

import (
	"crypto/sha256"
	"errors"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2ad/a2ad/callers"
)

func TestGateRateIsPerCaller(t *testing.T) {
	clock := newFakeClock()
	g := callers.NewGate(callers.GateConfig{PerSecond: 2, Burst: 3, Now: clock.Now})
	admit := func(key string, rate *callers.Rate) (callers.Denial, bool) {
		release, d, ok := g.Admit(key, rate)
		if ok {
			release()
		}
		return d, ok
	}
	// A new bucket starts full: the burst passes, the next is refused.
	for i := range 3 {
		if _, ok := admit("alice", nil); !ok {
			t.Fatalf("alice request %d refused within the burst", i+1)
		}
	}
	d, ok := admit("alice", nil)
	if ok || !d.RateLimited || d.Global || d.RetryAfter != 500*time.Millisecond {
		t.Fatalf("4th request: ok=%v denial=%+v, want rate limited with retry 500ms", ok, d)
	}
	// Bob's bucket is his own.
	if _, ok := admit("bob", nil); !ok {
		t.Fatal("bob refused because of alice")
	}
	// A key's own rate replaces the defaults.
	own := &callers.Rate{PerSecond: 0.5, Burst: 1}
	if _, ok := admit("carol", own); !ok {
		t.Fatal("carol's first request refused")
	}
	if d, ok := admit("carol", own); ok || d.RetryAfter != 2*time.Second {
		t.Fatalf("carol: ok=%v denial=%+v, want retry 2s", ok, d)
	}
	// Refill: after the retry time, exactly one more passes.
	clock.Advance(500 * time.Millisecond)
	if _, ok := admit("alice", nil); !ok {
		t.Fatal("alice refused after waiting retryAfter")
	}
	if _, ok := admit("alice", nil); ok {
		t.Fatal("alice got two tokens from half a second at 2/s")
	}
}

func TestGateInFlightCaps(t *testing.T) {
	g := callers.NewGate(callers.GateConfig{PerSecond: 1000, Burst: 1000, MaxInFlightPerCaller: 2, MaxInFlight: 3})
	r1, _, ok1 := g.Admit("alice", nil)
	r2, _, ok2 := g.Admit("alice", nil)
	if !ok1 || !ok2 {
		t.Fatal("alice's first two requests refused")
	}
	_, d, ok := g.Admit("alice", nil)
	if ok || d.RateLimited || d.Global || d.RetryAfter != callers.InFlightRetry {
		t.Fatalf("alice's third: ok=%v denial=%+v, want the caller's in-flight cap", ok, d)
	}
	r3, _, ok := g.Admit("bob", nil)
	if !ok {
		t.Fatal("bob refused by alice's cap")
	}
	_, d, ok = g.Admit("carol", nil)
	if ok || !d.Global {
		t.Fatalf("carol: ok=%v denial=%+v, want the server's cap", ok, d)
	}
	// A refusal by the global cap gives back the caller's slot.
	r1()
	r1() // a second release is a no-op
	r4, _, ok := g.Admit("carol", nil)
	if !ok {
		t.Fatal("carol refused after a slot was released")
	}
	r4()
	r5, _, ok := g.Admit("alice", nil)
	if !ok {
		t.Fatal("alice refused with one slot of two in use")
	}
	r2()
	r3()
	r5()
}

func TestGateConcurrent(t *testing.T) {
	g := callers.NewGate(callers.GateConfig{PerSecond: 1e9, Burst: 1 << 30, MaxInFlightPerCaller: 4, MaxInFlight: 6})
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		peak = map[string]int{}
		cur  = map[string]int{}
		all  int
		top  int
	)
	for w := range 16 {
		wg.Go(func() {
			key := []string{"a", "b", "c"}[w%3]
			for range 500 {
				release, _, ok := g.Admit(key, nil)
				if !ok {
					continue
				}
				mu.Lock()
				cur[key]++
				all++
				peak[key] = maxInt(peak[key], cur[key])
				top = maxInt(top, all)
				mu.Unlock()
				mu.Lock()
				cur[key]--
				all--
				mu.Unlock()
				release()
			}
		})
	}
	wg.Wait()
	for k, p := range peak {
		if p > 4 {
			t.Errorf("caller %s peaked at %d in flight, cap 4", k, p)
		}
	}
	if top > 6 {
		t.Errorf("peak of %d in flight, cap 6", top)
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func TestAuthenticatorIdentify(t *testing.T) {
	reg, _ := goodRegistry(t)
	tests := []struct {
		name      string
		anonymous bool
		header    [2]string
		want      callers.Identity
		err       error
	}{
		{"bearer", false, [2]string{"Authorization", "Bearer " + secretBilling},
			callers.Identity{CallerID: "billing", Tiers: []string{"internal", "gold"}, Rate: &callers.Rate{PerSecond: 2.5, Burst: 10},
				KeyHash: sha256.Sum256([]byte(secretBilling)), KeyID: callers.KeyIDOf(sha256.Sum256([]byte(secretBilling)))}, nil},
		{"x-api-key", false, [2]string{"X-API-Key", secretPartner},
			callers.Identity{CallerID: "partner:acme", Tiers: []string{"public"}, KeyHash: sha256.Sum256([]byte(secretPartner)),
				KeyID: callers.KeyIDOf(sha256.Sum256([]byte(secretPartner)))}, nil},
		{"no key", false, [2]string{}, callers.Identity{}, callers.ErrNoKey},
		{"no key, anonymous allowed", true, [2]string{}, callers.Identity{Tiers: []string{"public"}, Anonymous: true}, nil},
		{"disabled key", true, [2]string{"X-API-Key", secretOld}, callers.Identity{}, callers.ErrBadKey},
		{"unknown key", true, [2]string{"Authorization", "Bearer nope"}, callers.Identity{}, callers.ErrBadKey},
		{"basic, anonymous allowed", true, [2]string{"Authorization", "Basic YTpi"}, callers.Identity{}, callers.ErrBadKey},
		{"two keys, anonymous allowed", true, [2]string{"Authorization", "Bearer " + secretBilling + "\x00Bearer " + secretPartner}, callers.Identity{}, callers.ErrConflictingKeys},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &callers.Authenticator{Registry: reg, Anonymous: tt.anonymous, AnonymousTiers: []string{"public"}}
			r := httptest.NewRequest("POST", "/a2a", nil)
			if tt.header[0] != "" {
				// "\x00" separates the values of a repeated header.
				for _, v := range strings.Split(tt.header[1], "\x00") {
					r.Header.Add(tt.header[0], v)
				}
			}
			got, err := a.Identify(r)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("identity = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestGateWithoutDefaultRate(t *testing.T) {
	g := callers.NewGate(callers.GateConfig{PerSecond: 0})
	for range 10000 {
		release, _, ok := g.Admit("anon:127.0.0.1", nil)
		if !ok {
			t.Fatal("a caller without a rate was limited with no default rate")
		}
		release()
	}
	own := &callers.Rate{PerSecond: 1, Burst: 2}
	for i := range 2 {
		if release, _, ok := g.Admit("key:metered", own); !ok {
			t.Fatalf("request %d within the key's burst refused", i+1)
		} else {
			release()
		}
	}
	if _, d, ok := g.Admit("key:metered", own); ok || !d.RateLimited {
		t.Fatalf("a key's own rate was not applied: ok=%v denial=%+v", ok, d)
	}
}
