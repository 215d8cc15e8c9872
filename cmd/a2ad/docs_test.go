package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
)

// The documentation is a set of Markdown pages: the README, the guides
// under docs/, the generated reference under docs/reference/, and the
// pages beside the README. TestDocsLinks keeps their links true (a page
// moved or a heading renamed breaks no link unseen), and every guide and
// reference page within two links of the README (issue 30).

// docsPagesLinked are the pages whose links are checked, from the
// repository's root, besides the guides and the reference.
var docsPagesLinked = []string{"README.md", "CONTRIBUTING.md", "BENCHMARKS.md", "CHANGELOG.md", "CONFORMANCE.md"}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// docsPage is a page's headings' anchors and its links.
type docsPage struct {
	anchors map[string]bool
	links   []docsLink
}

type docsLink struct {
	line   int
	target string
}

// readDocsPage reads a Markdown page: the anchors GitHub gives its
// headings and the links outside its code blocks and code spans.
func readDocsPage(tb testing.TB, page string) *docsPage {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
	if err != nil {
		tb.Fatal(err)
	}
	p := &docsPage{anchors: map[string]bool{}}
	seen := map[string]int{}
	inFence := false
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := mdHeading.FindStringSubmatch(line); m != nil {
			slug := headingAnchor(m[1])
			if n := seen[slug]; n > 0 {
				p.anchors[slug+"-"+strconv.Itoa(n)] = true
			} else {
				p.anchors[slug] = true
			}
			seen[slug]++
		}
		for _, m := range mdLink.FindAllStringSubmatch(withoutCodeSpans(line), -1) {
			p.links = append(p.links, docsLink{line: i + 1, target: m[1]})
		}
	}
	return p
}

// withoutCodeSpans blanks the `code spans` of a line.
func withoutCodeSpans(line string) string {
	parts := strings.Split(line, "`")
	for i := 1; i < len(parts); i += 2 {
		parts[i] = ""
	}
	return strings.Join(parts, "`")
}

// headingAnchor is the anchor GitHub gives a heading: lower case, the
// links and code marks dropped, punctuation but - and _ removed, spaces
// as hyphens.
func headingAnchor(h string) string {
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// allDocsPages are every page checked: docsPagesLinked, the guides and
// the reference's Markdown pages.
func allDocsPages(tb testing.TB) []string {
	tb.Helper()
	pages := slices.Clone(docsPagesLinked)
	for _, dir := range []string{"docs", "docs/reference"} {
		found, err := filepath.Glob(filepath.Join(repoRoot, dir, "*.md"))
		if err != nil {
			tb.Fatal(err)
		}
		for _, f := range found {
			pages = append(pages, dir+"/"+filepath.Base(f))
		}
	}
	return pages
}

// TestDocsLinks: every relative link of the documentation names a file
// that exists and, with a #fragment, a heading of that page; every guide
// and reference page is within two links of the README.
func TestDocsLinks(t *testing.T) {
	pages := map[string]*docsPage{}
	for _, page := range allDocsPages(t) {
		pages[page] = readDocsPage(t, page)
	}
	// targets[page] are the pages and files page links to.
	targets := map[string][]string{}
	for _, page := range slices.Sorted(maps.Keys(pages)) {
		for _, l := range pages[page].links {
			if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(l.target, "#")
			dest := page
			if file != "" {
				dest = path.Clean(path.Join(path.Dir(page), file))
				if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(dest))); err != nil {
					t.Errorf("%s:%d: link %s: no file %s", page, l.line, l.target, dest)
					continue
				}
				targets[page] = append(targets[page], dest)
			}
			if frag == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			target := pages[dest]
			if target == nil {
				target = readDocsPage(t, dest)
				pages[dest] = target
			}
			if !target.anchors[frag] {
				t.Errorf("%s:%d: link %s: %s has no heading #%s", page, l.line, l.target, dest, frag)
			}
		}
	}
	// Every guide and reference page within two links of the README.
	depth := map[string]int{"README.md": 0}
	frontier := []string{"README.md"}
	for d := 1; d <= 2; d++ {
		var next []string
		for _, p := range frontier {
			for _, dest := range targets[p] {
				if _, ok := depth[dest]; !ok {
					depth[dest] = d
					next = append(next, dest)
				}
			}
		}
		frontier = next
	}
	for _, dir := range []string{"docs", "docs/reference"} {
		entries, err := os.ReadDir(filepath.Join(repoRoot, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			if _, ok := depth[dir+"/"+e.Name()]; !ok {
				t.Errorf("%s/%s is not within two links of README.md", dir, e.Name())
			}
		}
	}
}

