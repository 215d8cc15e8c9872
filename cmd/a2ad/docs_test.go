package main

import (
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
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
