package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeWarnsOfUnnamedTiers: serve starting with --tier Partner (the
// catalogue says partner) and a caller of the keys file in a tier no
// function names logs one warning each, and still serves.
func TestServeWarnsOfUnnamedTiers(t *testing.T) {
	skipShort(t, "builds and runs the real binary")
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.yaml")
	mustAppendKey(t, keys, "acme", "partner")
	mustAppendKey(t, keys, "ops", "Internal")
	p := startBinary(t, shippedCatalog, filepath.Join(dir, "a2ad.db"), "--tier", "Partner", "--keys", keys)
	want := []string{
		`no function names tier \"Partner\" (--tier) in \"a2a.tier\": its callers see no skill (the catalogue names internal, partner)`,
		`no function names tier \"Internal\" (caller ops of the keys file) in \"a2a.tier\": its callers see no skill (the catalogue names internal, partner)`,
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		logs := p.logs.String()
		p.mu.Unlock()
		missing := ""
		for _, w := range want {
			if !strings.Contains(logs, `"level":"warn"`) || !strings.Contains(logs, w) {
				missing = w
			}
		}
		if missing == "" {
			if strings.Contains(logs, `tier \"partner\"`) {
				t.Fatalf("a tier the catalogue names was warned of:\n%s", logs)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no warning %q in the log:\n%s", missing, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
