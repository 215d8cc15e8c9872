//go:build linux

package main

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// prlimitFileSize sets the soft file size limit of process pid (its hard
// limit stays) and returns the limits it had.
func prlimitFileSize(tb testing.TB, pid int, soft uint64) syscall.Rlimit {
	tb.Helper()
	var old syscall.Rlimit
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(syscall.RLIMIT_FSIZE), 0,
		uintptr(unsafe.Pointer(&old)), 0, 0); e != 0 {
		tb.Fatalf("prlimit: %v", e)
	}
	lim := syscall.Rlimit{Cur: soft, Max: old.Max}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(syscall.RLIMIT_FSIZE),
		uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
		tb.Fatalf("prlimit: %v", e)
	}
	return old
}

// readyz returns the status and body of GET /readyz at base.
func readyz(tb testing.TB, base string) (int, string) {
	tb.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestStoreCannotWrite is issue 26 item 3's full disk, on bbolt: the
// binary's files may not grow past a few KB (its file size limit lowered
// from outside, as a full disk refuses them). Sends are refused with the
// store's retryable -32057 (HTTP 503, Retry-After), /readyz says the store
// cannot write; once the limit is lifted the replica is ready again
// without a write to wake it, sends work, and every task acknowledged
// before is there after a restart.
func TestStoreCannotWrite(t *testing.T) {
	skipShort(t, "builds and runs the real binary")
	dir := t.TempDir()
	t.Setenv("A2AD_TEST_WAL_SEGMENT_BYTES", "65536")
	store := filepath.Join(dir, "a2ad.db")
	p := startBinary(t, shippedCatalog, store)
	var acked []string
	send := func(i int) (int, map[string]any) {
		resp, err := http.Post(p.base+"/a2a", "application/json", strings.NewReader(string(rpcBody("message/send",
			sendParams(fmt.Sprintf("m-%d", i), "demo::echo", map[string]any{"message": strings.Repeat("x", 512)}, true)))))
		return resp.StatusCode, jsonAnswer(t, resp, err)
	}
	for i := range 20 {
		if code, ans := send(i); code != http.StatusOK || ans["result"] == nil {
			t.Fatalf("send %d before the limit: HTTP %d %v", i, code, ans)
		} else {
			acked = append(acked, ans["result"].(map[string]any)["id"].(string))
		}
	}

	old := prlimitFileSize(t, p.cmd.Process.Pid, 4096)
	var code int
	var ans map[string]any
	for i := 20; ; i++ {
		if code, ans = send(i); ans["error"] != nil {
			break
		}
		acked = append(acked, ans["result"].(map[string]any)["id"].(string))
		if i > 200 {
			t.Fatal("200 sends went through a file size limit of 4 KB")
		}
	}
	e := ans["error"].(map[string]any)
	if code != http.StatusServiceUnavailable || e["code"] != float64(-32057) || e["message"] != "Task store unavailable; retry later" {
		t.Fatalf("a send the store cannot write: HTTP %d %v, want 503 and -32057", code, e)
	}
	if st, body := readyz(t, p.base); st != http.StatusServiceUnavailable || !strings.Contains(body, "store cannot write to its disk") {
		t.Fatalf("/readyz while the store cannot write: %d %s", st, body)
	}
	if code, ans = send(1000); code != http.StatusServiceUnavailable {
		t.Fatalf("a second send while the store cannot write: HTTP %d %v", code, ans)
	}
	if err := p.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("a2ad died of the file size limit: %v", err)
	}

	prlimitFileSize(t, p.cmd.Process.Pid, old.Cur)
	lifted := time.Now()
	for {
		st, body := readyz(t, p.base)
		if st == http.StatusOK {
			break
		}
		if time.Since(lifted) > 10*time.Second {
			t.Fatalf("/readyz 10 s after the limit was lifted: %d %s", st, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("ready again %v after the limit was lifted, with no write to wake it", time.Since(lifted))
	if code, ans = send(2000); code != http.StatusOK || ans["result"] == nil {
		t.Fatalf("a send once the store can write: HTTP %d %v", code, ans)
	}
	acked = append(acked, ans["result"].(map[string]any)["id"].(string))

	if err := p.terminate(t, 20*time.Second); err != nil {
		t.Fatalf("a2ad's exit after SIGTERM: %v", err)
	}
	p2 := startBinary(t, shippedCatalog, store)
	for _, id := range acked {
		if got := resultTask(t, rpc(t, p2.base, "tasks/get", map[string]any{"id": id})); state(got) != "completed" {
			t.Fatalf("task %s after the restart: %v", id, got)
		}
	}
	t.Logf("%d acknowledged tasks all there after the restart", len(acked))
}
