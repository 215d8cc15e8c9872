package catalogcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/internal/suggest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
)

// The exit codes of a2ad call: how the call ended, as its task would.
const (
	callCompleted     = 0
	callFailed        = 1
	callUnusable      = 2 // bad flags, catalogue, function id or input: nothing ran
	callRejected      = 3 // the input does not match the input schema: nothing ran
	callInputRequired = 4
)

// maxCallInputBytes caps the input of a2ad call, read from stdin: the
// server's default --max-body-bytes.
const maxCallInputBytes = 1 << 20

// CallUsage is what a2ad call takes, and its exit codes.
const CallUsage = `usage: a2ad call [--catalog FILE] [flags] FUNCTION [INPUT]

Runs one function of the catalogue once, locally, as the server runs a
task's call: the input is checked against the input schema, the backend
is called with the function's timeout, progress is printed as it comes,
then the artifact a caller would get, or the failure text a caller would
read. No server, no store. INPUT is JSON (default {}), or - to read it
from stdin. The log (the function's stderr, and at debug level an excerpt
of a result that is not JSON) goes to stderr.

Exit codes: 0 completed, 1 failed, 3 input rejected, 4 input required,
2 nothing ran (flags, catalogue, unknown function, input not JSON).
`

// Call is a2ad call: args are FUNCTION [INPUT]. It returns the exit
// code.
func Call(ctx context.Context, cfg Settings, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 1 || len(args) > 2 {
		fmt.Fprint(stderr, CallUsage)
		return callUnusable
	}
	if cfg.Catalog == "" {
		fmt.Fprintln(stderr, "a2ad: catalog: no catalogue file given (--catalog or A2AD_CATALOG)")
		return callUnusable
	}
	log, err := cfg.Logger()
	if err != nil {
		fmt.Fprintln(stderr, "a2ad:", err)
		return callUnusable
	}
	input, err := callInput(args, stdin)
	if err != nil {
		fmt.Fprintln(stderr, "a2ad: input:", err)
		return callUnusable
	}
	cat, err := functions.Load(cfg.Catalog, functions.LoadOptions{})
	if err != nil {
		cli.PrintLoadError(stderr, err)
		return callUnusable
	}
	fn, ok := cat.Lookup(args[0])
	if !ok {
		ids := make([]string, len(cat.Functions))
		for i, f := range cat.Functions {
			ids[i] = f.ID
		}
		guess := ""
		if g := suggest.Closest(args[0], ids); g != "" {
			guess = fmt.Sprintf("did you mean %q? ", g)
		}
		fmt.Fprintf(stderr, "a2ad: no function %q in %s (%sa2ad skills --expose-all lists them)\n", args[0], cfg.Catalog, guess)
		return callUnusable
	}
	p := &callPrinter{w: stdout}
	status, artifacts, err := tasks.Try(ctx, fn, input, log, p.event)
	if err != nil {
		return p.rejected(err)
	}
	return p.end(status, artifacts)
}

// callInput is the input of a2ad call: args[1], - for stdin, or {} when
// left out; compacted, as it must be one JSON value.
func callInput(args []string, stdin io.Reader) (json.RawMessage, error) {
	raw := []byte("{}")
	if len(args) == 2 {
		raw = []byte(args[1])
	}
	if len(args) == 2 && args[1] == "-" {
		b, err := io.ReadAll(io.LimitReader(stdin, maxCallInputBytes+1))
		if err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
		}
		if len(b) > maxCallInputBytes {
			return nil, fmt.Errorf("more than %d bytes on stdin", maxCallInputBytes)
		}
		raw = b
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	return buf.Bytes(), nil
}

// callPrinter prints what a call reports and how it ended, one line each,
// on w: what a streaming caller would see, in the 0.3 shapes.
type callPrinter struct {
	w io.Writer
}

// event prints a progress note or an artifact chunk.
func (p *callPrinter) event(e tasks.Event) {
	switch {
	case e.Artifact != nil:
		var flags []string
		if e.Append {
			flags = append(flags, "append")
		}
		if e.LastChunk {
			flags = append(flags, "last chunk")
		}
		label := "artifact"
		if len(flags) > 0 {
			label += " (" + strings.Join(flags, ", ") + ")"
		}
		p.artifact(label, e.Artifact)
	case e.Status != nil:
		fmt.Fprintln(p.w, "progress:", statusText(e.Status))
	}
}

// artifact prints a under label, as JSON in the 0.3 shape.
func (p *callPrinter) artifact(label string, a *a2a.Artifact) {
	b, err := v03.AppendArtifact(nil, a)
	if err != nil {
		fmt.Fprintf(p.w, "%s: (cannot be encoded: %v)\n", label, err)
		return
	}
	fmt.Fprintf(p.w, "%s: %s\n", label, b)
}

// rejected prints the error a caller would get for a refused input, and
// each of its problems.
func (p *callPrinter) rejected(err error) int {
	e := transport.ErrorFor(err)
	fmt.Fprintf(p.w, "rejected: %s (JSON-RPC %d)\n", e.Message, e.Code)
	if list, ok := e.Data["errors"].([]any); ok && len(list) > 1 {
		for _, item := range list {
			if pr, ok := item.(map[string]any); ok {
				path, _ := pr["path"].(string)
				if path == "" {
					path = "/" // the input itself, as the message names it
				}
				fmt.Fprintf(p.w, "  %s: %v\n", path, pr["message"])
			}
		}
	}
	return callRejected
}

// end prints how the call ended and returns the exit code.
func (p *callPrinter) end(status a2a.TaskStatus, artifacts []a2a.Artifact) int {
	switch status.State {
	case a2a.StateCompleted:
		for i := range artifacts {
			p.artifact("artifact", &artifacts[i])
		}
		fmt.Fprintln(p.w, "completed")
		return callCompleted
	case a2a.StateInputRequired:
		fmt.Fprintln(p.w, "input-required:", statusText(&status))
		return callInputRequired
	}
	fmt.Fprintf(p.w, "%s: %s\n", status.State, statusText(&status))
	return callFailed
}

// statusText is the text of a status's message, as a caller reads it.
func statusText(s *a2a.TaskStatus) string {
	if s.Message == nil {
		return ""
	}
	var parts []string
	for _, part := range s.Message.Parts {
		if part.Kind == a2a.PartText {
			parts = append(parts, part.Text)
		}
	}
	return strings.Join(parts, " ")
}