// docsProgram is the fenced block of page that follows the marker
// <!-- program: NAME -->: a whole program of an SDK's, which
// TestDocsGoProgram (and, where node and the JS SDK are installed,
// TestDocsJSProgram) runs against the real binary.
func docsProgram(tb testing.TB, page, name string) string {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
	if err != nil {
		tb.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "<!-- program: "+name+" -->\n")
	if !ok {
		tb.Fatalf("%s has no <!-- program: %s --> marker", page, name)
	}
	_, body, ok := strings.Cut(after, "\n")
	if !ok || !strings.HasPrefix(after, "```") {
		tb.Fatalf("%s: the program %s is not a fenced block right after its marker", page, name)
	}
	body, _, ok = strings.Cut(body, "\n```\n")
	if !ok {
		tb.Fatalf("%s: the program %s has no closing fence", page, name)
	}
	return body + "\n"
}

// TestDocsGoProgram: the a2a-go v2 program of docs/agents.md, built in a
// module of its own with this module's requirements (from the module
// cache, no network), sends and streams against the real binary and
// prints what its comments say.
func TestDocsGoProgram(t *testing.T) {
	skipShort(t, "builds and runs the guide's Go program against the real binary")
	p := startBinary(t, exampleCatalog, filepath.Join(t.TempDir(), "a2ad.db"))
	out := runDocsGoProgram(t, "go-sdk", p.base)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{"TASK_STATE_COMPLETED map[message:hello]", "*a2a.Task"}
	if len(lines) < 4 || lines[0] != want[0] || lines[1] != want[1] || lines[len(lines)-1] != "*a2a.TaskStatusUpdateEvent" ||
		!slices.Contains(lines, "*a2a.TaskArtifactUpdateEvent") {
		t.Errorf("the guide's program printed\n%s\nwant %q, %q, then updates with an artifact, ending with a status update", out, want[0], want[1])
	}
}

// TestDocsGoGRPCProgram: the guide's a2a-go v2 program that sends plain
// text over gRPC alone gets the default skill's answer from the real
// binary serving examples/plaintext/catalog.yaml (issue 28).
func TestDocsGoGRPCProgram(t *testing.T) {
	skipShort(t, "builds and runs the guide's gRPC program against the real binary")
	p := startBinary(t, filepath.Join(repoRoot, "examples", "plaintext", "catalog.yaml"), filepath.Join(t.TempDir(), "a2ad.db"),
		"--grpc-listen", "127.0.0.1:0")
	out := runDocsGoProgram(t, "go-grpc-plain", p.base)
	if want := "TASK_STATE_COMPLETED map[characters:23 words:5]\n"; out != want {
		t.Errorf("the guide's gRPC program printed\n%s\nwant %q", out, want)
	}
	// The call came over gRPC: the binding's request counter says so.
	grpcSend := regexp.MustCompile(`(?m)^a2ad_requests_total\{method="SendMessage",outcome="ok",[^}]*transport="grpc"\} 1$`)
	if raw := scrapeAdmin(t, p.admin).raw; !grpcSend.MatchString(raw) {
		t.Errorf("no gRPC SendMessage counted:\n%s", raw)
	}
}

