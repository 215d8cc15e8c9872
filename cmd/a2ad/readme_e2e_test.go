package main

// The README's examples, and those of the guides under docs/, are tests
// (issues 16 and 30): every fenced block of README.md or docs/*.md marked
// <!-- example: NAME --> (NAME unique across the pages) runs against the real binary, each in a fresh
// directory, on ports of its own, and what it prints is compared with
// what the README shows (inline "# ..." lines after a command, the lines
// after a "$ command" in a transcript, or the block marked
// <!-- output: NAME -->), by shape: keys and types, with ids, times and
// versions masked, "…" standing for anything (see readme_match_test.go).
//
// A page is run as written but for these rewrites, applied to its
// commands and to the outputs it shows:
//
//	go run ./cmd/a2ad          a2ad (the binary built once, first on PATH)
//	go build -o a2ad ./cmd/a2ad  a copy of that binary as ./a2ad
//	127.0.0.1:80xx, localhost:80xx  a free loopback port per port named
//	                           (A2AD_LISTEN, A2AD_ADMIN_LISTEN and
//	                           A2AD_ADMIN_URL name those of 8080 and 8081)
//	a task id in a command     the id the example's setup chose ($ID)
//	https://hooks.example/a2a  a webhook receiver that answers 503
//
// A line of a script that starts a2ad serve in the foreground (the
// README says to use another shell) runs in the background, and the
// script waits until it serves; "# after stopping the server" on a transcript line stops the
// server the example's marker started first.
//
// A marker may say, after the name: server="FLAGS", a2ad serve FLAGS
// started before the example (the README's commands assume a running
// server); setup="NAME", a script of readmeSetups that prepares it; and
// runs="2", run the example twice in one directory (it must run again as
// it is). To add an example: put <!-- example: NAME --> before its block,
// and <!-- output: NAME --> before the block of its output if that is not
// in the block itself.

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2ad/a2ad/functions"
)

// readmeExample is a marked block of the README or of a guide.
type readmeExample struct {
	name  string
	file  string            // the page, from the repository's root: README.md, docs/agents.md
	line  int               // of the marker, for messages
	attrs map[string]string // server="FLAGS" (started first), setup="NAME" (readmeSetups)
	lang  string            // the fence's info string: "sh", "" for a transcript
	body  []string
	steps []readmeStep
}

// readmeStep is one command of an example and the output the README
// shows for it (none: "", not compared).
type readmeStep struct {
	cmd     string
	want    string
	hasWant bool
	stop    bool // stop the marker's server first
}

var (
	exampleMarker = regexp.MustCompile(`^<!-- example: (\S+)(.*?)-->$`)
	outputMarker  = regexp.MustCompile(`^<!-- output: (\S+) -->$`)
	markerAttr    = regexp.MustCompile(`(\w+)="([^"]*)"`)
)

// docPages are the pages whose examples run, from the repository's root:
// the README and every guide under docs/.
func docPages(tb testing.TB) []string {
	tb.Helper()
	guides, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		tb.Fatal(err)
	}
	pages := []string{"README.md"}
	for _, g := range guides {
		rel, err := filepath.Rel(repoRoot, g)
		if err != nil {
			tb.Fatal(err)
		}
		pages = append(pages, filepath.ToSlash(rel))
	}
	return pages
}

// repoRoot is the repository's root, seen from this package's directory.
var repoRoot = filepath.Join("..", "..")

// parseDocs returns the marked examples of every page of docPages, in
// order. An example's name is unique across the pages.
func parseDocs(tb testing.TB) []*readmeExample {
	tb.Helper()
	var out []*readmeExample
	byName := map[string]*readmeExample{}
	for _, page := range docPages(tb) {
		for _, ex := range parseReadme(tb, page) {
			if prev := byName[ex.name]; prev != nil {
				tb.Fatalf("%s:%d: example %q is marked at %s:%d too", ex.file, ex.line, ex.name, prev.file, prev.line)
			}
			byName[ex.name] = ex
			out = append(out, ex)
		}
	}
	return out
}

