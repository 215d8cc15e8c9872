package config

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
)

// Groups are the settings by what they concern, in the order `a2ad
// serve --help` and docs/reference/flags.md list them. Every flag is in
// one group (TestFlagGroups).
var Groups = []struct {
	Name  string
	Flags []string
}{
	{"Catalogue and exposure", []string{"catalog", "tier", "expose-all", "hidden-prefixes", "mcp", "mcp-task-after", "config", "format", "protocol", "caller"}},
	{"Listeners", []string{"listen", "base-url", "grpc-listen", "admin-listen", "cors-origins", "trusted-proxies",
		"read-header-timeout", "read-timeout", "idle-timeout", "min-body-rate", "max-body-bytes", "max-conns",
		"max-conns-per-ip", "sse-keepalive", "shutdown-delay", "shutdown-grace"}},
	{"TLS", []string{"tls-cert", "tls-key", "tls-client-ca"}},
	{"Callers", []string{"keys", "allow-anonymous", "anonymous-tier", "oidc-issuer", "oidc-audience", "oidc-caller-claim",
		"oidc-tiers-claim", "auth-fail-burst", "auth-fail-rate", "idempotency-window"}},
	{"Limits", []string{"rate", "rate-burst", "rate-buckets", "rate-bytes", "rate-bytes-burst", "max-inflight",
		"max-inflight-per-caller", "max-calls-per-caller", "max-concurrent", "max-queue", "blocking-timeout",
		"quota-tasks", "quota-bytes", "max-history", "max-task-artifact-bytes", "history-read-bytes", "list-page-bytes",
		"max-answer-bytes-per-caller"}},
	{"Store", []string{"store", "store-max-conns", "store-lock-timeout", "lease-ttl", "retention", "retention-interval"}},
	{"Push notifications", []string{"push-allow", "push-concurrency", "push-max-attempts", "push-timeout"}},
	{"Agent card", []string{"name", "description", "provider-org", "provider-url", "documentation-url", "icon-url",
		"card-versions", "card-signing-key"}},
	{"Logs, audit and telemetry", []string{"log-format", "log-level", "audit-log", "otel-endpoint"}},
}

// GroupedFlags calls each with the name of each group and its flags that
// fs has, in order; a flag of no group comes last, under "Other".
func GroupedFlags(fs *flag.FlagSet, each func(group string, flags []*flag.Flag)) {
	seen := map[string]bool{}
	for _, g := range Groups {
		var in []*flag.Flag
		for _, name := range g.Flags {
			if f := fs.Lookup(name); f != nil {
				in = append(in, f)
				seen[name] = true
			}
		}
		if len(in) > 0 {
			each(g.Name, in)
		}
	}
	var rest []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !seen[f.Name] {
			rest = append(rest, f)
		}
	})
	if len(rest) > 0 {
		each("Other", rest)
	}
}

// printGroupedDefaults is flag.PrintDefaults by group, for a command of
// many flags (serve): each group's flags under its name, in the flag
// package's form.
func printGroupedDefaults(w io.Writer, fs *flag.FlagSet) {
	GroupedFlags(fs, func(group string, flags []*flag.Flag) {
		fmt.Fprintf(w, "\n%s:\n", group)
		for _, f := range flags {
			kind, usage := flag.UnquoteUsage(f)
			line := "  -" + f.Name // as the flag package prints them
			if kind != "" {
				line += " " + kind
			}
			line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
			switch f.DefValue {
			case "", "false", "0", "0s":
			default:
				if kind == "string" {
					line += fmt.Sprintf(" (default %q)", f.DefValue)
				} else {
					line += fmt.Sprintf(" (default %v)", f.DefValue)
				}
			}
			fmt.Fprintln(w, line)
		}
	})
}

// parseFlags parses args with fs, the flags of a command that reads the
// settings (see cli.ParseFlags); serve's many flags print by group.
func parseFlags(fs *flag.FlagSet, args []string, help io.Writer) error {
	return cli.ParseFlags(fs, args, help, func(w io.Writer, fs *flag.FlagSet) {
		if countFlags(fs) > 20 {
			printGroupedDefaults(w, fs) // serve's many flags, by what they concern
			return
		}
		fs.SetOutput(w)
		fs.PrintDefaults()
	})
}

// countFlags is how many flags fs defines.
func countFlags(fs *flag.FlagSet) int {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n
}
