package logw

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
)

// countingWriter records each write.
type countingWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	return c.buf.Write(p)
}

// TestLinesKeptInOrderAndWhole: lines from many goroutines all arrive,
// whole, each goroutine's in its order, in fewer writes than lines.
func TestLinesKeptInOrderAndWhole(t *testing.T) {
	var cw countingWriter
	w := New(&cw)
	var wg sync.WaitGroup
	const g, n = 16, 500
	for i := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range n {
				fmt.Fprintf(w, "g%02d line %04d\n", i, j)
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(cw.buf.String(), "\n"), "\n")
	if len(lines) != g*n {
		t.Fatalf("%d lines, want %d", len(lines), g*n)
	}
	next := make([]int, g)
	for _, l := range lines {
		var i, j int
		if _, err := fmt.Sscanf(l, "g%02d line %04d", &i, &j); err != nil || j != next[i] {
			t.Fatalf("line %q out of order or torn (want g%02d line %04d)", l, i, next[i])
		}
		next[i]++
	}
	if cw.writes >= g*n {
		t.Errorf("%d writes for %d lines: nothing was batched", cw.writes, g*n)
	}
	t.Logf("%d lines in %d writes", g*n, cw.writes)
}

// TestErrorLinesAndFlushAreOut: a line at error level, and anything
// before a Flush, is written when the call returns.
func TestErrorLinesAndFlushAreOut(t *testing.T) {
	var cw countingWriter
	w := New(&cw)
	defer w.Close()
	log := zerolog.New(w)
	log.Info().Msg("first")
	log.Error().Msg("broken")
	cw.mu.Lock()
	got := cw.buf.String()
	cw.mu.Unlock()
	if !strings.Contains(got, `"message":"first"`) || !strings.Contains(got, `"message":"broken"`) {
		t.Fatalf("after an error line the log holds %q", got)
	}
	fmt.Fprintln(w, "plain")
	w.Flush()
	cw.mu.Lock()
	got = cw.buf.String()
	cw.mu.Unlock()
	if !strings.HasSuffix(got, "plain\n") {
		t.Fatalf("after Flush the log holds %q", got)
	}
}

// TestWritesAfterCloseGoThrough: after Close a write reaches w at once.
func TestWritesAfterCloseGoThrough(t *testing.T) {
	var cw countingWriter
	w := New(&cw)
	fmt.Fprintln(w, "before")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(w, "after")
	if got := cw.buf.String(); got != "before\nafter\n" {
		t.Fatalf("log %q", got)
	}
}
