package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/cmd/a2ad/internal/catalogcmd"
	"github.com/a2ad/a2ad/internal/testkit"
)

// runCall runs a2ad call with args, stdin and a JSON log at the level
// given in args (debug by default), and returns the exit code, stdout
// (with the artifact ids a2ad chose replaced by "ID") and stderr.
func runCall(tb testing.TB, stdin string, args ...string) (code int, stdout, stderr string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut testkit.SyncBuffer
	code = run(ctx, append([]string{"call", "--log-format", "json"}, args...), strings.NewReader(stdin), &out, &errOut, cfgEnv(nil))
	return code, chosenIDs.ReplaceAllString(out.String(), `"artifactId":"ID"`), errOut.String()
}

// chosenIDs are the artifact ids a2ad chose (UUIDs).
var chosenIDs = regexp.MustCompile(`"artifactId":"[0-9a-f]{8}-[0-9a-f-]{27}"`)

// TestCallShippedCatalog runs the functions of the shipped catalogue as
// the README's "write your first function" shows.
func TestCallShippedCatalog(t *testing.T) {
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		out   string
	}{
		{"exec completes", "", []string{"text::wordcount", `{"text": "the quick brown fox"}`}, 0,
			`artifact: {"artifactId":"ID","name":"text::wordcount","parts":[{"kind":"data","data":{"words":4,"characters":19}}]}` + "\ncompleted\n"},
		{"input on stdin, progress", `{"seconds": 1.2}`, []string{"demo::sleep", "-"}, 0,
			"progress: slept 1 of 1.2 seconds\n" +
				`artifact: {"artifactId":"ID","name":"demo::sleep","parts":[{"kind":"data","data":{"slept":1.2}}]}` + "\ncompleted\n"},
		{"no input is {}", "", []string{"demo::echo"}, 0,
			`artifact: {"artifactId":"ID","name":"demo::echo","parts":[{"kind":"data","data":{}}]}` + "\ncompleted\n"},
		{"schema refuses", "", []string{"text::wordcount", `{"text": 7}`}, 3,
			"rejected: Invalid parameters: input does not match the schema of skill text::wordcount: /text: expected string, but got number (JSON-RPC -32602)\n"},
		{"schema refuses, every problem listed", "", []string{"demo::sleep", `{"seconds": -1, "extra": true}`}, 3,
			"rejected: Invalid parameters: input does not match the schema of skill demo::sleep: /: additionalProperties 'extra' not allowed (JSON-RPC -32602)\n" +
				"  /: additionalProperties 'extra' not allowed\n  /seconds: must be >= 0 but found -1\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCall(t, tc.stdin, append([]string{"--catalog", shippedCatalog}, tc.args...)...)
			if code != tc.code || out != tc.out {
				t.Errorf("a2ad call %q = %d\n%s\nwant %d\n%s\nstderr: %s", tc.args, code, out, tc.code, tc.out, errOut)
			}
		})
	}
}

// TestCallNothingRuns: flags, catalogue, function and input are checked
// before anything runs, with exit code 2.
func TestCallNothingRuns(t *testing.T) {
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"--catalog", shippedCatalog}, "usage: a2ad call [--catalog FILE] [flags] FUNCTION [INPUT]\n"},
		{[]string{"demo::echo"}, "a2ad: catalog: no catalogue file given (--catalog or A2AD_CATALOG)\n"},
		{[]string{"--catalog", shippedCatalog, "demo::nope"}, `a2ad: no function "demo::nope" in ../../examples/catalog.yaml (a2ad skills --expose-all lists them)` + "\n"},
		{[]string{"--catalog", shippedCatalog, "demo::ecko"}, `a2ad: no function "demo::ecko" in ../../examples/catalog.yaml (did you mean "demo::echo"? a2ad skills --expose-all lists them)` + "\n"},
		{[]string{"--catalog", shippedCatalog, "demo::echo", "{x"}, "a2ad: input: not JSON: invalid character 'x' looking for beginning of object key string\n"},
		{[]string{"--catalog", shippedCatalog, "demo::echo", "-"}, "a2ad: input: not JSON: unexpected end of JSON input\n"},
		{[]string{"--catalog", "nope.yaml", "demo::echo"}, "nope.yaml:cannot read catalogue: "},
	}
	for _, tc := range tests {
		code, out, errOut := runCall(t, "", tc.args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, tc.stderr) {
			t.Errorf("a2ad call %q = %d, stdout %q, stderr %q; want 2, stderr %q", tc.args, code, out, errOut, tc.stderr)
		}
	}
}

