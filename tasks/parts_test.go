package tasks_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

func outputBackend(out string) *Backend {
	return &Backend{Fn: func(context.Context, json.RawMessage) (functions.Result, error) {
		return functions.Result{Output: json.RawMessage(out)}, nil
	}}
}

func partsFn(t *testing.T, id, out string) *functions.Function {
	return fn(t, id, outputBackend(out), func(f *functions.Function) { f.Parts = true })
}

// A function declared "output: parts" answers with artifacts of every
// part kind and a status message.
func TestPartsEnvelope(t *testing.T) {
	out := `{"artifacts":[{"name":"report","parts":[{"text":"hi"},{"data":{"k": 1}},
		{"raw":"dGNr","filename":"output.txt","mediaType":"text/plain"},
		{"url":"https://example.com/o.txt","filename":"o.txt","mediaType":"text/plain","metadata":{"m":true}}]},
		{"parts":[{"text":"second"}]}],
		"message":[{"text":"Hello from TCK"}]}`
	e := newEnv(t, tasks.Config{}, partsFn(t, "p::all", out))
	task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "p::all", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2a.StateCompleted || statusText(task) != "Hello from TCK" || task.Status.Message.Role != a2a.RoleAgent {
		t.Fatalf("status %+v", task.Status)
	}
	if len(task.Artifacts) != 2 || task.Artifacts[0].Name != "report" || task.Artifacts[1].Name != "p::all" {
		t.Fatalf("artifacts %+v", task.Artifacts)
	}
	p := task.Artifacts[0].Parts
	if len(p) != 4 || p[0].Text != "hi" || string(p[1].Data) != `{"k":1}` ||
		*p[2].File != (a2a.FileContent{Name: "output.txt", MimeType: "text/plain", Bytes: "dGNr"}) ||
		*p[3].File != (a2a.FileContent{Name: "o.txt", MimeType: "text/plain", URI: "https://example.com/o.txt"}) ||
		p[3].Metadata["m"] != true || p[2].Kind != a2a.PartFile || p[3].Kind != a2a.PartFile {
		t.Fatalf("parts %+v", p)
	}
	// An ordinary function's output that looks like an envelope is data.
	e2 := newEnv(t, tasks.Config{}, fn(t, "p::plain", outputBackend(`{"artifacts":[]}`)))
	plain, _, err := e2.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m1", "p::plain", `{}`)))
	if err != nil || string(plain.Artifacts[0].Parts[0].Data) != `{"artifacts":[]}` {
		t.Fatalf("plain: %v %+v", err, plain)
	}
}

// A malformed envelope fails the task, saying where.
func TestPartsEnvelopeMalformed(t *testing.T) {
	cases := map[string]string{
		`[1]`:                                          "Function returned output that is not a parts envelope: must be an object with artifacts and/or message",
		`{"artifact":[]}`:                              "Function returned output that is not a parts envelope: /artifact: is not a member of the parts envelope (artifacts, message, reply)",
		`{"artifacts":[{"parts":[]}]}`:                 "Function returned output that is not a parts envelope: /artifacts/0/parts: must hold at least one part",
		`{"message":[{"text":"a","data":{}}]}`:         "Function returned output that is not a parts envelope: /message/0: must have exactly one of text, data, raw, url",
		`{"message":[{"raw":"***"}]}`:                  "Function returned output that is not a parts envelope: /message/0: raw must be base64 (standard, padded)",
		`{"message":[{"data":[1]}]}`:                   "Function returned output that is not a parts envelope: /message/0: data must be a JSON object",
		`{"message":[{"text":"a","name":"x"}]}`:        `Function returned output that is not a parts envelope: /message/0: "name" is not a member of a part (text, data, raw, url, filename, mediaType, metadata)`,
		`{"message":[{"text":"a"}],"reply":"message"}`: "Function returned output that is not a parts envelope: /reply: is allowed only for a function declared reply: either",
		`{"message":[{"text":"a","filename":"x"}]}`:    "Function returned output that is not a parts envelope: /message/0: filename and mediaType go with raw or url only",
	}
	for out, want := range cases {
		id := "p::bad"
		e := newEnv(t, tasks.Config{}, partsFn(t, id, out))
		task, _, err := e.svc.Send(ctx, tasks.Caller{}, send(dataMsg("m", id, `{}`)))
		if err != nil || task.Status.State != a2a.StateFailed || statusText(task) != want || len(task.Artifacts) != 0 ||
			task.Status.Message.Metadata[tasks.FailureKey] != tasks.FailureOutput {
			t.Errorf("%s: %v %s %q, want %q", out, err, task.Status.State, statusText(task), want)
		}
	}
}
