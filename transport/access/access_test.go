package access

import (
	"testing"
	"time"

	"github.com/a2ad/a2ad/callers"
)

// TestAuthThrottlePer64: an IPv6 client's /64 is one address for the
// throttle, as for the rate buckets.
func TestAuthThrottlePer64(t *testing.T) {
	th := Throttle{callers.NewThrottle(callers.ThrottleConfig{PerSecond: 1, Burst: 1, Now: func() time.Time { return time.Unix(0, 0) }})}
	th.Fail("2001:db8:1:2::1")
	if _, _, ok := th.Check("2001:db8:1:2:ffff::9"); ok {
		t.Error("another address of the /64 was not throttled")
	}
	if _, _, ok := th.Check("2001:db8:1:3::1"); !ok {
		t.Error("another /64 was throttled")
	}
}

func TestAddressKey(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1":            "127.0.0.1",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::9": "2001:db8:1:2::/64",
		"::ffff:192.0.2.1":     "::ffff:192.0.2.1",
		"not an address":       "not an address",
	} {
		if got := AddressKey(in); got != want {
			t.Errorf("AddressKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPrincipalOf: a key's own limits and rate replace the defaults in
// the principal; anonymous callers get a bucket and a call group by
// address (an IPv6 client by /64).
func TestPrincipalOf(t *testing.T) {
	five, off := int64(5), callers.IdemOff
	def := callers.Effective{QuotaTasks: 100, QuotaBytes: 1000, MaxHistory: 10, MaxCalls: 3, RateBytes: 64, IdemWindow: time.Minute}
	p := PrincipalOf(callers.Identity{CallerID: "acme", Tiers: []string{"partner"}, Rate: &callers.Rate{PerSecond: 2, Burst: 4},
		Limits: callers.Limits{QuotaTasks: &five, IdemWindow: &off}, KeyID: "k1"}, "192.0.2.1", def)
	c := p.Caller
	if c.ID != "acme" || c.Quota.Tasks != 5 || c.Quota.Bytes != 1000 || c.MaxHistory != 10 || c.MaxCalls != 3 || c.IdemWindow != -1 {
		t.Errorf("caller %+v, want acme's quota of 5 tasks over the defaults and no idempotency window", c)
	}
	if p.LimitKey != "key:acme" || p.PerSecond != 2 || p.Burst != 4 || p.BytesPerSecond != 64 || p.KeyID != "k1" || p.Anonymous {
		t.Errorf("principal %+v, want acme's bucket and rate", p)
	}
	a := PrincipalOf(callers.Identity{Anonymous: true}, "2001:db8:1:2::7", def)
	if a.LimitKey != "anon:2001:db8:1:2::/64" || a.Caller.CallGroup != "2001:db8:1:2::/64" || a.PerSecond != 0 || a.Caller.Quota.Tasks != 100 {
		t.Errorf("anonymous principal %+v, want its /64's bucket and the defaults", a)
	}
}
