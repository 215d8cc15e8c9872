package access

import (
	"time"

	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/transport"
)

// Gate applies a callers.Gate to the core's principals, and tells
// Rejected (when set) of each refusal. Anonymous callers, known by their
// address only, have their buckets in the gate's bounded set.
type Gate struct {
	Gate     *callers.Gate
	Rejected func(rateLimited, serverWide bool)
	// RejectedBytes, when set, is told of each refusal by a budget of
	// request bytes.
	RejectedBytes func()
}

var (
	_ transport.Admitter  = Gate{}
	_ transport.ByteMeter = Gate{}
)

// TakeBytes charges a request's declared length to p's budget of request
// bytes: anonymous callers' are among the gate's bounded address budgets.
func (g Gate) TakeBytes(p transport.Principal, n int64) *transport.Denial {
	var (
		retry time.Duration
		ok    bool
	)
	if p.Anonymous {
		retry, ok = g.Gate.TakeAddressBytes(p.LimitKey, p.BytesPerSecond, n)
	} else {
		retry, ok = g.Gate.TakeBytes(p.LimitKey, p.BytesPerSecond, n)
	}
	if ok {
		return nil
	}
	if g.RejectedBytes != nil {
		g.RejectedBytes()
	}
	return &transport.Denial{Scope: "bytes", RateLimited: true, RetryAfter: retry}
}

// ChargeBytes charges what a body held beyond its declared length.
func (g Gate) ChargeBytes(p transport.Principal, n int64) {
	if p.Anonymous {
		g.Gate.ChargeAddressBytes(p.LimitKey, p.BytesPerSecond, n)
	} else {
		g.Gate.ChargeBytes(p.LimitKey, p.BytesPerSecond, n)
	}
}

// Admit implements transport.Admitter.
func (g Gate) Admit(p transport.Principal) (func(), *transport.Denial) {
	var (
		release func()
		d       callers.Denial
		ok      bool
	)
	if p.Anonymous {
		release, d, ok = g.Gate.AdmitAddress(p.LimitKey)
	} else {
		var rate *callers.Rate
		if p.PerSecond > 0 {
			rate = &callers.Rate{PerSecond: p.PerSecond, Burst: p.Burst}
		}
		release, d, ok = g.Gate.Admit(p.LimitKey, rate)
	}
	if ok {
		return release, nil
	}
	scope := "caller"
	if d.Global {
		scope = "server"
	}
	if g.Rejected != nil {
		g.Rejected(d.RateLimited, d.Global)
	}
	return nil, &transport.Denial{Scope: scope, RateLimited: d.RateLimited, RetryAfter: d.RetryAfter}
}

// Throttle applies a callers.Throttle per address as the rate buckets
// are: an IPv6 client's whole /64 is one address, so rotating addresses
// in it buys no new failures.
type Throttle struct{ T *callers.Throttle }

var _ transport.AuthThrottle = Throttle{}

// Check implements transport.AuthThrottle.
func (a Throttle) Check(addr string) (time.Duration, int, bool) {
	return a.T.Check(AddressKey(addr))
}

// Fail implements transport.AuthThrottle.
func (a Throttle) Fail(addr string) { a.T.Fail(AddressKey(addr)) }
