package main

import (
	"strings"
	"sync"
	"time"

	"github.com/a2ad/a2ad/agentcard"
	"github.com/a2ad/a2ad/transport"
)

// cards builds and keeps the card of each view: the public one and one
// per set of caller tiers. Views are built on first use; reset drops them
// all (when the catalogue changes). Each view remembers when its card
// last changed (its Last-Modified), across resets that change nothing.
type cards struct {
	build func(tiers []string, public bool) (*agentcard.Card, error)

	mu      sync.Mutex
	views   map[string]*agentcard.Card
	changed map[string]cardChange
}

// cardChange is when a view's card took the ETag it has.
type cardChange struct {
	etag string
	at   time.Time
}

// reset drops every view: the catalogue changed.
func (c *cards) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.views)
}

func (c *cards) view(tiers []string, public bool) (*agentcard.Card, error) {
	card, _, err := c.get(tiers, public)
	return card, err
}

// served is the card of the view as the transports serve it.
func (c *cards) served(tiers []string, public bool) (transport.Card, error) {
	card, modified, err := c.get(tiers, public)
	if err != nil {
		return transport.Card{}, err
	}
	return transport.Card{JSON: card.JSON, V1JSON: card.V1JSON, ByVersion: card.ByVersion, ETag: card.ETag, Modified: modified}, nil
}

func (c *cards) get(tiers []string, public bool) (*agentcard.Card, time.Time, error) {
	key := strings.Join(tiers, "\x00")
	if public {
		key = "\x01public"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if card, ok := c.views[key]; ok {
		return card, c.changed[key].at, nil
	}
	card, err := c.build(tiers, public)
	if err != nil {
		return nil, time.Time{}, err
	}
	if c.views == nil {
		c.views, c.changed = map[string]*agentcard.Card{}, map[string]cardChange{}
	}
	// Key sets are small (one per distinct tier combination in the keys
	// file), but bound the maps anyway.
	if len(c.views) > 1024 || len(c.changed) > 1024 {
		clear(c.views)
		clear(c.changed)
	}
	c.views[key] = card
	ch, ok := c.changed[key]
	if !ok || ch.etag != card.ETag {
		// Whole seconds: what Last-Modified and If-Modified-Since say.
		ch = cardChange{etag: card.ETag, at: time.Now().UTC().Truncate(time.Second)}
		c.changed[key] = ch
	}
	return card, ch.at, nil
}