// parseReadme returns the marked examples of page (a path from the
// repository's root), in order.
func parseReadme(tb testing.TB, page string) []*readmeExample {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
	if err != nil {
		tb.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []*readmeExample
	byName := map[string]*readmeExample{}
	// fence returns the fenced block that starts at or after line i.
	fence := func(i int) (lang string, body []string, end int) {
		for ; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			if strings.TrimSpace(lines[i]) != "" {
				tb.Fatalf("%s:%d: a marker must be followed by a fenced block", page, i+1)
			}
		}
		if i == len(lines) {
			tb.Fatalf("%s: a marker at the end has no block", page)
		}
		lang = strings.TrimPrefix(lines[i], "```")
		for end = i + 1; end < len(lines) && lines[end] != "```"; end++ {
			body = append(body, lines[end])
		}
		return lang, body, end
	}
	for i := 0; i < len(lines); i++ {
		if m := exampleMarker.FindStringSubmatch(lines[i]); m != nil {
			ex := &readmeExample{name: m[1], file: page, line: i + 1, attrs: map[string]string{}}
			for _, a := range markerAttr.FindAllStringSubmatch(m[2], -1) {
				ex.attrs[a[1]] = a[2]
			}
			if byName[ex.name] != nil {
				tb.Fatalf("%s:%d: example %q marked twice", page, i+1, ex.name)
			}
			ex.lang, ex.body, i = fence(i + 1)
			ex.steps = exampleSteps(ex.lang, ex.body)
			out = append(out, ex)
			byName[ex.name] = ex
		} else if m := outputMarker.FindStringSubmatch(lines[i]); m != nil {
			ex := byName[m[1]]
			if ex == nil || len(ex.steps) == 0 {
				tb.Fatalf("%s:%d: output of %q, which no example before it has", page, i+1, m[1])
			}
			_, body, end := fence(i + 1)
			last := &ex.steps[len(ex.steps)-1]
			last.want, last.hasWant = strings.Join(body, "\n"), true
			i = end
		}
	}
	return out
}

// exampleSteps splits a block into commands. A transcript (a block whose
// first line starts with "$ ") has a command on each "$ " line and its
// output below it. A script's commands are groups of lines between blank
// lines and comments; "# " lines right after a command are its output.
func exampleSteps(lang string, body []string) []readmeStep {
	var steps []readmeStep
	if lang == "" && len(body) > 0 && strings.HasPrefix(body[0], "$ ") {
		for _, l := range body {
			if cmd, ok := strings.CutPrefix(l, "$ "); ok {
				steps = append(steps, readmeStep{cmd: cmd, hasWant: true,
					stop: strings.Contains(cmd, "# after stopping the server")})
				continue
			}
			s := &steps[len(steps)-1]
			s.want += l + "\n"
		}
		for i := range steps {
			steps[i].want = strings.TrimRight(steps[i].want, "\n")
		}
		return steps
	}
	var cur *readmeStep
	inOutput := false
	for _, l := range body {
		trimmed := strings.TrimSpace(l)
		switch {
		case trimmed == "":
			cur, inOutput = nil, false
		case strings.HasPrefix(trimmed, "#"):
			if cur != nil && (inOutput || !cur.hasWant) && strings.HasPrefix(trimmed, "# ") {
				if cur.hasWant {
					cur.want += "\n"
				}
				cur.want += strings.TrimPrefix(trimmed, "# ")
				cur.hasWant, inOutput = true, true
				continue
			}
			cur, inOutput = nil, false
		default:
			if cur == nil || inOutput {
				steps = append(steps, readmeStep{})
				cur, inOutput = &steps[len(steps)-1], false
			}
			cur.cmd += l + "\n"
		}
	}
	return steps
}

