package v1_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got, compact JSON, with testdata/<name>.json, which
// holds it indented for reading; -update rewrites the file. The
// comparison is byte for byte after compacting the file, so field order
// and string escapes are pinned too.
func golden(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", filepath.FromSlash(name)+".json")
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, got, "", "  "); err != nil {
		tb.Fatalf("%s: output is not JSON: %v\n%s", name, err, got)
	}
	pretty.WriteByte('\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (go test -run %s -update writes it)", err, tb.Name())
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, want); err != nil {
		tb.Fatalf("%s: golden file is not JSON: %v", path, err)
	}
	if !bytes.Equal(compact.Bytes(), got) {
		tb.Errorf("%s differs from %s:\n got %s\nwant %s", name, path, got, compact.Bytes())
	}
}

// goldenValue is golden for a decoded core value, shown through
// encoding/json, but for a message, shown in its 0.3 form.
func goldenValue(tb testing.TB, name string, v any) {
	tb.Helper()
	if p, ok := v.(a2a.SendParams); ok {
		m, err := v03.AppendMessage(nil, &p.Message)
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		v = struct {
			Message             json.RawMessage
			Blocking            *bool
			HistoryLength       *int
			AcceptedOutputModes []string
			PushConfig          *a2a.PushConfig
			Metadata            map[string]any
		}{m, p.Blocking, p.HistoryLength, p.AcceptedOutputModes, p.PushConfig, p.Metadata}
	}
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	golden(tb, name, b)
}
