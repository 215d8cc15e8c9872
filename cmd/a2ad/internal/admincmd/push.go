package admincmd

// a2ad push list|retry|drop: the push dead letters of a running server,
// through its admin listener, as a2ad tasks does.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
)

const pushUsage = `a2ad push: the push deliveries a running a2ad gave up on (dead letters),
through its admin listener (loopback callers only).

Usage:
  a2ad push list [--json]   the dead letters, oldest first
  a2ad push retry ID|--all  put a dead letter (or every one) back in the outbox, its
                            attempts reset, once the receiver is fixed; it reports the
                            task as it stands when it is sent
  a2ad push drop ID         delete a dead letter

Every command takes --server URL, the admin listener's base URL (default
http://127.0.0.1:8081, or A2AD_SERVER). Exit codes: 0 done, 1 failed
(unknown dead letter, server unreachable), 2 bad usage.
`

// pushCommand is a2ad push.
var pushCommand = command{name: "push", usage: pushUsage, subs: []string{"list", "retry", "drop"},
	flags: func(sub string, fs *flag.FlagSet) {
		switch sub {
		case "list":
			fs.Bool("json", false, `print the dead letters as JSON, {"deadLetters": [...]}`)
		case "retry":
			fs.Bool("all", false, "retry every dead letter")
		}
	}}

// Push runs "a2ad push <sub> ..." and returns the exit code.
func Push(ctx context.Context, args []string, env cli.Env) int {
	run, code := pushCommand.start(args, env)
	if run == nil {
		return code
	}
	defer run.c.Close()
	stdout, stderr := env.Stdout, env.Stderr
	sub, pos, all := run.sub, run.pos, cli.FlagBool(run.fs, "all")
	p := &pushRun{c: run.c, what: "push " + sub, stdout: stdout, stderr: stderr}
	switch {
	case sub == "list" && len(pos) > 0:
		return cli.UsageError(stderr, fmt.Sprintf("push list: unexpected argument %q", pos[0]))
	case sub == "list":
		return p.list(ctx, cli.FlagBool(run.fs, "json"))
	case all && len(pos) > 0:
		return cli.UsageError(stderr, "push retry: give a dead letter id or --all, not both")
	case all:
		return p.retryAll(ctx)
	case len(pos) != 1:
		return cli.UsageError(stderr, fmt.Sprintf("push %s: give one dead letter id (got %d arguments)", sub, len(pos)))
	}
	id, err := strconv.ParseUint(pos[0], 10, 64)
	if err != nil || id == 0 {
		return cli.UsageError(stderr, fmt.Sprintf("push %s: the dead letter id must be a positive integer, not %q", sub, pos[0]))
	}
	return p.one(ctx, sub, id)
}

// pushRun is one run of a2ad push.
type pushRun struct {
	c              *admin.Client
	what           string
	stdout, stderr io.Writer
}

// all returns every dead letter, oldest first, reading page after page.
func (p *pushRun) all(ctx context.Context) ([]admin.DeadLetter, error) {
	var out []admin.DeadLetter
	tok := ""
	for {
		page, err := p.c.DeadLetters(ctx, 1000, tok)
		if err != nil {
			return nil, err
		}
		out = append(out, page.DeadLetters...)
		if page.NextPageToken == nil {
			return out, nil
		}
		tok = *page.NextPageToken
	}
}

func (p *pushRun) list(ctx context.Context, asJSON bool) int {
	list, err := p.all(ctx)
	if err != nil {
		return Error(p.stderr, p.what, err)
	}
	if asJSON {
		raw, err := json.Marshal(admin.DeadLetterList{DeadLetters: list})
		if err != nil {
			return Error(p.stderr, p.what, err)
		}
		return printJSON(p.stdout, p.stderr, raw)
	}
	tw := tabwriter.NewWriter(p.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTASK\tWEBHOOK\tURL\tATTEMPTS\tDEAD AT\tLAST ERROR")
	for _, d := range list {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\n", d.ID, d.TaskID, d.ConfigID, d.URL, d.Attempts, timeText(d.DeadAt), d.LastError)
	}
	_ = tw.Flush()
	fmt.Fprintln(p.stdout, cli.Count(len(list), "dead letter"))
	return 0
}

// retryAll retries the dead letters there are when it starts: one that
// dies again meanwhile waits for the next run.
func (p *pushRun) retryAll(ctx context.Context) int {
	list, err := p.all(ctx)
	if err != nil {
		return Error(p.stderr, p.what, err)
	}
	code := 0
	for _, d := range list {
		if c := p.one(ctx, "retry", d.ID); c != 0 {
			code = c
		}
	}
	fmt.Fprintf(p.stdout, "retried %s\n", cli.Count(len(list), "dead letter"))
	return code
}

// one retries or drops dead letter id.
func (p *pushRun) one(ctx context.Context, sub string, id uint64) int {
	do, verb := p.c.RetryDeadLetter, "retried"
	if sub == "drop" {
		do, verb = p.c.DropDeadLetter, "dropped"
	}
	d, err := do(ctx, id)
	if err != nil {
		return Error(p.stderr, fmt.Sprintf("%s %d", p.what, id), err)
	}
	fmt.Fprintf(p.stdout, "%s dead letter %d (task %s, webhook %s)\n", verb, d.ID, d.TaskID, d.ConfigID)
	return 0
}
