//go:build linux

package functions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2ad/a2ad/functions"
)

// TestExecBackend_Nice: the child runs at the niceness its backend sets,
// so that a busy function yields the CPU to a2ad's request handling.
func TestExecBackend_Nice(t *testing.T) {
	own, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	if own != 20 { // the raw value is 20 - nice: this test runs at nice 0
		t.Skipf("the test process runs at nice %d", 20-own)
	}
	for _, nice := range []int{0, functions.DefaultNice, 19} {
		b := &functions.ExecBackend{Argv: []string{"sh", "-c", `printf '{"nice":%s}' "$(nice)"`}, Nice: nice}
		res, err := b.Invoke(context.Background(), json.RawMessage(`{}`))
		AssertOutput(t, res, err, fmt.Sprintf(`{"nice":%d}`, nice))
	}
	// The threads made nicer for the children ended with them: no
	// goroutine of a2ad runs at their niceness.
	for range 20 {
		b := &functions.ExecBackend{Argv: []string{"true"}, Nice: 19}
		_, _ = b.Invoke(context.Background(), json.RawMessage(`{}`))
	}
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if p, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid()); err != nil || p != 20 {
				t.Errorf("a thread of the test process runs at raw priority %d (%v), want 20 (nice 0)", p, err)
			}
			time.Sleep(time.Millisecond)
		})
	}
	wg.Wait()
}
