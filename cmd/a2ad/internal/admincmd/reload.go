package admincmd

// a2ad reload: the admin listener's POST /admin/v1/reload from the
// command line, so that an operator reloads the server itself, whatever
// process started it (a SIGHUP to "go run" reaches go, not a2ad).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
)

const reloadUsage = `Usage:
  a2ad reload [--server URL] [--json]
      make a running a2ad read its catalogue and keys file again and reopen
      its audit log, as SIGHUP does, through its admin listener (loopback
      callers only). A file with problems keeps what is in force.

--server is the admin listener's base URL (default http://127.0.0.1:8081,
or A2AD_SERVER). Exit codes: 0 reloaded, 1 a part kept what was in
force (its problems are printed) or the server is unreachable, 2 bad usage.
`

// Reload runs "a2ad reload ..." and returns the exit code.
func Reload(ctx context.Context, args []string, env cli.Env) int {
	stdout, stderr := env.Stdout, env.Stderr
	fs := flag.NewFlagSet("a2ad reload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, reloadUsage) }
	server := env.AdminServer()
	fs.StringVar(&server, "server", server, "base URL of the admin listener (env A2AD_SERVER)")
	asJSON := fs.Bool("json", false, "print the endpoint's JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		return cli.UsageError(stderr, fmt.Sprintf("reload: unexpected argument %q", fs.Arg(0)))
	}
	c, code := NewClient("reload", server, stderr)
	if c == nil {
		return code
	}
	defer c.Close()
	r, raw, err := c.Reload(ctx)
	if r == nil {
		return Error(stderr, "reload", err)
	}
	if *asJSON {
		printJSON(stdout, stderr, raw)
	} else {
		PrintReload(stdout, r)
	}
	if err != nil {
		fmt.Fprintln(stderr, "a2ad: reload: a part has problems and kept what was in force")
		return 1
	}
	return 0
}

// PrintReload prints what a reload did, part by part.
func PrintReload(w io.Writer, r *admin.ReloadReport) {
	cat := r.Catalog
	if cat.Reloaded {
		changed := "unchanged"
		if cat.Changed {
			changed = "changed"
		}
		fmt.Fprintf(w, "catalog    reloaded: version %s (%s), %s\n", cat.Version, changed, cli.Count(cat.Functions, "function"))
	} else {
		fmt.Fprintf(w, "catalog    not reloaded: version %s stays in force\n", cat.Version)
	}
	for _, p := range cat.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
	// Entries counts callers: a caller of a version 2 file has several keys.
	switch k := r.Keys; {
	case k == nil:
		fmt.Fprintln(w, "keys       none (no --keys)")
	case k.Reloaded:
		fmt.Fprintf(w, "keys       reloaded: %s, %s ended\n", cli.Count(k.Entries, "caller"), cli.Count(k.StreamsEnded, "stream"))
	default:
		fmt.Fprintf(w, "keys       not reloaded: the keys of %s stay in force\n", cli.Count(k.Entries, "caller"))
	}
	if r.Keys != nil {
		for _, p := range r.Keys.Problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	switch a := r.AuditLogReopened; {
	case a == nil:
		fmt.Fprintln(w, "audit log  no file of its own")
	case *a:
		fmt.Fprintln(w, "audit log  reopened")
	default:
		fmt.Fprintln(w, "audit log  not reopened (see the server's log)")
	}
	printTLSReload(w, r.TLS)
}

// printTLSReload prints the TLS part of a reload (none without --tls-cert).
func printTLSReload(w io.Writer, t *admin.TLSReload) {
	switch {
	case t == nil:
		return
	case t.Reloaded:
		fmt.Fprintf(w, "tls        reloaded: the certificate is valid until %s\n", t.NotAfter)
	default:
		fmt.Fprintf(w, "tls        not reloaded: the certificate in force (valid until %s) stays\n", t.NotAfter)
	}
	for _, p := range t.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
}
