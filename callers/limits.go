package callers

import "time"

// Effective is what one caller is held to: the server's defaults, each
// replaced by the caller's own where it has one. It is the one resolution
// of a caller's limits: the keys file's per-key limits (Limits), a key's
// own rate, and the server's flags meet here and nowhere else.
type Effective struct {
	QuotaTasks int64 // tasks it may keep stored; 0 for no limit
	QuotaBytes int64 // bytes its tasks may take; 0 for no limit
	MaxHistory int   // messages one of its tasks may hold; 0 for no limit
	MaxCalls   int   // its calls running or waiting at once; 0 for no cap
	RateBytes  int64 // bytes a second of its request bodies; 0 for no limit
	// IdemWindow is how long its messageIds are remembered: 0 as long as
	// the task is kept, IdemOff never.
	IdemWindow time.Duration
	// Rate is its own request rate; nil for the gate's default.
	Rate *Rate
}

// For is the effective limits of a caller whose own limits are own and
// whose own rate is rate (nil for none), over the defaults d.
func (d Effective) For(own Limits, rate *Rate) Effective {
	set(&d.QuotaTasks, own.QuotaTasks)
	set(&d.QuotaBytes, own.QuotaBytes)
	set(&d.MaxHistory, own.MaxHistory)
	set(&d.MaxCalls, own.MaxCalls)
	set(&d.RateBytes, own.RateBytes)
	set(&d.IdemWindow, own.IdemWindow)
	if rate != nil {
		r := *rate
		d.Rate = &r
	}
	return d
}

// set replaces *dst with *own when own is set.
func set[T any](dst *T, own *T) {
	if own != nil {
		*dst = *own
	}
}
