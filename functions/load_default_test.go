package functions_test

import (
	"testing"

	"github.com/a2ad/a2ad/functions"
)

func TestLoad_DefaultSkill(t *testing.T) {
	dir := t.TempDir()
	good := MustWriteCatalog(t, dir, "good.yaml", "default_skill: chat::reply\nfunctions:\n  - id: chat::reply\n    builtin: echo\n")
	if c := MustLoad(t, good, functions.LoadOptions{}); c.Default != "chat::reply" {
		t.Fatalf("Default = %q", c.Default)
	}
	none := MustWriteCatalog(t, dir, "none.yaml", "functions:\n  - id: chat::reply\n    builtin: echo\n")
	if c := MustLoad(t, none, functions.LoadOptions{}); c.Default != "" {
		t.Fatalf("Default = %q, want none", c.Default)
	}
	bad := MustWriteCatalog(t, dir, "bad.yaml", "default_skill: chat::nope\nfunctions:\n  - id: chat::reply\n    builtin: echo\n")
	ps := LoadProblems(t, bad, functions.LoadOptions{})
	want := functions.Problem{Line: 1, Column: 16, Pointer: "/default_skill",
		Message: `default_skill "chat::nope" is not the id of a function of this catalogue`}
	if len(ps) != 1 || ps[0] != want {
		t.Fatalf("problems %+v, want %+v", ps, want)
	}
}

func TestLoad_OutputAndReply(t *testing.T) {
	dir := t.TempDir()
	good := MustWriteCatalog(t, dir, "good.yaml", "functions:\n  - id: a::b\n    output: parts\n    reply: message\n    builtin: echo\n  - id: a::c\n    output: data\n    reply: task\n    builtin: echo\n")
	c := MustLoad(t, good, functions.LoadOptions{})
	if f := c.Functions[0]; !f.Parts || f.Reply != functions.ReplyMessage {
		t.Fatalf("a::b: parts %v reply message %v", f.Parts, f.Reply)
	}
	if f := c.Functions[1]; f.Parts || f.Reply != functions.ReplyTask {
		t.Fatalf("a::c: parts %v reply message %v", f.Parts, f.Reply)
	}
	bad := MustWriteCatalog(t, dir, "bad.yaml", "functions:\n  - id: a::b\n    output: files\n    reply: 1\n    builtin: echo\n")
	ps := LoadProblems(t, bad, functions.LoadOptions{})
	want := []functions.Problem{
		{Line: 3, Column: 13, Pointer: "/functions/0/output", FunctionID: "a::b", Message: `output must be one of data, parts, got "files"`},
		{Line: 4, Column: 12, Pointer: "/functions/0/reply", FunctionID: "a::b", Message: `reply must be a string, got int`},
	}
	if len(ps) != 2 || ps[0] != want[0] || ps[1].Pointer != want[1].Pointer || ps[1].Line != 4 {
		t.Fatalf("problems %+v, want %+v", ps, want)
	}
}
