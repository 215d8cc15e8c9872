// Package cardviews builds and keeps the agent card of each view a2ad
// serves: the public one, and one per set of caller tiers. Views are
// built on first use, from the catalogue in force and signed by the
// signer in force; Reset drops them all (the catalogue or the signing
// keys changed). Each view remembers when its card last changed (its
// Last-Modified), across resets that change nothing.
package cardviews

import (
	"strings"
	"sync"
	"time"

	"github.com/a2ad/a2ad/agentcard"
	"github.com/a2ad/a2ad/agentcard/cardsign"
	"github.com/a2ad/a2ad/functions"
)

// Config is what every view is built from.
type Config struct {
	// Options are every view's; CallerTiers and NoSkills are set by view.
	Options agentcard.Options
	// Catalog is the catalogue in force.
	Catalog func() *functions.Catalog
	// PublicTiers are the tiers of the public view: what a caller without
	// credentials may call.
	PublicTiers []string
	// PublicNoSkills makes the public card show no skill: callers without
	// credentials are refused.
	PublicNoSkills bool
	// Signer is the signer in force, nil for none; Signer itself may be
	// nil.
	Signer func() *cardsign.Signer
}

// Views builds and keeps the card of each view.
type Views struct {
	cfg Config

	mu      sync.Mutex
	views   map[string]*agentcard.Card
	changed map[string]change
}

// change is when a view's card took the ETag it has.
type change struct {
	etag string
	at   time.Time
}

// New returns the views of cfg; none is built yet.
func New(cfg Config) *Views { return &Views{cfg: cfg} }

// Reset drops every view: the catalogue or the signing keys changed.
func (v *Views) Reset() {
	v.mu.Lock()
	defer v.mu.Unlock()
	clear(v.views)
}

// View is the card of the callers of tiers, or the public card; the
// error is agentcard.Build's or the signer's.
func (v *Views) View(tiers []string, public bool) (*agentcard.Card, error) {
	card, _, err := v.Get(tiers, public)
	return card, err
}

// Get is View with when the card last changed, in whole seconds (what
// Last-Modified and If-Modified-Since say).
func (v *Views) Get(tiers []string, public bool) (*agentcard.Card, time.Time, error) {
	key := strings.Join(tiers, "\x00")
	if public {
		key = "\x01public"
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if card, ok := v.views[key]; ok {
		return card, v.changed[key].at, nil
	}
	card, err := v.build(tiers, public)
	if err != nil {
		return nil, time.Time{}, err
	}
	if v.views == nil {
		v.views, v.changed = map[string]*agentcard.Card{}, map[string]change{}
	}
	// Key sets are small (one per distinct tier combination in the keys
	// file), but bound the maps anyway.
	if len(v.views) > 1024 || len(v.changed) > 1024 {
		clear(v.views)
		clear(v.changed)
	}
	v.views[key] = card
	ch, ok := v.changed[key]
	if !ok || ch.etag != card.ETag {
		ch = change{etag: card.ETag, at: time.Now().UTC().Truncate(time.Second)}
		v.changed[key] = ch
	}
	return card, ch.at, nil
}

// build builds the card of a view and signs it.
func (v *Views) build(tiers []string, public bool) (*agentcard.Card, error) {
	opts := v.cfg.Options
	opts.CallerTiers = tiers
	if public {
		// The public card shows what a caller without a key may call:
		// nothing when such callers are refused.
		opts.CallerTiers = v.cfg.PublicTiers
		opts.NoSkills = v.cfg.PublicNoSkills
	}
	card, err := agentcard.Build(v.cfg.Catalog(), opts)
	if v.cfg.Signer == nil || err != nil {
		return card, err
	}
	if s := v.cfg.Signer(); s != nil {
		return s.Sign(card)
	}
	return card, nil
}
