package callers

import (
	"testing"
	"time"
)

func TestEffectiveFor(t *testing.T) {
	i64 := func(n int64) *int64 { return &n }
	i := func(n int) *int { return &n }
	dur := func(d time.Duration) *time.Duration { return &d }
	def := Effective{QuotaTasks: 100, QuotaBytes: 1 << 30, MaxHistory: 50, MaxCalls: 32, RateBytes: 1 << 20, IdemWindow: time.Hour}
	for _, tt := range []struct {
		name string
		own  Limits
		rate *Rate
		want Effective
	}{
		{"none of its own", Limits{}, nil, def},
		{"a quota of its own", Limits{QuotaTasks: i64(5)}, nil,
			Effective{QuotaTasks: 5, QuotaBytes: 1 << 30, MaxHistory: 50, MaxCalls: 32, RateBytes: 1 << 20, IdemWindow: time.Hour}},
		{"zero lifts a default", Limits{QuotaBytes: i64(0), MaxCalls: i(0)}, nil,
			Effective{QuotaTasks: 100, MaxHistory: 50, RateBytes: 1 << 20, IdemWindow: time.Hour}},
		{"every limit its own", Limits{QuotaTasks: i64(1), QuotaBytes: i64(2), MaxHistory: i(3), MaxCalls: i(4), RateBytes: i64(5), IdemWindow: dur(IdemOff)}, nil,
			Effective{QuotaTasks: 1, QuotaBytes: 2, MaxHistory: 3, MaxCalls: 4, RateBytes: 5, IdemWindow: IdemOff}},
		{"a window as long as the task", Limits{IdemWindow: dur(0)}, nil,
			Effective{QuotaTasks: 100, QuotaBytes: 1 << 30, MaxHistory: 50, MaxCalls: 32, RateBytes: 1 << 20}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := def.For(tt.own, tt.rate)
			if got != tt.want {
				t.Errorf("For = %+v, want %+v", got, tt.want)
			}
		})
	}
	t.Run("a rate of its own", func(t *testing.T) {
		r := &Rate{PerSecond: 2, Burst: 4}
		got := def.For(Limits{}, r)
		if got.Rate == nil || *got.Rate != *r || got.Rate == r {
			t.Errorf("Rate = %v, want a copy of %v", got.Rate, r)
		}
		if def.Rate != nil {
			t.Error("For changed the defaults")
		}
	})
}