// readmeSetups prepare the server an example's marker names with
// setup="NAME": they start it (__start_server, with the marker's
// server="FLAGS") when they are ready for it, run with the example's
// environment, and may set ID, which replaces the task ids the README's
// commands name.
var readmeSetups = map[string]string{
	// Three callers; acme's echo and sleep, and bob's sleep canceled by
	// the operator: the operator view's samples.
	"opview": `
a2ad keys create --keys keys.yaml --id acme --tier partner >acme.key
a2ad keys create --keys keys.yaml --id bob --tier partner >bob.key
a2ad keys create --keys keys.yaml --id ops --tier internal,partner >/dev/null
__start_server
send() { # key, message id, skill, input, blocking
  curl -sf "$A2AD_URL/a2a" -H "X-API-Key: $(cat "$1.key")" -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"'"$2"'","role":"user","parts":[{"kind":"data","data":{"skill":"'"$3"'","input":'"$4"'}}]},"configuration":{"blocking":'"$5"'}}}'
}
send acme m-echo demo::echo '{"message":"hi"}' true >/dev/null
send acme m-sleep demo::sleep '{"seconds":0.01}' true >/dev/null
ID=$(send bob m-sleep demo::sleep '{"seconds":30}' false | jq -r .result.id)
a2ad tasks cancel "$ID" >/dev/null
`,
	// A few tasks, so that a backup and a compaction have something to copy.
	"tasks": `
__start_server
for i in 1 2 3; do
  curl -sf "$A2AD_URL/a2a" -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m-'$i'","role":"user","parts":[{"kind":"text","text":"text::wordcount one two three"}]}}}' >/dev/null
done
`,
	// A webhook that answers 503, given up on after one attempt.
	"dead-letter": `
__start_server
curl -sf "$A2AD_URL/a2a" -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"dl-1","role":"user","parts":[{"kind":"text","text":"demo::echo {}"}]},"configuration":{"pushNotificationConfig":{"url":"https://hooks.example/a2a"}}}}'
for _ in $(seq 100); do
  [ "$(curl -sf "$A2AD_ADMIN_URL/admin/push/dead-letters" | jq '.deadLetters | length')" = 1 ] && break
  sleep 0.1
done
`,
	// A copy of the catalogue, three keys, and a function added once the
	// server runs: the reload has something to read.
	"reload": `
cp examples/catalog.yaml catalog.yaml && ln -s examples/schemas schemas && ln -s examples/bin bin
for id in acme bob ops; do a2ad keys create --keys keys.yaml --id $id --tier partner; done
__start_server
cat >>catalog.yaml <<'EOF'
` + reloadAdded + `EOF
`,
	// A catalogue whose demo::sleep is an MCP tool (the example
	// catalogue's is not): a call long enough to become a task handle.
	// acme calls a function its tier may not: the audit trail's sample.
	"audit": `
a2ad keys create --keys keys.yaml --id acme --tier partner >acme.key
__start_server
curl -sf "$A2AD_URL/a2a" -H "X-API-Key: $(cat acme.key)" -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"q-1","role":"user","parts":[{"kind":"data","data":{"skill":"pricing::quote","input":{"sku":"A-1","quantity":2}}}]}}}'
`,
}

func init() {
	// README's own function, served: the section's script writes hello/.
	script, err := readmeHelloScript()
	if err != nil {
		script = "echo " + strconv.Quote(err.Error()) + " >&2; false"
	}
	readmeSetups["hello"] = script + "__start_server\n"
	// docs/mcp.md's catalogue whose demo::sleep is an MCP tool, as the
	// page writes it.
	cat, err := pageHeredoc("docs/mcp.md", "catalog.yaml")
	if err != nil {
		cat = "echo " + strconv.Quote(err.Error()) + " >&2; false\n"
	}
	readmeSetups["mcp-sleep"] = cat + "__start_server\n"
	// The README's catalogue whose default skill takes plain text.
	cat, err = pageHeredoc("README.md", "plain.yaml")
	if err != nil {
		cat = "echo " + strconv.Quote(err.Error()) + " >&2; false\n"
	}
	readmeSetups["plain"] = cat + "__start_server\n"
}

// readmeHelloScript is the shell block of the README's "Your own function
// in five minutes", which writes hello/ (TestCallREADME runs it too).
func readmeHelloScript() (string, error) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		return "", err
	}
	_, section, ok := strings.Cut(string(readme), "\n## Your own function in five minutes\n")
	if !ok {
		return "", fmt.Errorf("README has no section \"Your own function in five minutes\"")
	}
	_, script, _ := strings.Cut(section, "```sh\n")
	script, _, _ = strings.Cut(script, "```\n")
	return script, nil
}