// TestCallHelp: -h lists the flags, then what the arguments are.
func TestCallHelp(t *testing.T) {
	code, out, errOut := runA2AD(t, nil, "call", "-h")
	if code != 0 || out != "" || !strings.Contains(errOut, "-catalog") || !strings.HasSuffix(errOut, "\n"+catalogcmd.CallUsage) {
		t.Errorf("a2ad call -h = %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// pagesScript reports a note and an artifact in two chunks, then
// writes its result over two lines.
const pagesScript = `#!/bin/sh
cat >/dev/null
echo "starting" >&2
printf '{"a2a.progress": "Fetched 1 of 2 pages"}\n'
printf '{"a2a.artifact": {"artifactId": "report", "name": "Report", "text": "page 1\\n"}}\n'
printf '{"a2a.artifact": {"artifactId": "report", "text": "page 2\\n", "append": true, "lastChunk": true}}\n'
printf '{\n  "pages": 2\n}\n'
`

// TestCallExec runs real exec scripts: progress and a result, a result
// that is not JSON (its excerpt in the debug log only), a timeout, an
// output that fails the output schema, a question.
func TestCallExec(t *testing.T) {
	dir := t.TempDir()
	scripts := map[string]string{
		"progress.sh": pagesScript,
		"notjson.sh":  notJSONScript,
		"slow.sh":     "#!/bin/sh\ncat >/dev/null\nexec sleep 30\n",
		"bad.sh":      "#!/bin/sh\ncat >/dev/null\necho '{\"pages\": \"two\"}'\n",
		"ask.sh":      "#!/bin/sh\ncat >/dev/null\necho '{\"a2a.input_required\": {\"question\": \"Which city?\"}}'\n",
	}
	for name, text := range scripts {
		putScript(t, filepath.Join(dir, name), text)
	}
	catalog := filepath.Join(dir, "catalog.yaml")
	putFile(t, catalog, `functions:
  - {id: t::progress, exec: {argv: [./progress.sh]}}
  - {id: t::notjson, exec: {argv: [./notjson.sh]}}
  - {id: t::slow, timeout: 300ms, exec: {argv: [./slow.sh]}}
  - {id: t::bad, output_schema: {type: object, properties: {pages: {type: integer}}}, exec: {argv: [./bad.sh]}}
  - {id: t::ask, exec: {argv: [./ask.sh]}}
`)
	tests := []struct {
		fn     string
		code   int
		out    string
		stderr []string // in the log, in order
	}{
		{"t::progress", 0, "progress: Fetched 1 of 2 pages\n" +
			`artifact: {"artifactId":"report","name":"Report","parts":[{"kind":"text","text":"page 1\n"}]}` + "\n" +
			`artifact (append, last chunk): {"artifactId":"report","parts":[{"kind":"text","text":"page 2\n"}]}` + "\n" +
			`artifact: {"artifactId":"ID","name":"t::progress","parts":[{"kind":"data","data":{"pages":2}}]}` + "\ncompleted\n",
			[]string{`"level":"info"`, `"function_id":"t::progress","function_stderr":"starting"`, `"message":"function stderr"`}},
		{"t::notjson", 1, "failed: function returned invalid JSON\n", []string{
			`"function_stderr":"parsing the input"`, `"message":"function stderr"`,
			`"level":"debug"`, `"output_bytes":15,"error_offset":1,"json_error":"invalid character 'h' looking for beginning of value","output_excerpt":"hello not json\\n"`,
			`"message":"function returned invalid JSON"`,
			`"level":"warn"`, `"error":"function returned invalid JSON: syntax error at byte offset 1 of 15"`, `"message":"call failed"`}},
		{"t::slow", 1, "failed: Function call timed out after 300ms\n", []string{`"message":"call timed out"`}},
		{"t::bad", 1, "failed: Function returned output that does not match its output schema\n",
			[]string{`"path":"/pages","problem":"expected integer, but got string"`, `"message":"output does not match the output schema"`}},
		{"t::ask", 4, "input-required: Which city?\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.fn, func(t *testing.T) {
			code, out, errOut := runCall(t, "", "--catalog", catalog, tc.fn)
			if code != tc.code || out != tc.out {
				t.Errorf("a2ad call %s = %d\n%s\nwant %d\n%s\nstderr: %s", tc.fn, code, out, tc.code, tc.out, errOut)
			}
			rest := errOut
			for _, want := range tc.stderr {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("log lacks %s (in order):\n%s", want, errOut)
				}
				rest = rest[i+len(want):]
			}
		})
	}
	// At info level the log holds no output.
	code, _, errOut := runCall(t, "", "--catalog", catalog, "--log-level", "info", "t::notjson")
	if code != 1 || strings.Contains(errOut, "hello") || !strings.Contains(errOut, `"function_stderr":"parsing the input"`) {
		t.Errorf("at info level: %d, log %s", code, errOut)
	}
}

// TestCallHTTPStreams calls an httptest backend that streams NDJSON: each
// progress line is printed before the backend goes on.
func TestCallHTTPStreams(t *testing.T) {
	var out testkit.SyncBuffer
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, `{"a2a.progress": {"message": "Fetched 1 of 2 pages"}}`+"\n")
		w.(http.Flusher).Flush()
		// Go on only once a2ad call has printed the note.
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(out.String(), "progress: Fetched 1 of 2 pages\n") {
			if time.Now().After(deadline) {
				http.Error(w, "the note was not printed", http.StatusInternalServerError)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		_, _ = io.WriteString(w, `{"a2a.error": "page 2 is gone"}`+"\n")
	}))
	defer backend.Close()
	catalog := filepath.Join(t.TempDir(), "catalog.yaml")
	putFile(t, catalog, fmt.Sprintf("functions:\n  - {id: t::web, http: {url: %q}}\n", backend.URL))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errOut testkit.SyncBuffer
	code := run(ctx, []string{"call", "--catalog", catalog, "t::web", `{"q": 1}`}, strings.NewReader(""), &out, &errOut, cfgEnv(nil))
	want := "progress: Fetched 1 of 2 pages\nfailed: function reported an error: page 2 is gone\n"
	if code != 1 || out.String() != want {
		t.Errorf("a2ad call t::web = %d\n%s\nwant 1\n%s\nstderr: %s", code, out.String(), want, errOut.String())
	}
}

