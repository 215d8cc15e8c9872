package testkit_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/a2ad/a2ad/internal/testkit"
)

func TestSyncBuffer(t *testing.T) {
	var b testkit.SyncBuffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { _, _ = b.Write([]byte("ab")) })
	}
	wg.Wait()
	if got := b.String(); got != "abababab" {
		t.Errorf("String = %q, want four writes of %q", got, "ab")
	}
}

// TestOnlyTestsImportIt: testkit and the other test helper packages are
// for tests; code that ships must not depend on them (nor link testing).
func TestOnlyTestsImportIt(t *testing.T) {
	testOnly := map[string]bool{
		"github.com/a2ad/a2ad/internal/testkit":        true,
		"github.com/a2ad/a2ad/internal/golden":         true,
		"github.com/a2ad/a2ad/internal/pgtest":         true,
		"github.com/a2ad/a2ad/internal/costtest":       true,
		"github.com/a2ad/a2ad/transport/transporttest": true,
	}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if testOnly[p] && !strings.HasPrefix(filepath.ToSlash(path), "../../"+strings.TrimPrefix(p, "github.com/a2ad/a2ad/")+"/") {
				t.Errorf("%s imports %s; only tests may", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
