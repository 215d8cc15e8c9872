package admincmd

// a2ad tasks list|get|cancel: the operator view from the command line.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
)

const tasksUsage = `a2ad tasks: inspect and cancel the tasks of a running a2ad, through its
admin listener (loopback callers only).

Usage:
  a2ad tasks list [--state S] [--function F] [--caller C] [--limit N] [--page-token T] [--json]
                          tasks, newest first; --caller "" is the anonymous caller
  a2ad tasks get ID [--json]
                          one task and its event log
  a2ad tasks cancel ID    cancel a task that is not terminal, as its caller would

Every command takes --server URL, the admin listener's base URL (default
http://127.0.0.1:8081, or A2AD_SERVER). Exit codes: 0 done, 1 failed
(unknown task, not cancelable, server unreachable), 2 bad usage.
`

// tasksCommand is a2ad tasks.
var tasksCommand = command{name: "tasks", usage: tasksUsage, subs: []string{"list", "get", "cancel"},
	flags: func(sub string, fs *flag.FlagSet) {
		if sub != "cancel" {
			fs.Bool("json", false, "print the endpoint's JSON")
		}
		if sub == "list" {
			fs.String("state", "", "only tasks in this state")
			fs.String("function", "", "only tasks that call this function")
			fs.String("caller", "", `only this caller's tasks ("" for the anonymous caller)`)
			fs.Int("limit", 0, "tasks per page, 1 to 1000 (default 100)")
			fs.String("page-token", "", "the next page token a previous page printed")
		}
	}}

// Tasks runs "a2ad tasks <sub> ..." and returns the exit code.
func Tasks(ctx context.Context, args []string, env cli.Env) int {
	run, code := tasksCommand.start(args, env)
	if run == nil {
		return code
	}
	defer run.c.Close()
	stdout, stderr := env.Stdout, env.Stderr
	c, sub, pos := run.c, run.sub, run.pos
	o := tasksOptions{asJSON: cli.FlagBool(run.fs, "json"), filter: taskFilter(run.fs)}
	what := "tasks " + sub

	if sub == "list" {
		if len(pos) > 0 {
			return cli.UsageError(stderr, fmt.Sprintf("tasks list: unexpected argument %q (filters are flags)", pos[0]))
		}
		list, raw, err := c.Tasks(ctx, o.filter)
		return o.answer(stdout, stderr, what, raw, err, func() { printTaskList(stdout, list) })
	}

	if len(pos) != 1 {
		return cli.UsageError(stderr, fmt.Sprintf("tasks %s: give one task id (got %d arguments)", sub, len(pos)))
	}
	id := pos[0]
	if sub == "get" {
		view, raw, err := c.Task(ctx, id)
		return o.answer(stdout, stderr, what, raw, err, func() { printTaskView(stdout, view) })
	}
	view, err := c.Cancel(ctx, id)
	if err != nil {
		return Error(stderr, what, err)
	}
	fmt.Fprintf(stdout, "canceled task %s (caller %s, function %s): it is %s\n",
		view.Task.ID, callerName(view.Task.Caller), orDash(view.Task.Function), view.Task.State)
	return 0
}

// tasksOptions are the flags of a2ad tasks; the filter is list's only.
type tasksOptions struct {
	asJSON bool
	filter admin.TaskFilter
}

// taskFilter reads list's filter flags from fs. A filter is set only when
// its flag is given: --caller "" is the anonymous caller.
func taskFilter(fs *flag.FlagSet) admin.TaskFilter {
	var f admin.TaskFilter
	fs.Visit(func(fl *flag.Flag) {
		v := fl.Value.String()
		switch fl.Name {
		case "state":
			f.State = &v
		case "function":
			f.Function = &v
		case "caller":
			f.Caller = &v
		case "limit":
			n := fl.Value.(flag.Getter).Get().(int)
			f.Limit = &n
		case "page-token":
			f.PageToken = &v
		}
	})
	return f
}