// reloadAdded is the function the reload example's setup adds to its
// copy of the catalogue.
const reloadAdded = "  - id: demo::echo2\n    builtin: echo\n"

// pageHeredoc is the command of page (from the repository's root) that
// writes file, cat >file <<'EOF', up to its EOF: docs/mcp.md's
// catalogue of its task-handle example (catalog.yaml), the README's
// plain-text one (plain.yaml).
func pageHeredoc(page, file string) (string, error) {
	data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
	if err != nil {
		return "", err
	}
	start := "cat >" + file + " <<'EOF'\n"
	_, rest, ok := strings.Cut(string(data), start)
	body, _, ok2 := strings.Cut(rest, "\nEOF\n")
	if !ok || !ok2 {
		return "", fmt.Errorf("%s has no %q block ending in EOF", page, strings.TrimSpace(start))
	}
	return start + body + "\nEOF\n", nil
}

// readmeNotRun are the examples of the README and the guides that the
// test does not run, why, and the test that covers each instead; each is
// marked <!-- not run: NAME --> on its page (TestNotRunExamplesMarked).
// A marked example may not appear here.
var readmeNotRun = map[string]string{
	"catalogue":     "the catalogue's format, not the output of a command (examples/catalog.yaml is the reference; every e2e test serves it)",
	"resubscribe":   "shows no output and needs a task id in place of <task id> (TestStreamResume* resume streams)",
	"keys file":     "the keys file's format, written by hand: not the output of a command (a2ad keys create writes it; TestReplaceKey and TestAppendKey check it)",
	"damaged store": "needs a damaged store file at /var/lib/a2ad (TestDamagedStoreEndsServeAndCheckCleanly damages real files)",
	"migrate":       "needs systemd and an empty PostgreSQL database of its own; its output is cut with ... (TestStoreMigrate* copy into a schema per test)",
	"replicas":      "creates the fixed schema a2ad in the shared test database; no output shown (TestReplicas* run two replicas per schema)",
	"rotation":      "works on /etc/a2ad/keys.yaml and a key made before it (TestKeyRotationE2E walks it against the binary)",
	"oidc":          "needs an OpenID Connect provider at id.example.com; no output shown (TestOIDCCallersE2E runs one on loopback)",
	"grpc client":   "Go code, not a command (TestGRPC* and the a2a-go interop tests call the binding)",
	"image":         "builds the image (about a minute) and needs root for its chroot run; .ci/run builds and checks it on every run",
}

// readmeTools are what the examples run besides a2ad.
var readmeTools = []string{"bash", "curl", "jq"}

func TestReadmeExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's examples against the real binary")
	}
	for _, tool := range readmeTools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("A2AD_REQUIRE_README") != "" {
				t.Fatalf("%s is not installed and A2AD_REQUIRE_README is set (CI installs it)", tool)
			}
			t.Skipf("the README examples need %s (bash, curl and jq); not installed: skipped", tool)
		}
	}
	examples := parseDocs(t)
	if len(examples) == 0 {
		t.Fatal("neither README.md nor docs/*.md marks an example")
	}
	bin := binary(t)
	for _, ex := range examples {
		if _, ok := readmeNotRun[ex.name]; ok {
			t.Errorf("%s:%d: example %q is marked, and listed as not run", ex.file, ex.line, ex.name)
		}
		t.Run(ex.name, func(t *testing.T) {
			t.Parallel()
			runs := 1
			if n, err := strconv.Atoi(ex.attrs["runs"]); err == nil {
				runs = n // runs="2": the example must run again in the same directory
			}
			// A port is picked free before the example binds it, so another
			// process (a parallel test) may take it first: then the whole
			// example runs again, in a new directory, on new ports.
			for attempt := 1; ; attempt++ {
				dir, taken := newExampleDir(t), false
				for i := 0; i < runs && !taken; i++ {
					taken = runExample(t, ex, bin, dir, attempt < 3)
				}
				if !taken {
					break
				}
				t.Logf("a port picked for the example was taken before a2ad bound it: again on new ports")
			}
		})
	}
	for _, name := range slices.Sorted(maps.Keys(readmeNotRun)) {
		t.Logf("not run: %s: %s", name, readmeNotRun[name])
	}
}

