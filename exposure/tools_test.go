package exposure_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/exposure"
)

func TestToolName(t *testing.T) {
	for id, want := range map[string]string{
		"pricing::quote":     "pricing.quote",
		"demo::echo":         "demo.echo",
		"a::b::c":            "a.b.c",
		"plain":              "plain",
		"dots.and-dash_ok":   "dots.and-dash_ok",
		"one:colon":          "one_colon",
		"three:::colons":     "three._colons",
		"space and/slash":    "space_and_slash",
		"ünï":                "_n_", // one for each character
		"trailing::":         "trailing.",
		"Mixed::Case::Kept9": "Mixed.Case.Kept9",
	} {
		if got := exposure.ToolName(id); got != want {
			t.Errorf("ToolName(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestToolNames(t *testing.T) {
	long := strings.Repeat("x", 129)
	names, problems := exposure.ToolNames([]string{"pricing::quote", "pricing.quote", "demo::echo", "demo:echo", "demo_echo", long, strings.Repeat("y", 128)})
	want := map[string]string{"pricing.quote": "pricing::quote", "demo.echo": "demo::echo", "demo_echo": "demo:echo", strings.Repeat("y", 128): strings.Repeat("y", 128)}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	got := make([]string, len(problems))
	for i, p := range problems {
		got[i] = p.ID + ": " + p.String()
	}
	wantProblems := []string{
		`pricing.quote: MCP tool name "pricing.quote" is also the name of "pricing::quote": ids that differ only in characters MCP does not allow in a tool name collide; rename one`,
		`demo_echo: MCP tool name "demo_echo" is also the name of "demo:echo": ids that differ only in characters MCP does not allow in a tool name collide; rename one`,
		long + `: MCP tool name "` + long + `" is 129 bytes, over MCP's 128`,
	}
	if diff := cmp.Diff(wantProblems, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
