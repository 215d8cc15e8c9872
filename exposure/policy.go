package exposure

import (
	"slices"
	"strings"
)

// Reason says why a function is exposed or hidden. The values are stable:
// they appear in logs, in `a2ad skills` and in tests.
type Reason string

// The reasons.
const (
	// Exposed: every gate passed.
	Exposed Reason = "exposed"
	// HiddenPrefix: the id is in a reserved namespace (the hard floor).
	HiddenPrefix Reason = "hidden_prefix"
	// NotOptedIn: metadata "a2a.expose" is not JSON true and the server
	// does not run with --expose-all.
	NotOptedIn Reason = "not_opted_in"
	// TierMismatch: a tier is in force and the function's "a2a.tier" does
	// not name it.
	TierMismatch Reason = "tier_mismatch"
	// UnknownFunction: no function has that id.
	UnknownFunction Reason = "unknown_function"
	// CatalogError: the catalogue could not be read, so the call is
	// denied (fail closed).
	CatalogError Reason = "catalog_error"
)

// Protocol is one of the protocols a2ad publishes functions over. Opt-in
// and tier are per protocol, so a function can be an A2A skill and not an
// MCP tool, or the reverse; the hard floor is the same for both.
type Protocol string

// The protocols.
const (
	A2A Protocol = "a2a"
	MCP Protocol = "mcp"
)

// Protocols lists every protocol, in the order views show them.
var Protocols = []Protocol{A2A, MCP}

// ExposeKey is the metadata key that opts a function into p: "a2a.expose"
// or "mcp.expose".
func (p Protocol) ExposeKey() string { return string(p) + ".expose" }

// TierKey is the metadata key naming the tiers that may see a function
// over p: "a2a.tier" or "mcp.tier".
func (p Protocol) TierKey() string { return string(p) + ".tier" }

// The A2A metadata keys the policy reads. They are literal keys, not paths.
const (
	MetaExpose = "a2a.expose"
	MetaTier   = "a2a.tier"
)

// HardFloor lists the id prefixes that are never exposed, whatever the
// flags. Operators may add prefixes (Policy.ExtraPrefixes), never remove
// these.
var HardFloor = []string{"engine::", "state::", "stream::", "iii.", "iii::", "mcp::", "a2a::"}

// Decision is the policy's answer for one function.
type Decision struct {
	Exposed bool
	Reason  Reason
}

// Policy decides exposure. The zero value exposes only opted-in functions
// outside the hard floor, with no tier filter.
type Policy struct {
	// ExposeAll exposes every function outside the floor over A2A,
	// without opt-in. Tier filtering still applies. It does not reach
	// MCP: a tool is always an explicit "mcp.expose", since MCP hosts hand
	// tools to models, a reach the operator chooses function by function.
	ExposeAll bool
	// Tier is the server-wide tier; "" means no tier filter.
	Tier string
	// ExtraPrefixes are operator-added hidden prefixes.
	ExtraPrefixes []string
}

// Hidden reports whether id falls under the hard floor or an extra prefix.
// Matching is plain and case-sensitive.
func (p Policy) Hidden(id string) bool {
	for _, pre := range HardFloor {
		if strings.HasPrefix(id, pre) {
			return true
		}
	}
	for _, pre := range p.ExtraPrefixes {
		if pre != "" && strings.HasPrefix(id, pre) {
			return true
		}
	}
	return false
}

// Decide is DecideIn over A2A for a caller without tiers.
func (p Policy) Decide(id string, meta map[string]any) Decision {
	return p.DecideIn(A2A, id, meta, nil)
}

// DecideFor is DecideIn over A2A.
func (p Policy) DecideFor(id string, meta map[string]any, callerTiers []string) Decision {
	return p.DecideIn(A2A, id, meta, callerTiers)
}

// DecideIn is the one decision: it applies the three gates, in order, to
// a function with the given id and metadata, for a caller in callerTiers
// (nil or empty for a caller without tiers) over proto: the floor, the
// opt-in, the tier.
//
// "<proto>.expose" counts only as the JSON boolean true (the string "true"
// does not). "<proto>.tier" is a string, or an array of strings for a
// function offered to several tiers; it must equal the tier in force
// exactly (case-sensitive). With no tier in force it is ignored. Any other
// type never matches a tier. A caller with tiers may see a function that
// names any one of them. When the server has a tier too, the function must
// also name it: the server-wide tier caps every caller.
func (p Policy) DecideIn(proto Protocol, id string, meta map[string]any, callerTiers []string) Decision {
	if p.Hidden(id) {
		return Decision{Reason: HiddenPrefix}
	}
	if !p.ExposeAll || proto != A2A {
		if v, ok := meta[proto.ExposeKey()].(bool); !ok || !v {
			return Decision{Reason: NotOptedIn}
		}
	}
	tier := meta[proto.TierKey()]
	if p.Tier != "" && !tierMatches(tier, p.Tier) {
		return Decision{Reason: TierMismatch}
	}
	if len(callerTiers) > 0 && !anyTierMatches(tier, callerTiers) {
		return Decision{Reason: TierMismatch}
	}
	return Decision{Exposed: true, Reason: Exposed}
}

func anyTierMatches(v any, tiers []string) bool {
	for _, t := range tiers {
		if t != "" && tierMatches(v, t) {
			return true
		}
	}
	return false
}

func tierMatches(v any, tier string) bool {
	switch t := v.(type) {
	case string:
		return t == tier
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok && s == tier {
				return true
			}
		}
	case []string:
		for _, s := range t {
			if s == tier {
				return true
			}
		}
	}
	return false
}

// Lookup finds a function's metadata by exact id. It reports found=false
// for an unknown id, and an error when the catalogue cannot be read.
type Lookup func(id string) (meta map[string]any, found bool, err error)

// Check is CheckIn over A2A.
func (p Policy) Check(id string, callerTiers []string, lookup Lookup) Decision {
	return p.CheckIn(A2A, id, callerTiers, lookup)
}

// CheckIn decides for a call over proto: the floor first (without asking
// the catalogue), then the lookup, then the gates. A lookup error denies
// the call (fail closed) with CatalogError. Callers must show
// UnknownFunction and the opt-in and tier denials alike, so that no caller
// can learn which ids exist.
func (p Policy) CheckIn(proto Protocol, id string, callerTiers []string, lookup Lookup) Decision {
	if p.Hidden(id) {
		return Decision{Reason: HiddenPrefix}
	}
	meta, found, err := lookup(id)
	if err != nil {
		return Decision{Reason: CatalogError}
	}
	if !found {
		return Decision{Reason: UnknownFunction}
	}
	return p.DecideIn(proto, id, meta, callerTiers)
}

// TiersNamed lists, sorted and once each, the tiers that the functions
// with metadata metas name over proto ("<proto>.tier"), so that a tier
// in force that none names can be told: its callers see nothing.
func TiersNamed(proto Protocol, metas ...map[string]any) []string {
	seen := map[string]bool{}
	for _, m := range metas {
		switch t := m[proto.TierKey()].(type) {
		case string:
			seen[t] = true
		case []any:
			for _, e := range t {
				if s, ok := e.(string); ok {
					seen[s] = true
				}
			}
		case []string:
			for _, s := range t {
				seen[s] = true
			}
		}
	}
	delete(seen, "")
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}
