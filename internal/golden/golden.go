// Package golden compares what a test produced with a golden file kept in
// its testdata, and rewrites the file when the test is run with -update.
package golden

import (
	"bytes"
	"os"
	"testing"
)

// Check fails tb unless got is the content of the golden file at path.
// With update, it first writes got there. why says what a difference
// means, for the failure's message.
func Check(tb testing.TB, path string, got []byte, update bool, why string) {
	tb.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("%s: %s differs:\n got:\n%s\nwant:\n%s", why, path, got, want)
	}
}