// TestCallREADME runs the README's "your own function in five minutes": its
// shell block in a new directory, then a2ad call as the README shows it,
// with the output the README shows.
func TestCallREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Your own function in five minutes\n")
	if !ok {
		t.Fatal("README has no section \"Your own function in five minutes\"")
	}
	_, script, _ := strings.Cut(section, "```sh\n")
	script, _, _ = strings.Cut(script, "```\n")
	dir := t.TempDir()
	cmd := exec.Command("/bin/sh", "-e")
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the README's script: %v\n%s", err, out)
	}
	catalog := filepath.Join(dir, "hello", "catalog.yaml")
	code, out, _ := runCall(t, "", "--catalog", catalog, "hello::greet", `{"name": "Ada"}`)
	want := "progress: Looking up Ada\n" +
		`artifact: {"artifactId":"ID","name":"hello::greet","parts":[{"kind":"data","data":{"greeting":"Hello, Ada!"}}]}` + "\ncompleted\n"
	if code != 0 || out != want {
		t.Errorf("greet = %d\n%s\nwant 0\n%s", code, out, want)
	}
	code, out, _ = runCall(t, "", "--catalog", catalog, "hello::greet", `{"nom": "Ada"}`)
	if want := "rejected: Invalid parameters: input does not match the schema of skill hello::greet: /: missing properties: 'name' (JSON-RPC -32602)\n"; code != 3 || out != want {
		t.Errorf("greet without a name = %d\n%s\nwant 3\n%s", code, out, want)
	}
	// "Make the last line of the script echo "Hello, $name!"": the call
	// fails, after the progress line.
	greet := filepath.Join(dir, "hello", "bin", "greet.sh")
	body, err := os.ReadFile(greet)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	lines[len(lines)-1] = `echo "Hello, $name!"`
	if err := os.WriteFile(greet, []byte(strings.Join(lines, "\n")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCall(t, "", "--catalog", catalog, "hello::greet", `{"name": "Ada"}`)
	if want := "progress: Looking up Ada\nfailed: function returned invalid JSON\n"; code != 1 || out != want {
		t.Errorf("greet that writes no JSON = %d\n%s\nwant 1\n%s", code, out, want)
	}
	for _, line := range []string{"progress: Looking up Ada", `"data":{"greeting":"Hello, Ada!"}`, "completed", "rejected: Invalid parameters: input does not match the schema of skill hello::greet: /: missing properties: 'name' (JSON-RPC -32602)",
		"Make the last line of the script `echo \"Hello, $name!\"`", "```\nprogress: Looking up Ada\n… DBG function returned invalid JSON", "\nfailed: function returned invalid JSON\n```"} {
		if !strings.Contains(section, line) {
			t.Errorf("the README's section no longer shows %q", line)
		}
	}
}
