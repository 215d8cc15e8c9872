package exposure_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/a2ad/a2ad/exposure"
)

// TestDecideTruthTable covers every combination of the three gates: the
// id (floor or not), --expose-all, the tier in force and the metadata
// values, wrong JSON types included.
func TestDecideTruthTable(t *testing.T) {
	ids := []struct {
		id    string
		floor bool
	}{
		{"demo::echo", false},
		{"pricing", false},
		{"engine::x", true}, {"state::x", true}, {"stream::x", true}, {"iii.x", true},
		{"iii::x", true}, {"mcp::x", true}, {"a2a::x", true},
		{"Engine::x", false}, // the floor is case-sensitive
		{"xengine::x", false},
	}
	exposeVals := []struct {
		name  string
		v     any
		set   bool
		optIn bool
	}{
		{"missing", nil, false, false},
		{"true", true, true, true},
		{"false", false, true, false},
		{`"true"`, "true", true, false},
		{"1", 1, true, false},
		{"null", nil, true, false},
		{"[true]", []any{true}, true, false},
	}
	tierVals := []struct {
		name    string
		v       any
		set     bool
		matches map[string]bool // tier in force → match
	}{
		{"missing", nil, false, nil},
		{`"partner"`, "partner", true, map[string]bool{"partner": true}},
		{`"Partner"`, "Partner", true, nil},
		{`"internal"`, "internal", true, map[string]bool{"internal": true}},
		{`["partner","internal"]`, []any{"partner", "internal"}, true, map[string]bool{"partner": true, "internal": true}},
		{`[1]`, []any{1}, true, nil},
		{"true", true, true, nil},
		{`""`, "", true, nil},
	}
	for _, proto := range exposure.Protocols {
		for _, id := range ids {
			for _, ex := range exposeVals {
				for _, tv := range tierVals {
					for _, exposeAll := range []bool{false, true} {
						for _, tier := range []string{"", "partner", "internal"} {
							checkDecision(t, proto, id.id, id.floor, ex.set, ex.v, ex.optIn, tv.set, tv.v, tv.matches[tier], exposeAll, tier)
						}
					}
				}
			}
		}
	}
}

// checkDecision checks one cell of the truth table over proto. The other
// protocol's keys are set to what would expose the function there, to
// show that each protocol reads only its own.
func checkDecision(t *testing.T, proto exposure.Protocol, id string, floor, exSet bool, exV any, optIn, tierSet bool, tierV any, tierMatches, exposeAll bool, tier string) {
	t.Helper()
	meta := map[string]any{}
	for _, other := range exposure.Protocols {
		if other != proto {
			meta[other.ExposeKey()] = true
			meta[other.TierKey()] = []any{"partner", "internal"}
		}
	}
	if exSet {
		meta[proto.ExposeKey()] = exV
	}
	if tierSet {
		meta[proto.TierKey()] = tierV
	}
	p := exposure.Policy{ExposeAll: exposeAll, Tier: tier}
	got := p.DecideIn(proto, id, meta, nil)
	if proto == exposure.A2A {
		if d := p.Decide(id, meta); d != got {
			t.Errorf("Decide(%s) = %+v, DecideIn(a2a) = %+v", id, d, got)
		}
	}

	var want exposure.Decision
	switch {
	case floor:
		want = exposure.Decision{Reason: exposure.HiddenPrefix}
	case !(exposeAll && proto == exposure.A2A) && !optIn: // --expose-all never reaches MCP
		want = exposure.Decision{Reason: exposure.NotOptedIn}
	case tier != "" && !tierMatches:
		want = exposure.Decision{Reason: exposure.TierMismatch}
	default:
		want = exposure.Decision{Exposed: true, Reason: exposure.Exposed}
	}
	if got != want {
		t.Errorf("DecideIn(%s, %s, expose=%v(set %v), tier-meta=%v(set %v), --expose-all=%v, --tier=%q) = %+v, want %+v",
			proto, id, exV, exSet, tierV, tierSet, exposeAll, tier, got, want)
	}
}

func TestExtraPrefixesAddToTheFloor(t *testing.T) {
	p := exposure.Policy{ExposeAll: true, ExtraPrefixes: []string{"admin::", ""}}
	if d := p.Decide("admin::reindex", map[string]any{exposure.MetaExpose: true}); d.Reason != exposure.HiddenPrefix {
		t.Fatalf("extra prefix: got %+v", d)
	}
	// An empty extra prefix must not hide everything.
	if d := p.Decide("demo::echo", nil); !d.Exposed {
		t.Fatalf("empty extra prefix hid demo::echo: %+v", d)
	}
	// Extra prefixes cannot remove the floor.
	if d := p.Decide("engine::x", nil); d.Reason != exposure.HiddenPrefix {
		t.Fatalf("floor: got %+v", d)
	}
}