// newExampleDir is a fresh directory with the repository's examples in
// it, as the README's commands expect from the repository's root.
func newExampleDir(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	abs, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(dir, "examples")); err != nil {
		tb.Fatal(err)
	}
	return dir
}

var (
	readmePort = regexp.MustCompile(`(127\.0\.0\.1|localhost):(80[89][0-9])\b`)
	readmeUUID = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
)

// exampleEnv is what an example runs with: its ports and rewrites.
type exampleEnv struct {
	ports map[string]string // README port: the test's
	hook  string            // the webhook receiver's URL
	setID bool              // the setup sets ID
}

func (e *exampleEnv) rewrite(s string, cmd bool) string {
	s = readmePort.ReplaceAllStringFunc(s, func(m string) string {
		host, port, _ := strings.Cut(m, ":")
		if e.ports[port] == "" {
			e.ports[port] = freePort()
		}
		if cmd {
			// The port is free on 127.0.0.1 only, where the server
			// listens: curl would try localhost's ::1 too, where another
			// process may hold the same number (any listener on ::1 or
			// [::]), and talk to it instead (issue 30: the versions
			// example once reached an admin listener).
			host = "127.0.0.1"
		}
		return host + ":" + e.ports[port]
	})
	s = strings.ReplaceAll(s, "https://hooks.example/a2a", e.hook)
	if !cmd {
		return s
	}
	s = strings.ReplaceAll(s, "go build -o a2ad ./cmd/a2ad", `cp "$A2AD_BIN" a2ad`)
	s = strings.ReplaceAll(s, "go run ./cmd/a2ad", "a2ad")
	if e.setID {
		s = readmeUUID.ReplaceAllString(s, "$$ID")
	}
	return s
}

// freePort is a loopback port free now.
func freePort() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

var catFile = regexp.MustCompile(`^cat ([\w.-]+)$`)

var foregroundServe = regexp.MustCompile(`^\s*(\./)?a2ad serve\b[^&]*$`)

