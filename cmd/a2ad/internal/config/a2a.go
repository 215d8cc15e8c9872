package config

import (
	"flag"
	"time"

	"github.com/a2ad/a2ad/agentcard"
	"github.com/a2ad/a2ad/callers"
)

// a2aConfig holds settings of how a2ad speaks A2A that are not limits:
// how long a messageId is remembered, and which versions the card speaks.
type a2aConfig struct {
	// CardVersions are the A2A versions of the card at the well-known
	// path (see agentcard.ParseVersions).
	CardVersions agentcard.Versions
	// IdemWindow is how long a caller's messageIds are remembered for
	// deduplication, for callers without one of their own: 0 as long as
	// their task is kept, callers.IdemOff never.
	IdemWindow time.Duration
}

func (a *a2aConfig) flags(fs *flag.FlagSet) {
	fs.Var(cardVersionsFlag{&a.CardVersions}, "card-versions", "A2A versions the agent card speaks: 0.3,1.0 (one card both read, and the pure 1.0 card to a request with A2A-Version: 1.0), 1.0 or 0.3 (that card alone)")
	fs.Var(idemWindowFlag{&a.IdemWindow}, "idempotency-window", "how long a caller's messageId is remembered, so that a resend is the same message and not a second call (keys: idempotency_window): a duration such as 24h, \"retention\" for as long as its task is kept, or 0 for no deduplication (every send is a new message)")
}

// idemWindowFlag is an idempotency window as callers.ParseIdemWindow reads
// it.
type idemWindowFlag struct{ w *time.Duration }

func (f idemWindowFlag) String() string {
	if f.w == nil {
		return ""
	}
	return callers.FormatIdemWindow(*f.w)
}

func (f idemWindowFlag) Set(s string) error {
	w, err := callers.ParseIdemWindow(s)
	if err == nil {
		*f.w = w
	}
	return err
}

// cardVersionsFlag is the versions of the card, as agentcard.ParseVersions
// reads them.
type cardVersionsFlag struct{ v *agentcard.Versions }

func (f cardVersionsFlag) String() string {
	if f.v == nil {
		return ""
	}
	return f.v.String()
}

func (f cardVersionsFlag) Set(s string) error {
	v, err := agentcard.ParseVersions(s)
	if err == nil {
		*f.v = v
	}
	return err
}
