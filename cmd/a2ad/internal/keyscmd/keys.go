package keyscmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/admincmd"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
)

const keysUsage = `Usage:
  a2ad keys create --keys FILE --id CALLER [--tier TIER[,TIER...]] [--force]
      add an enabled key for CALLER to FILE (created if missing) and print
      its secret, once: FILE keeps only the secret's SHA-256 hash. A new
      caller needs --tier; a caller in FILE gets one more key (its tiers),
      so that it can rotate: create, move the partner, revoke the old key.
      With --force (and --tier), CALLER's entry is replaced instead: the new
      key alone, enabled, without the old entry's own limits
  a2ad keys revoke --keys FILE --id CALLER [--key-id K]
      mark key K of CALLER revoked, or every key of CALLER in force
  a2ad keys list --keys FILE [--server URL]
      list the callers in FILE with their state, rates, storage limits,
      calls and request bytes a second ("default": the server's flag
      applies) and tiers; then their keys: id, state, created, revoked and,
      with --server (the admin listener of a running a2ad), last use

A running a2ad reads the changed file on a reload (a2ad reload, or SIGHUP).
`

// Run runs "a2ad keys ..." and returns the exit code.
func Run(_ context.Context, args []string, env cli.Env) int {
	stdout, stderr := env.Stdout, env.Stderr
	if len(args) == 0 {
		fmt.Fprint(stderr, keysUsage)
		return 2
	}
	sub, rest := args[0], args[1:]
	fs := flag.NewFlagSet("a2ad keys "+sub, flag.ContinueOnError)
	path, _ := env.Lookup(cli.EnvName("keys"))
	fs.StringVar(&path, "keys", path, "the keys file (or A2AD_KEYS)")
	var id, tiers, keyID, server string
	var force bool
	switch sub {
	case "create":
		fs.BoolVar(&force, "force", false, "replace the caller's entry, if any, by one with the new key alone")
		fs.StringVar(&id, "id", "", "the caller's id: 1 to 64 of A-Z a-z 0-9 . _ : -")
		fs.StringVar(&tiers, "tier", "", "a new caller's tiers, comma-separated")
	case "revoke":
		fs.StringVar(&id, "id", "", "the caller whose keys to revoke")
		fs.StringVar(&keyID, "key-id", "", "the key to revoke (default: every key of the caller in force)")
	case "list":
		fs.StringVar(&server, "server", "", "base URL of a running a2ad's admin listener, for the keys' last use")
	case "help", "-h", "--help":
		fmt.Fprint(stdout, keysUsage)
		return 0
	default:
		return cli.UnknownCommand(stderr, "a2ad keys", "command", sub, []string{"create", "revoke", "list"}, keysUsage)
	}
	if code := cli.Parse(fs, rest, stderr); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "a2ad keys %s: unexpected argument %q\n", sub, fs.Arg(0))
		return 2
	}
	if path == "" {
		fmt.Fprintf(stderr, "a2ad keys %s: no keys file given (--keys or A2AD_KEYS)\n", sub)
		return 2
	}
	if sub == "list" {
		return listKeys(path, server, stdout, stderr)
	}
	if id == "" {
		fmt.Fprintf(stderr, "a2ad keys %s: --id is required\n", sub)
		return 2
	}
	if sub == "revoke" {
		return revokeKeys(path, id, keyID, stdout, stderr)
	}
	return createKey(path, id, cli.SplitList(tiers), force, stdout, stderr)
}

func createKey(path, id string, tiers []string, force bool, stdout, stderr io.Writer) int {
	put := callers.AppendKey
	if force {
		put = callers.ReplaceKey
	}
	nk, err := put(path, id, tiers, time.Now())
	if err != nil {
		var le *callers.LoadError
		if errors.As(err, &le) {
			cli.PrintLoadError(stderr, err)
			return 1
		}
		fmt.Fprintln(stderr, "a2ad keys create:", err)
		return 1
	}
	// The secret goes to stdout alone, so that it can be piped; the note
	// goes to stderr.
	fmt.Fprintln(stdout, nk.Secret)
	what := "created caller %q with key %s in %s.\n"
	if nk.Replaced {
		what = "replaced the entry of caller %q by one with the key %s alone in %s.\n"
	} else if !nk.NewCaller {
		what = "added to caller %q the key %s in %s: its other keys still work until you revoke them.\n"
	}
	fmt.Fprintf(stderr, what+
		"This is the only time the secret is shown: give it to the caller, who sends it as\n"+
		"  Authorization: Bearer <secret>   or   X-API-Key: <secret>\n"+
		"A running a2ad picks the key up on a reload (a2ad reload, or SIGHUP).\n", id, nk.ID, path)
	return 0
}