// runDocsGoProgram builds the Go program of docs/agents.md marked
// <!-- program: name --> in a module of its own with this module's
// requirements (from the module cache, no network), runs it against the
// server at base (for http://127.0.0.1:8080), and returns its output.
func runDocsGoProgram(t *testing.T, name, base string) string {
	t.Helper()
	src := strings.ReplaceAll(docsProgram(t, "docs/agents.md", name), "http://127.0.0.1:8080", base)
	dir := t.TempDir()
	mod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(repoRoot, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mod = []byte(strings.Replace(string(mod), "module github.com/a2ad/a2ad", "module docsprogram", 1))
	for name, data := range map[string][]byte{"go.mod": mod, "go.sum": sum, "main.go": []byte(src)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", ".") // as binary() builds a2ad: the go on PATH
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run of the guide's program %s: %v\n%s", name, err, out)
	}
	return string(out)
}

// TestDocsJSProgram: the README's JS SDK program, run by node against the
// real binary with the JS SDK that interop/js installs (npm ci from its
// lockfile). It skips with one line where node or those packages are
// missing; CI runs the same calls in interop/js/check.mjs.
func TestDocsJSProgram(t *testing.T) {
	skipShort(t, "runs the README's JS program against the real binary")
	node, err := exec.LookPath("node")
	if err != nil {
		skipWithoutNode(t, "needs node; CI runs the same calls in interop/js/check.mjs")
	}
	modules, err := filepath.Abs(filepath.Join(repoRoot, "interop", "js", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(modules, "@a2a-js", "sdk")); err != nil {
		skipWithoutNode(t, "needs the JS SDK in interop/js/node_modules (npm ci there); CI runs the same calls in interop/js/check.mjs")
	}
	p := startBinary(t, exampleCatalog, filepath.Join(t.TempDir(), "a2ad.db"))
	src := strings.ReplaceAll(docsProgram(t, "README.md", "js-sdk"), "http://127.0.0.1:8080", p.base)
	dir := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "call.mjs"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "call.mjs")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if want := "TASK_STATE_COMPLETED { message: 'hello' }\n"; err != nil || string(out) != want {
		t.Errorf("node call.mjs: %v\n%s\nwant %q", err, out, want)
	}
}

// skipWithoutNode skips t for want of node or its packages, or fails it
// under A2AD_REQUIRE_NODE=1, as CI sets it (it installs them).
func skipWithoutNode(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("A2AD_REQUIRE_NODE") != "" {
		t.Fatalf("%s; A2AD_REQUIRE_NODE is set (CI installs them)", why)
	}
	t.Skip(why)
}

// notRunMarker marks, on a page, an example the examples test does not
// run: <!-- not run: NAME --> before its fenced block, NAME a key of
// readmeNotRun, which says why and which test covers it instead.
var notRunMarker = regexp.MustCompile(`^<!-- not run: ([^>]+?) -->$`)

// TestNotRunExamplesMarked: each example of readmeNotRun is marked on its
// page, once, before a fenced block, and each marker names one of them,
// so a page's example is either run or says where it is covered.
func TestNotRunExamplesMarked(t *testing.T) {
	seen := map[string]string{}
	for _, page := range docPages(t) {
		data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		for i, line := range lines {
			m := notRunMarker.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			at := fmt.Sprintf("%s:%d", page, i+1)
			switch name := m[1]; {
			case readmeNotRun[name] == "":
				t.Errorf("%s: %q is not an example readmeNotRun lists", at, name)
			case seen[name] != "":
				t.Errorf("%s: %q is marked at %s too", at, name, seen[name])
			case i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```"):
				t.Errorf("%s: the marker of %q must be followed by a fenced block", at, name)
			default:
				seen[name] = at
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(readmeNotRun)) {
		if seen[name] == "" {
			t.Errorf("readmeNotRun lists %q, but no page marks it <!-- not run: %s -->", name, name)
		}
	}
}
