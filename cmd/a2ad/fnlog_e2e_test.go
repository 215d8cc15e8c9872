package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/internal/testkit"
)

// notJSONScript writes a line to stderr and a result that is not JSON.
const notJSONScript = `#!/bin/sh
cat >/dev/null
echo "parsing the input" >&2
echo "hello not json"
`

// TestFunctionLogForItsAuthor runs a function that prints no JSON through
// the real server: the caller sees the sanitised reason; the log has its
// stderr line at info, naming the task and the function, and, at debug
// level only, an excerpt of what it printed.
func TestFunctionLogForItsAuthor(t *testing.T) {
	for _, level := range []zerolog.Level{zerolog.DebugLevel, zerolog.InfoLevel} {
		t.Run(level.String(), func(t *testing.T) {
			dir := t.TempDir()
			script := filepath.Join(dir, "notjson.sh")
			putScript(t, script, notJSONScript)
			catalog := filepath.Join(dir, "catalog.yaml")
			putFile(t, catalog, fmt.Sprintf(`functions:
  - id: demo::notjson
    metadata: {"a2a.expose": true}
    exec: {argv: [%q]}
`, script))
			var log testkit.SyncBuffer
			cfg := testConfig(filepath.Join(dir, "a2ad.db"))
			cfg.Catalog = catalog
			m := openMain(t, &Main{Config: cfg, Logger: zerolog.New(&log).Level(level)})
			closeAtEnd(t, m)

			task := resultTask(t, rpc(t, "http://"+m.Addr(), "message/send", sendParams("m-1", "demo::notjson", map[string]any{}, true)))
			if state(task) != "failed" || statusMessage(task) != "function returned invalid JSON" {
				t.Fatalf("task = %s %q, want failed %q", state(task), statusMessage(task), "function returned invalid JSON")
			}
			// Invoke logs before it returns, so before the send answers.
			id := task["id"].(string)
			entries := logEntries(t, log.String())
			stderr := findEntry(entries, "function stderr")
			want := map[string]any{"level": "info", "task_id": id, "function_id": "demo::notjson", "function_stderr": "parsing the input"}
			for k, v := range want {
				if stderr == nil || stderr[k] != v {
					t.Errorf("stderr entry = %v, want %s = %v", stderr, k, v)
				}
			}
			excerpt := findEntry(entries, "function returned invalid JSON")
			switch {
			case level == zerolog.InfoLevel && excerpt != nil:
				t.Errorf("info log holds %v", excerpt)
			case level == zerolog.InfoLevel && strings.Contains(log.String(), "hello"):
				t.Errorf("info log holds the output: %s", log.String())
			case level == zerolog.DebugLevel && (excerpt == nil || excerpt["output_excerpt"] != `hello not json\n` ||
				excerpt["error_offset"] != float64(1) || excerpt["task_id"] != id || excerpt["function_id"] != "demo::notjson"):
				t.Errorf("debug excerpt entry = %v", excerpt)
			}
		})
	}
}

// logEntries decodes a JSON log, one entry a line.
func logEntries(tb testing.TB, log string) []map[string]any {
	tb.Helper()
	return jsonLines(tb, strings.NewReader(log), "log")
}

// findEntry returns the first entry with the message, or nil.
func findEntry(entries []map[string]any, msg string) map[string]any {
	for _, e := range entries {
		if e["message"] == msg {
			return e
		}
	}
	return nil
}