// answer ends a list or a get: with the call's error, the JSON the
// endpoint served (--json), or the text printText writes. It returns the
// exit code.
func (o tasksOptions) answer(stdout, stderr io.Writer, what string, raw []byte, err error, printText func()) int {
	if err != nil {
		return Error(stderr, what, err)
	}
	if o.asJSON {
		return printJSON(stdout, stderr, raw)
	}
	printText()
	return 0
}

// timeText is a time as the tables show it: UTC, to the second.
func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func callerName(c *string) string {
	if c == nil {
		return "(anonymous)"
	}
	return *c
}

func orDash(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func listOrDash(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ", ")
}

func printTaskList(w io.Writer, list *admin.TaskList) {
	if len(list.Tasks) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tFUNCTION\tCALLER\tEVENTS\tUPDATED")
		for _, t := range list.Tasks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", t.ID, t.State, orDash(t.Function), callerName(t.Caller), t.Events, timeText(t.UpdatedAt))
		}
		tw.Flush()
	}
	switch {
	case list.NextPageToken != nil && len(list.Tasks) == 0:
		fmt.Fprintf(w, "no matching task among the %d scanned; more to scan: --page-token %s\n", list.ScannedTasks, *list.NextPageToken)
	case list.NextPageToken != nil:
		fmt.Fprintf(w, "more: --page-token %s\n", *list.NextPageToken)
	case len(list.Tasks) == 0:
		fmt.Fprintln(w, "no matching task")
	}
}

func printTaskView(w io.Writer, v *admin.TaskView) {
	t := &v.Task
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, val string) { fmt.Fprintf(tw, "%s\t%s\n", k, val) }
	row("id", t.ID)
	row("context", t.ContextID)
	row("state", string(t.State))
	row("status at", orDash(t.StatusTimestamp))
	row("caller", callerName(t.Caller))
	row("tiers", listOrDash(t.CallerTiers))
	row("function", orDash(t.Function))
	row("created", timeText(t.CreatedAt))
	row("updated", timeText(t.UpdatedAt))
	row("history", fmt.Sprintf("%s, %s, input of %s", cli.Count(t.HistoryMessages, "message"), cli.Count(t.Artifacts, "artifact"), cli.Count(t.InputBytes, "byte")))
	row("message ids", listOrDash(t.MessageIDs))
	if len(t.WebhookConfigs) == 0 {
		row("webhooks", "-")
	}
	for i, h := range t.WebhookConfigs {
		k := ""
		if i == 0 {
			k = "webhooks"
		}
		auth := "no token"
		if h.HasToken {
			auth = "token"
		}
		if len(h.AuthSchemes) > 0 {
			auth += ", auth " + strings.Join(h.AuthSchemes, " ")
		}
		row(k, fmt.Sprintf("%s %s (A2A %s, %s)", h.ID, h.URL, h.WireVersion, auth))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tKIND\tSTATE\tTIMESTAMP\tDETAIL")
	for _, e := range v.Events {
		st := "-"
		if e.State != nil {
			st = string(*e.State)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", e.Seq, e.Kind, st, orDash(e.Timestamp), eventDetail(&e))
	}
	tw.Flush()
}

// eventDetail is a line about an event: a status message's first text,
// or an artifact's id and chunking, cut to 60 characters.
func eventDetail(e *admin.Event) string {
	var d string
	switch e.Kind {
	case "status":
		var st struct {
			Message *struct {
				Parts []struct {
					Kind string `json:"kind"`
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"message"`
		}
		if json.Unmarshal(e.Status, &st) == nil && st.Message != nil {
			for _, p := range st.Message.Parts {
				if p.Kind == "text" {
					d = strconv.Quote(p.Text)
					break
				}
			}
		}
	case "artifact":
		d = orDash(e.ArtifactID)
		if e.Append {
			d += " (append)"
		}
		if e.LastChunk {
			d += " (last chunk)"
		}
	}
	if utf8.RuneCountInString(d) > 60 {
		d = string([]rune(d)[:59]) + "…"
	}
	if d == "" {
		d = "-"
	}
	return d
}