func revokeKeys(path, id, keyID string, stdout, stderr io.Writer) int {
	ids, err := callers.RevokeKeys(path, id, keyID, time.Now())
	if err != nil {
		var le *callers.LoadError
		if errors.As(err, &le) {
			cli.PrintLoadError(stderr, err)
		} else {
			fmt.Fprintln(stderr, "a2ad keys revoke:", err)
		}
		return 1
	}
	for _, k := range ids {
		fmt.Fprintln(stdout, k)
	}
	fmt.Fprintf(stderr, "revoked %d key(s) of caller %q in %s.\n"+
		"A running a2ad refuses them, and ends their streams, once it reloads the file (a2ad reload, or SIGHUP).\n", len(ids), id, path)
	return 0
}

// ownLimit shows a key's own limit: "default" when it has none (the
// server's flag applies), "unlimited" for 0.
func ownLimit[T int | int64](n *T) string {
	switch {
	case n == nil:
		return "default"
	case *n == 0:
		return "unlimited"
	}
	return strconv.FormatInt(int64(*n), 10)
}

func listKeys(path, server string, stdout, stderr io.Writer) int {
	ks, err := callers.LoadKeys(path)
	if err != nil {
		cli.PrintLoadError(stderr, err)
		return 1
	}
	var used map[string]*time.Time // caller + "\x00" + key id → last use
	if server != "" {
		c, code := admincmd.NewClient("keys list", server, stderr)
		if c == nil {
			return code
		}
		defer c.Close()
		list, err := c.Keys(context.Background())
		if err != nil {
			return admincmd.Error(stderr, "keys list", err)
		}
		used = map[string]*time.Time{}
		for _, k := range list.Keys {
			used[k.Caller+"\x00"+k.KeyID] = k.LastUsed
		}
	}
	keys := ks.List()
	const row = "%-24s %-8s %-20s %-10s %-14s %-8s %-9s %-11s %s\n"
	fmt.Fprintf(stdout, row, "CALLER", "STATE", "RATE", "TASKS", "BYTES", "HISTORY", "CALLS", "BYTES/S", "TIERS")
	for i, k := range keys {
		if i > 0 && keys[i-1].CallerID == k.CallerID {
			continue // one row per caller
		}
		state := "enabled"
		if !k.Enabled {
			state = "disabled"
		}
		rate := "default"
		if k.Rate != nil {
			rate = fmt.Sprintf("%g/s burst %d", k.Rate.PerSecond, k.Rate.Burst)
		}
		fmt.Fprintf(stdout, row, k.CallerID, state, rate,
			ownLimit(k.Limits.QuotaTasks), ownLimit(k.Limits.QuotaBytes), ownLimit(k.Limits.MaxHistory),
			ownLimit(k.Limits.MaxCalls), ownLimit(k.Limits.RateBytes), strings.Join(k.Tiers, ","))
	}
	printKeyRows(stdout, keys, used)
	return 0
}

// printKeyRows prints the table of keys. used holds the last uses a
// server gave, nil when none was asked: "-" then, "never" for a key the
// server has not seen used.
func printKeyRows(w io.Writer, keys []callers.Key, used map[string]*time.Time) {
	const row = "%-24s %-10s %-9s %-21s %-21s %s\n"
	fmt.Fprintf(w, "\n"+row, "CALLER", "KEY", "STATE", "CREATED", "REVOKED", "LAST USED")
	for _, k := range keys {
		last := "-"
		if used != nil {
			last = "never"
			if t := used[k.CallerID+"\x00"+k.ID]; t != nil {
				last = t.UTC().Format(time.RFC3339)
			}
		}
		fmt.Fprintf(w, row, k.CallerID, k.ID, k.State(), timeOrDash(k.Created), timeOrDash(k.Revoked), last)
	}
}

func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
