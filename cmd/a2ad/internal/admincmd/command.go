package admincmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
)

// command is a group of subcommands that work through a running a2ad's
// admin listener: a2ad push and a2ad tasks. It is the one home of what
// they share: the help and unknown-subcommand answers, --server
// (A2AD_SERVER), flags before or after the positional arguments, and
// the client.
type command struct {
	name  string   // "push"
	usage string   // the text of --help
	subs  []string // the subcommands
	// flags defines sub's own flags on fs; nil for none.
	flags func(sub string, fs *flag.FlagSet)
}

// run is one parsed command line of a command, its client open.
type run struct {
	sub string
	fs  *flag.FlagSet
	pos []string // the positional arguments, in order
	c   *admin.Client
}

// start parses args (the subcommand first) and opens the client. It
// returns the run, or nil and the exit code when the command ends here:
// help, or bad usage. The caller closes run.c.
func (ac command) start(args []string, env cli.Env) (*run, int) {
	stdout, stderr := env.Stdout, env.Stderr
	if len(args) == 0 {
		fmt.Fprint(stderr, ac.usage)
		return nil, 2
	}
	sub := args[0]
	switch {
	case sub == "help" || sub == "-h" || sub == "--help":
		fmt.Fprint(stdout, ac.usage)
		return nil, 0
	case !slices.Contains(ac.subs, sub):
		return nil, cli.UnknownCommand(stderr, "a2ad", ac.name+" command", sub, ac.subs, ac.usage)
	}
	r := &run{sub: sub, fs: flag.NewFlagSet("a2ad "+ac.name+" "+sub, flag.ContinueOnError)}
	server := env.AdminServer()
	r.fs.StringVar(&server, "server", server, "base URL of the admin listener (env A2AD_SERVER)")
	if ac.flags != nil {
		ac.flags(sub, r.fs)
	}
	for rest := args[1:]; ; rest = r.fs.Args()[1:] {
		if code := cli.Parse(r.fs, rest, stderr); code >= 0 {
			return nil, code
		}
		if r.fs.NArg() == 0 {
			break
		}
		r.pos = append(r.pos, r.fs.Arg(0))
	}
	c, err := NewClient(ac.name+" "+sub, server, stderr)
	if c == nil {
		return nil, err
	}
	r.c = c
	return r, -1
}

// NewClient is the client of the admin listener at server, for the
// command what; or nil and the exit code of bad usage, the problem
// printed, when server is no base URL.
func NewClient(what, server string, stderr io.Writer) (*admin.Client, int) {
	c, err := admin.NewClient(server)
	if err != nil {
		return nil, cli.UsageError(stderr, fmt.Sprintf("%s: --server: want the admin listener's base URL, e.g. %s, not %q", what, admin.DefaultURL, server))
	}
	return c, -1
}

// Error prints the error of a call to the admin listener and returns
// the exit code: 2 for a request the server calls bad (400), else 1.
func Error(stderr io.Writer, what string, err error) int {
	var se *admin.StatusError
	if !errors.As(err, &se) {
		fmt.Fprintf(stderr, "a2ad: %s: %v\n", what, err)
		return 1
	}
	msg := se.Message
	if msg == "" {
		msg = se.Status
	}
	fmt.Fprintf(stderr, "a2ad: %s: %s (HTTP %d)\n", what, msg, se.Code)
	if se.Code == http.StatusBadRequest {
		return 2
	}
	return 1
}

// printJSON prints raw, an endpoint's JSON, indented.
func printJSON(stdout, stderr io.Writer, raw []byte) int {
	var b bytes.Buffer
	if err := json.Indent(&b, bytes.TrimSpace(raw), "", "  "); err != nil {
		fmt.Fprintln(stderr, "a2ad:", err)
		return 1
	}
	b.WriteByte('\n')
	_, _ = stdout.Write(b.Bytes())
	return 0
}
