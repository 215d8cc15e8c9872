package catalogcmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/internal/suggest"
)

// SkillView is one line of `a2ad skills` (its JSON shape too): a function and the policy's
// decision for the tier in force, over the protocol shown.
type SkillView struct {
	ID      string `json:"id"`
	Tool    string `json:"tool,omitempty"` // its MCP tool name, in the MCP view
	Backend string `json:"backend"`
	Exposed bool   `json:"exposed"`
	Reason  string `json:"reason"`
}

// Skills is a2ad skills: it prints, for the tier in force and the
// protocol asked for, which functions are exposed and, for each hidden
// one, the policy's reason. It returns the exit code.
func Skills(cfg Settings, stdout, stderr io.Writer) int {
	if cfg.Catalog == "" {
		fmt.Fprintln(stderr, "a2ad: catalog: no catalogue file given (--catalog or A2AD_CATALOG)")
		return 2
	}
	if cfg.Format != "text" && cfg.Format != "json" {
		fmt.Fprintf(stderr, "a2ad: format: must be text or json, not %q\n", cfg.Format)
		return 2
	}
	if strings.Contains(cfg.Tier, ",") {
		fmt.Fprintf(stderr, "a2ad: tier: one tier name, not a list (%q): the server-wide tier caps every caller; a caller of the keys file may have several\n", cfg.Tier)
		return 2
	}
	proto := exposure.Protocol(cfg.Protocol)
	if !slices.Contains(exposure.Protocols, proto) {
		fmt.Fprintf(stderr, "a2ad: protocol: must be a2a or mcp, not %q\n", cfg.Protocol)
		return 2
	}
	cat, err := functions.Load(cfg.Catalog, functions.LoadOptions{})
	if err != nil {
		cli.PrintLoadError(stderr, err)
		return 1
	}
	tiers, keys, err := skillsCaller(cfg)
	if le := (*callers.LoadError)(nil); errors.As(err, &le) {
		cli.PrintLoadError(stderr, err)
		return 1
	} else if err != nil {
		fmt.Fprintln(stderr, "a2ad:", err)
		return 2
	}
	if proto == exposure.A2A {
		for _, p := range UnnamedTiers(cat, cfg.Tier, keys) {
			fmt.Fprintln(stderr, "a2ad: warning:", p)
		}
	}
	policy := cfg.Policy
	views := make([]SkillView, 0, len(cat.Functions))
	exposed := 0
	for _, f := range cat.Functions {
		d := policy.DecideIn(proto, f.ID, f.Metadata, tiers)
		if d.Exposed {
			exposed++
		}
		v := SkillView{ID: f.ID, Backend: f.Backend.Kind(), Exposed: d.Exposed, Reason: string(d.Reason)}
		if proto == exposure.MCP {
			v.Tool = exposure.ToolName(f.ID)
		}
		views = append(views, v)
	}
	if cfg.Format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		doc := map[string]any{"tier": cfg.Tier, "exposeAll": cfg.ExposeAll, "protocol": proto, "functions": views}
		if cfg.Caller != "" {
			doc["caller"], doc["callerTiers"] = cfg.Caller, tiers
		}
		if err := enc.Encode(doc); err != nil {
			fmt.Fprintln(stderr, "a2ad:", err)
			return 1
		}
		return 0
	}
	return printSkills(stdout, cfg, proto, cat.Version, len(cat.Functions), exposed, views)
}

// printSkills prints the text of a2ad skills: a summary line, then a
// table of the functions of proto's view.
func printSkills(stdout io.Writer, cfg Settings, proto exposure.Protocol, version string, total, exposed int, views []SkillView) int {
	tier := cfg.Tier
	if tier == "" {
		tier = "(none)"
	}
	if cfg.Caller != "" {
		tier += fmt.Sprintf(", caller %s", cfg.Caller)
	}
	if proto == exposure.MCP {
		// --expose-all reaches A2A only: MCP tools are always opted in.
		fmt.Fprintf(stdout, "catalog %s (version %s), tier %s, MCP: %d of %d functions exposed as tools\n\n",
			cfg.Catalog, version, tier, exposed, total)
	} else {
		fmt.Fprintf(stdout, "catalog %s (version %s), tier %s, expose-all %v: %d of %d functions exposed\n\n",
			cfg.Catalog, version, tier, cfg.ExposeAll, exposed, total)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if proto == exposure.MCP {
		fmt.Fprintln(tw, "FUNCTION\tTOOL\tBACKEND\tEXPOSED\tREASON")
	} else {
		fmt.Fprintln(tw, "FUNCTION\tBACKEND\tEXPOSED\tREASON")
	}
	for _, v := range views {
		yes := "no"
		if v.Exposed {
			yes = "yes"
		}
		if proto == exposure.MCP {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.ID, v.Tool, v.Backend, yes, v.Reason)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.ID, v.Backend, yes, v.Reason)
		}
	}
	if err := tw.Flush(); err != nil {
		return 1
	}
	return 0
}

// Validate is a2ad validate: it checks a catalogue (args[0], else
// cfg.Catalog) and prints every problem; it exits 1 if there is one.
func Validate(cfg Settings, args []string, stdout, stderr io.Writer) int {
	path := cfg.Catalog
	if len(args) > 0 {
		path = args[0]
	}
	if path == "" {
		fmt.Fprintln(stderr, "a2ad: validate: give the catalogue file (--catalog or as argument)")
		return 2
	}
	cat, err := functions.Load(path, functions.LoadOptions{})
	if err != nil {
		cli.PrintLoadError(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: ok, %d functions (version %s)\n", path, len(cat.Functions), cat.Version)
	return 0
}

// skillsCaller is the tiers of --caller, a caller of --keys, for a2ad
// skills to show its view without its secret (nil without --caller),
// and the keys file if one is given.
func skillsCaller(cfg Settings) ([]string, *callers.Keys, error) {
	if cfg.Keys == "" {
		if cfg.Caller != "" {
			return nil, nil, fmt.Errorf("caller: --caller %s needs --keys, the keys file it is in", cfg.Caller)
		}
		return nil, nil, nil
	}
	keys, err := callers.LoadKeys(cfg.Keys)
	if err != nil || cfg.Caller == "" {
		return nil, keys, err
	}
	var ids []string
	for _, k := range keys.List() {
		if k.CallerID == cfg.Caller {
			return k.Tiers, keys, nil
		}
		ids = append(ids, k.CallerID)
	}
	guess := ""
	if g := suggest.Closest(cfg.Caller, ids); g != "" {
		guess = fmt.Sprintf(" (did you mean %q?)", g)
	}
	return nil, nil, fmt.Errorf("caller: no caller %q in the keys file %s%s", cfg.Caller, cfg.Keys, guess)
}
