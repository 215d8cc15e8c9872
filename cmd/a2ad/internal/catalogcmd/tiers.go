package catalogcmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
)

// UnnamedTiers are the tiers in force that no function of cat names in
// "a2a.tier", each with where it is in force, and what the catalogue
// names: a tier written with another case ("Partner"), or one the
// catalogue lost in an edit, leaves its callers with no skill and no
// error, so serve and skills say so.
func UnnamedTiers(cat *functions.Catalog, serverTier string, keys *callers.Keys) (problems []string) {
	metas := make([]map[string]any, len(cat.Functions))
	for i, f := range cat.Functions {
		metas[i] = f.Metadata
	}
	named := exposure.TiersNamed(exposure.A2A, metas...)
	names := "none"
	if len(named) > 0 {
		names = strings.Join(named, ", ")
	}
	unknown := func(tier, where string) {
		if !slices.Contains(named, tier) {
			problems = append(problems, fmt.Sprintf("no function names tier %q (%s) in \"a2a.tier\": its callers see no skill (the catalogue names %s)", tier, where, names))
		}
	}
	if serverTier != "" {
		unknown(serverTier, "--tier")
	}
	if keys != nil {
		seen := map[string]bool{}
		for _, k := range keys.List() {
			for _, t := range k.Tiers {
				if !seen[t] {
					seen[t] = true
					unknown(t, "caller "+k.CallerID+" of the keys file")
				}
			}
		}
	}
	return problems
}