// runExample runs ex in dir and compares each step's output with the
// README's. With mayRetry, a run whose server found its port taken
// reports that (true) instead of failing.
func runExample(t *testing.T, ex *readmeExample, bin, dir string, mayRetry bool) (portTaken bool) {
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer hook.Close()
	env := &exampleEnv{ports: map[string]string{"8080": freePort(), "8081": freePort()}, hook: hook.URL + "/a2a",
		setID: ex.attrs["setup"] != ""}
	var script strings.Builder
	script.WriteString(env.rewrite(readmePrelude, true))
	fmt.Fprintf(&script, "__start_server() { __mark; a2ad serve %s >>server.log 2>&1 & __server=$!; __wait_ready; }\n", ex.attrs["server"])
	if _, ok := ex.attrs["server"]; ok && ex.attrs["setup"] == "" {
		script.WriteString("__start_server\n")
	}
	if name := ex.attrs["setup"]; name != "" {
		setup, ok := readmeSetups[name]
		if !ok {
			t.Fatalf("%s:%d: no setup %q", ex.file, ex.line, name)
		}
		fmt.Fprintf(&script, "{\n%s\n} >/dev/null 2>setup.log || { echo 'setup failed' >&2; cat setup.log >&2; exit 1; }\n", env.rewrite(setup, true))
	}
	for i, s := range ex.steps {
		fmt.Fprintf(&script, "__step %d\n", i)
		if m := catFile.FindStringSubmatch(s.cmd); m != nil && ex.lang == "" {
			// "$ cat FILE" shows a file the transcript's next commands read.
			if err := os.WriteFile(filepath.Join(dir, m[1]), []byte(s.want+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if s.stop {
			script.WriteString("__stop_server\n")
		}
		lines := strings.Split(env.rewrite(s.cmd, true), "\n")
		for j, l := range lines {
			// In a transcript, a2ad serve shows what it prints as it ends.
			if ex.lang != "" && foregroundServe.MatchString(l) {
				lines[j] = "__mark; " + l + " >>server.log 2>&1 &\n__wait_ready"
			}
		}
		cmd := strings.Join(lines, "\n")
		if ex.lang == "" {
			cmd = "{ " + cmd + "\n} 2>&1"
		}
		script.WriteString(cmd + "\n")
	}
	fmt.Fprintf(&script, "__step %d\n__stop_all\n", len(ex.steps))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-c", script.String())
	c.Dir = dir
	// The examples see none of the A2AD_ settings of whoever runs the
	// tests, only their own.
	inherited := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "A2AD_") })
	c.Env = append(inherited,
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"A2AD_BIN="+bin,
		"A2AD_LISTEN=127.0.0.1:"+env.ports["8080"],
		"A2AD_ADMIN_LISTEN=127.0.0.1:"+env.ports["8081"],
		"A2AD_SERVER=http://127.0.0.1:"+env.ports["8081"],
		"A2AD_ADMIN_URL=http://127.0.0.1:"+env.ports["8081"], // the setup scripts' name for it
		"A2AD_URL=http://127.0.0.1:"+env.ports["8080"])
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) // anything the script left
	logs, _ := os.ReadFile(filepath.Join(dir, "server.log"))
	outs := splitSteps(stdout.String())
	if err != nil && mayRetry && strings.Contains(stderr.String()+string(logs), "the address is in use") {
		return true
	}
	if err != nil || len(outs) != len(ex.steps)+1 {
		t.Fatalf("%s:%d: %s: %v; ran %d of %d steps\nstdout:\n%s\nstderr:\n%s\nserver log:\n%s",
			ex.file, ex.line, ex.name, err, len(outs)-1, len(ex.steps), &stdout, &stderr, logs)
	}
	for i, s := range ex.steps {
		if !s.hasWant {
			continue
		}
		want := env.rewrite(s.want, false)
		if diff := matchOutput(want, outs[i]); diff != "" {
			t.Errorf("%s:%d: %s, command %d:\n%s\n%s\ngot:\n%s\nstderr:\n%s", ex.file, ex.line, ex.name, i+1,
				strings.TrimSpace(s.cmd), diff, outs[i], &stderr)
		}
	}
	return false
}

// splitSteps cuts a script's stdout at the markers __step writes: the
// i-th element is what step i printed.
func splitSteps(out string) []string {
	parts := strings.Split(out, "\x00step\n")
	if len(parts) < 2 {
		return nil
	}
	return parts[1:]
}

// readmePrelude is the script's start: helpers for the rewritten
// commands, the step markers, and the cleanup. __wait_ready waits for a
// new "a2ad serving" line of the server just started (__mark counts the
// earlier ones) before it trusts /readyz: a port freePort found free can
// be taken by another test's listener before a2ad binds it, and then
// /readyz answered from that listener (an admin one, which has /readyz)
// while a2ad had exited with "the address is in use", and the example's
// calls went there (issue 30). Now the script fails, and runExample
// retries on fresh ports.
const readmePrelude = `
__step() { printf '\0step\n'; }
__mark() { __seen=$(grep -c '"a2ad serving"' server.log 2>/dev/null); __seen=${__seen:-0}; }
__wait_ready() {
  local pid=$! n
  for _ in $(seq 100); do
    if ! kill -0 "$pid" 2>/dev/null; then echo "a2ad exited before it served" >&2; cat server.log >&2; exit 1; fi
    n=$(grep -c '"a2ad serving"' server.log 2>/dev/null)
    [ "${n:-0}" -gt "$__seen" ] && curl -sf --max-time 1 "$A2AD_URL/readyz" >/dev/null && return 0
    sleep 0.1
  done
  echo "a2ad did not become ready" >&2; cat server.log >&2; exit 1
}
__stop_server() { kill "$__server"; wait "$__server"; }
__stop_all() { kill $(jobs -p) 2>/dev/null; wait; }
`

