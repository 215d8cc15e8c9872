package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/a2ad/a2ad/callers"
)

const keysUsage = `Usage:
  a2ad keys create --keys FILE --id CALLER --tier TIER[,TIER...] [--force]
      add an enabled key for CALLER to FILE (created if missing) and print
      its secret, once: FILE keeps only the secret's SHA-256 hash. With
      --force, a key CALLER has already is replaced (a new secret, enabled,
      without the old entry's own limits)
  a2ad keys list --keys FILE
      list the callers in FILE with their state, rates, storage limits,
      calls and request bytes a second ("default": the server's flag
      applies) and tiers

A running a2ad reads the changed file on SIGHUP.
`

// keysCommand runs "a2ad keys ...".
func keysCommand(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, keysUsage)
		return 2
	}
	sub, rest := args[0], args[1:]
	fs := flag.NewFlagSet("a2ad keys "+sub, flag.ContinueOnError)
	path, _ := lookupEnv(envName("keys"))
	fs.StringVar(&path, "keys", path, "the keys file (or A2AD_KEYS)")
	var id, tiers string
	var force bool
	switch sub {
	case "create":
		fs.BoolVar(&force, "force", false, "replace the key the caller has already, if any")
		fs.StringVar(&id, "id", "", "the caller's id: 1 to 64 of A-Z a-z 0-9 . _ : -")
		fs.StringVar(&tiers, "tier", "", "the caller's tiers, comma-separated")
	case "list":
	case "help", "-h", "--help":
		fmt.Fprint(stdout, keysUsage)
		return 0
	default:
		fmt.Fprintf(stderr, "a2ad keys: unknown command %q\n\n%s", sub, keysUsage)
		return 2
	}
	if err := parseFlags(fs, rest, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, err)
		return 2
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
		return listKeys(path, stdout, stderr)
	}
	if id == "" {
		fmt.Fprintln(stderr, "a2ad keys create: --id is required")
		return 2
	}
	if len(splitList(tiers)) == 0 {
		fmt.Fprintln(stderr, "a2ad keys create: --tier is required (one or more tiers, comma-separated)")
		return 2
	}
	put := callers.AppendKey
	if force {
		put = callers.ReplaceKey
	}
	secret, err := put(path, id, splitList(tiers))
	if err != nil {
		fmt.Fprintln(stderr, "a2ad keys create:", err)
		return 1
	}
	// The secret goes to stdout alone, so that it can be piped; the note
	// goes to stderr.
	fmt.Fprintln(stdout, secret)
	fmt.Fprintf(stderr, "created a key for caller %q (tiers %s) in %s.\n"+
		"This is the only time the secret is shown: give it to the caller, who sends it as\n"+
		"  Authorization: Bearer <secret>   or   X-API-Key: <secret>\n"+
		"A running a2ad picks the key up on a reload (a2ad reload, or SIGHUP).\n", id, strings.Join(splitList(tiers), ","), path)
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

func listKeys(path string, stdout, stderr io.Writer) int {
	ks, err := callers.LoadKeys(path)
	if err != nil {
		printLoadError(stderr, err)
		return 1
	}
	const row = "%-24s %-8s %-20s %-10s %-14s %-8s %-9s %-11s %s\n"
	fmt.Fprintf(stdout, row, "CALLER", "STATE", "RATE", "TASKS", "BYTES", "HISTORY", "CALLS", "BYTES/S", "TIERS")
	for _, k := range ks.List() {
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
	return 0
}
