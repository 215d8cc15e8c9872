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