// TestReadmeCatalogVersions: the catalogue versions the README and the guides show
// (TestReadmeExamples masks them) are those a newcomer sees: the shipped
// catalogue's, and in the reload example that of the copy its setup adds
// a function to. Each "…"-shortened one is the start of one of them.
func TestReadmeCatalogVersions(t *testing.T) {
	shipped, err := functions.Load(exampleCatalog, functions.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := newExampleDir(t)
	data, err := os.ReadFile(exampleCatalog)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(copied, append(data, reloadAdded...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"schemas", "bin"} {
		if err := os.Symlink(filepath.Join("examples", sub), filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
	}
	changed, err := functions.Load(copied, functions.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	versions := []string{shipped.Version, changed.Version}
	// A write-ahead log segment's name (%016x.wal) is no version.
	shown := regexp.MustCompile(`\b([0-9a-f]{16})\b(?:[^.]|$)|"version":"([0-9a-f]{2,})…"`)
	for _, page := range docPages(t) {
		text, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(text), "\n") {
			for _, m := range shown.FindAllStringSubmatch(line, -1) {
				full, start := m[1], m[2]
				if !slices.ContainsFunc(versions, func(v string) bool { return v == full || start != "" && strings.HasPrefix(v, start) }) {
					t.Errorf("%s:%d: version %s%s is neither the shipped catalogue's (%s) nor the reload example's (%s)",
						page, i+1, full, start, shipped.Version, changed.Version)
				}
			}
		}
	}
}

// readmeWrites are the files the README's commands write in the
// repository's root, where they run: the server's store, the worked
// example's files, a store tool's backup and compaction, the catalogue
// section's broken.yaml and hello/, the plain-text section's plain.yaml.
var readmeWrites = []string{"a2ad", "a2ad.db", "a2ad.db.wal/spare-1", "backup.db.wal/spare-1", "a2ad.db.bak", "a2ad.log", "audit.log", "keys.yaml", "backup.db",
	"broken.yaml", "hello/bin/greet.sh", "hello/catalog.yaml", "plain.yaml"}

// TestReadmeWritesAreIgnored: git ignores what following the README
// leaves in the checkout.
func TestReadmeWritesAreIgnored(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skip("not in a git checkout")
	}
	args := append([]string{"-C", root, "check-ignore", "--no-index", "--verbose", "--non-matching"}, readmeWrites...)
	out, err := exec.Command("git", args...).Output()
	if err != nil && len(out) == 0 {
		t.Fatalf("git check-ignore: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, ok := strings.CutPrefix(line, "::\t"); ok {
			t.Errorf("%s, which the README's examples write, is not in .gitignore", path)
		}
	}
}

// TestReadmeWaitReadyTrustsOnlyItsServer: when the port the example's
// server was given is taken by another listener that answers /readyz (an
// admin listener of another test's a2ad), and the server exits with "the
// address is in use", __wait_ready fails instead of taking that listener
// for the example's server (which sent the example's calls to it).
func TestReadmeWaitReadyTrustsOnlyItsServer(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"status":"ready"}`))
	}))
	defer other.Close()
	dir := t.TempDir()
	// A stand-in a2ad that fails as a2ad does when its port is held.
	fake := "#!/bin/sh\necho '{\"level\":\"error\",\"message\":\"--listen 127.0.0.1:1: the address is in use\"}' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "a2ad"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	script := readmePrelude + "__start_server() { __mark; a2ad serve >>server.log 2>&1 & __server=$!; __wait_ready; }\n__start_server\necho example-went-on\n"
	c := exec.Command("bash", "-c", script)
	c.Dir = dir
	c.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "A2AD_URL="+other.URL)
	out, err := c.CombinedOutput()
	if err == nil || strings.Contains(string(out), "example-went-on") {
		t.Fatalf("__wait_ready took another listener's /readyz for the example's server: err %v, output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "a2ad exited before it served") || !strings.Contains(string(out), "the address is in use") {
		t.Errorf("output does not say the server exited, with its log:\n%s", out)
	}
}