func TestCallerTierIsCappedByServerTier(t *testing.T) {
	tests := []struct {
		server string
		caller []string
		tier   any
		want   exposure.Reason
	}{
		{"", []string{"partner"}, "partner", exposure.Exposed},
		{"", []string{"partner"}, "internal", exposure.TierMismatch},
		{"partner", nil, "partner", exposure.Exposed},
		{"partner", []string{"internal"}, "internal", exposure.TierMismatch},
		{"partner", []string{"internal"}, []any{"partner", "internal"}, exposure.Exposed},
		{"partner", []string{"partner"}, "partner", exposure.Exposed},
		// A caller in several tiers sees what any of them may see.
		{"", []string{"partner", "internal"}, "internal", exposure.Exposed},
		{"", []string{"partner", "internal"}, "public", exposure.TierMismatch},
		{"", []string{"partner", "internal"}, []any{"public", "partner"}, exposure.Exposed},
		// ...but never past the server's tier.
		{"partner", []string{"partner", "internal"}, "internal", exposure.TierMismatch},
		// An empty tier name matches nothing.
		{"", []string{""}, "", exposure.TierMismatch},
	}
	for _, proto := range exposure.Protocols {
		for _, tt := range tests {
			meta := map[string]any{proto.ExposeKey(): true, proto.TierKey(): tt.tier}
			got := exposure.Policy{Tier: tt.server}.DecideIn(proto, "demo::x", meta, tt.caller)
			if got.Reason != tt.want {
				t.Errorf("DecideIn(%s, server=%q, caller=%v, meta=%v) = %s, want %s", proto, tt.server, tt.caller, tt.tier, got.Reason, tt.want)
			}
		}
	}
}

func TestCheck(t *testing.T) {
	cat := map[string]map[string]any{
		"demo::echo":  {exposure.MetaExpose: true, exposure.MetaTier: "partner"},
		"demo::quiet": {},
		"demo::tool":  {"mcp.expose": true, "mcp.tier": "partner"},
	}
	lookups := 0
	lookup := func(id string) (map[string]any, bool, error) {
		lookups++
		m, ok := cat[id]
		return m, ok, nil
	}
	failing := func(string) (map[string]any, bool, error) { return nil, false, errors.New("catalogue unavailable") }
	p := exposure.Policy{Tier: "partner"}
	tests := []struct {
		id     string
		lookup exposure.Lookup
		want   exposure.Reason
	}{
		{"demo::echo", lookup, exposure.Exposed},
		{"demo::quiet", lookup, exposure.NotOptedIn},
		{"demo::missing", lookup, exposure.UnknownFunction},
		{"demo::echo", failing, exposure.CatalogError},
		{"engine::x", failing, exposure.HiddenPrefix}, // the floor never asks the catalogue
	}
	for _, tt := range tests {
		if got := p.Check(tt.id, nil, tt.lookup); got.Reason != tt.want || got.Exposed != (tt.want == exposure.Exposed) {
			t.Errorf("Check(%s) = %+v, want %s", tt.id, got, tt.want)
		}
	}
	for _, tt := range []struct {
		id       string
		a2a, mcp exposure.Reason
	}{
		{"demo::echo", exposure.Exposed, exposure.NotOptedIn},
		{"demo::tool", exposure.NotOptedIn, exposure.Exposed},
		{"demo::missing", exposure.UnknownFunction, exposure.UnknownFunction},
	} {
		if got := p.CheckIn(exposure.A2A, tt.id, nil, lookup); got.Reason != tt.a2a {
			t.Errorf("CheckIn(a2a, %s) = %+v, want %s", tt.id, got, tt.a2a)
		}
		if got := p.CheckIn(exposure.MCP, tt.id, nil, lookup); got.Reason != tt.mcp {
			t.Errorf("CheckIn(mcp, %s) = %+v, want %s", tt.id, got, tt.mcp)
		}
	}
	before := lookups
	p.Check("mcp::dispatch", nil, lookup)
	if lookups != before {
		t.Errorf("Check on a floor id called the catalogue")
	}
}

func TestTiersNamed(t *testing.T) {
	got := exposure.TiersNamed(exposure.A2A,
		map[string]any{"a2a.tier": "partner", "mcp.tier": "desktop"},
		map[string]any{"a2a.tier": []any{"internal", "partner", 3, ""}},
		map[string]any{"a2a.tier": []string{"ops"}},
		nil, map[string]any{"a2a.tier": true})
	if want := []string{"internal", "ops", "partner"}; !slices.Equal(got, want) {
		t.Errorf("TiersNamed(a2a) = %q, want %q", got, want)
	}
	if got := exposure.TiersNamed(exposure.MCP, map[string]any{"a2a.tier": "partner", "mcp.tier": "desktop"}); !slices.Equal(got, []string{"desktop"}) {
		t.Errorf("TiersNamed(mcp) = %q", got)
	}
}
