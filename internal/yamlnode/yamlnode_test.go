package yamlnode_test

import (
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/a2ad/a2ad/internal/yamlnode"
)

type problem string

func (p problem) String() string { return string(p) }

func TestFormatAndJoin(t *testing.T) {
	tests := []struct {
		line, col      int
		ptr, subj, msg string
		want           string
	}{
		{12, 5, "/functions/2/timeout", `function "x"`, "bad", `12:5: /functions/2/timeout (function "x"): bad`},
		{3, 0, "", "", "bad", "3: bad"},
		{0, 0, "/keys", "", "bad", "/keys: bad"},
		{0, 0, "", `caller "b"`, "bad", `(caller "b"): bad`},
		{0, 0, "", "", "bad", "bad"},
	}
	for _, tt := range tests {
		if got := yamlnode.FormatProblem(tt.line, tt.col, tt.ptr, tt.subj, tt.msg); got != tt.want {
			t.Errorf("FormatProblem = %q, want %q", got, tt.want)
		}
	}
	if got := yamlnode.JoinProblems("f.yaml", []problem{"1: a", "2: b"}); got != "f.yaml:1: a\nf.yaml:2: b" {
		t.Errorf("JoinProblems = %q", got)
	}
}

func TestLookupAndKind(t *testing.T) {
	var doc yaml.Node
	src := "base: &b {x: 1}\nref: *b\ns: str\ni: 1\nf: 1.5\nt: true\nn: null\nl: [1]\nd: 2026-11-22\n"
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	for key, want := range map[string]string{"ref": "a mapping", "s": "a string", "i": "an integer", "f": "a number",
		"t": "a bool", "n": "null", "l": "a list", "d": "a timestamp"} {
		_, v := yamlnode.Lookup(root, key)
		if v == nil || yamlnode.Kind(v) != want {
			t.Errorf("Kind(%s) = %v, want %s", key, v, want)
		}
	}
	if k, v := yamlnode.Lookup(root, "missing"); k != nil || v != nil {
		t.Error("Lookup of a missing key found something")
	}
}

func TestSyntaxError(t *testing.T) {
	for _, tt := range []struct {
		doc     string
		line    int
		message string
	}{
		{"a: [1, 2\n", 2, "not valid YAML: did not find expected ',' or ']'"},
		{"a: b\n\tc: d\n", 2, "not valid YAML: found a tab character that violates indentation"},
	} {
		var n yaml.Node
		err := yaml.Unmarshal([]byte(tt.doc), &n)
		if err == nil {
			t.Fatalf("%q parsed", tt.doc)
		}
		if line, msg := yamlnode.SyntaxError(err); line != tt.line || msg != tt.message {
			t.Errorf("%q: line %d %q, want %d %q", tt.doc, line, msg, tt.line, tt.message)
		}
	}
}

func TestCheckerErr(t *testing.T) {
	var c yamlnode.Checker
	if err := yamlnode.Err(&c, "f.yaml", toProblem); err != nil {
		t.Fatalf("Err with no problems = %v, want nil", err)
	}
	c.Add(&yaml.Node{Line: 3, Column: 1}, "/b", "second")
	c.ID = "x"
	c.Add(nil, "", "first")
	c.Add(&yaml.Node{Line: 3, Column: 1}, "/c", "third")
	err := yamlnode.Err(&c, "f.yaml", toProblem)
	want := "f.yaml:(thing \"x\"): first\nf.yaml:3:1: /b: second\nf.yaml:3:1: /c (thing \"x\"): third"
	if err == nil || err.Error() != want {
		t.Errorf("Err = %v, want %q (sorted by position, ties in the order recorded)", err, want)
	}
}

func toProblem(p yamlnode.Problem) problem {
	return problem(yamlnode.FormatProblem(p.Line, p.Column, p.Pointer, yamlnode.Subject("thing", p.ID), p.Message))
}
