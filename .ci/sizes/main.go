// Command sizes enforces the project's size habit (CONTRIBUTING.md, issue
// 14): no non-test function over 80 lines and no non-test file over 600
// lines, unless the reason is written down. A file states its reason in a
// comment line starting "// Long file:" anywhere in its top comments; a
// function in its doc comment, with a line starting "// Long function:".
// It lives under .ci so that ./... (build, vet, test) does not see it; run
// it as `go run ./.ci/sizes` from the module root.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const (
	maxFuncLines = 80
	maxFileLines = 600
)

func main() {
	var problems []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		problems = append(problems, check(fset, p, f)...)
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sizes:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Printf("%d over the size habit: split them, or write the reason (\"// Long file:\" at the file's top, \"// Long function:\" in the doc comment)\n", len(problems))
		os.Exit(1)
	}
}

// check returns the file's and its functions' problems.
func check(fset *token.FileSet, path string, f *ast.File) []string {
	var out []string
	if n := fset.File(f.Pos()).LineCount(); n > maxFileLines && !hasReason(f.Comments, f.Package, "// Long file:") {
		out = append(out, fmt.Sprintf("%s: %d lines (over %d) and no \"// Long file:\" reason", path, n, maxFileLines))
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
		n := end.Line - start.Line + 1
		if n <= maxFuncLines || (fd.Doc != nil && docHas(fd.Doc, "// Long function:")) {
			continue
		}
		out = append(out, fmt.Sprintf("%s:%d: func %s is %d lines (over %d) and its doc gives no \"// Long function:\" reason", path, start.Line, fd.Name.Name, n, maxFuncLines))
	}
	return out
}

// hasReason reports whether a comment before the package clause (or the
// first comment group after it) carries the marker.
func hasReason(groups []*ast.CommentGroup, pkg token.Pos, marker string) bool {
	for i, g := range groups {
		if g.Pos() > pkg && i > 0 && groups[i-1].Pos() > pkg {
			break
		}
		if docHas(g, marker) {
			return true
		}
	}
	return false
}

func docHas(g *ast.CommentGroup, marker string) bool {
	for _, c := range g.List {
		if strings.HasPrefix(c.Text, marker) {
			return true
		}
	}
	return false
}
