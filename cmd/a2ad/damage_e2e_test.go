package main

import (
	"bytes"
	be "encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/internal/testkit"
)

// runBinary runs the real binary to its end and returns its exit code and
// output.
func runBinary(tb testing.TB, args ...string) (code int, stdout, stderr string) {
	tb.Helper()
	cmd := exec.Command(binary(tb), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		tb.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// storeLayout is where a store file keeps what the damages hit: the page
// size and pages in use (bbolt), the freelist page, and the leaf page of
// the tasks bucket that holds a task (from the raw pages: bbolt's page
// header is id(8) flags(2) count(2) overflow(4), a branch element pos(4)
// ksize(4) pgid(8) with its key pos bytes further on; in the machine's
// byte order).
type storeLayout struct {
	pageSize, pages, freelist int64
	tasksRoot                 int64
}

func layoutOf(tb testing.TB, path string) storeLayout {
	tb.Helper()
	var l storeLayout
	testkit.ViewStore(tb, path, func(tx *bolt.Tx) error {
		l.pageSize = int64(tx.DB().Info().PageSize)
		l.pages = tx.Size() / l.pageSize
		for id := 2; int64(id) < l.pages; id++ {
			if pi, err := tx.Page(id); err == nil && pi != nil && pi.Type == "freelist" {
				l.freelist = int64(id)
			}
		}
		l.tasksRoot = int64(tx.Bucket([]byte("tasks")).Root())
		return nil
	})
	return l
}

// leafOf is the page under the tasks bucket's root branch that holds id.
func (l storeLayout) leafOf(tb testing.TB, path, id string) int64 {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	ne := be.NativeEndian
	p := raw[l.tasksRoot*l.pageSize:]
	if ne.Uint16(p[8:]) != 0x01 {
		tb.Fatalf("the tasks bucket's root page %d is no branch page: seed more tasks", l.tasksRoot)
	}
	leaf := int64(-1)
	for i := range int(ne.Uint16(p[10:])) {
		e := 16 + i*16
		pos, ksize := int(ne.Uint32(p[e:])), int(ne.Uint32(p[e+4:]))
		if string(p[e+pos:e+pos+ksize]) > id {
			break
		}
		leaf = int64(ne.Uint64(p[e+8:]))
	}
	if leaf < 0 {
		tb.Fatalf("no leaf under page %d holds %s", l.tasksRoot, id)
	}
	return leaf
}

func copyStore(tb testing.TB, from, to string) {
	tb.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// TestDamagedStoreEndsServeAndCheckCleanly damages a store the server
// wrote in the three ways issue 13 names, and runs the real binary on
// it: `a2ad serve` and `a2ad store check` each print one line that says
// the file is damaged and what to do, and exit 3; no panic, no goroutine
// dump, no SIGBUS (which killed both with exit code 2 before).
func TestDamagedStoreEndsServeAndCheckCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	dir := t.TempDir()
	seeded := filepath.Join(dir, "seed.db")
	m, stop := runServer(t, seeded, nil)
	base := "http://" + m.Addr()
	sendMany(t, base, "m", 60, 1024) // the tasks bucket spans pages under a branch
	sleeping := resultTask(t, rpc(t, base, "message/send", sendParams("sleep", "demo::sleep", map[string]any{"seconds": 60}, false)))
	sleepID := sleeping["id"].(string)
	stop() // the sleeping task stays working: the next start reads it
	l := layoutOf(t, seeded)
	if l.freelist == 0 {
		t.Fatalf("no freelist page in %+v", l)
	}
	end := l.pages * l.pageSize
	leaf := l.leafOf(t, seeded, sleepID)
	garbage := func(n int64) []byte { return bytes.Repeat([]byte{0xA5}, int(n)) }

	for _, tc := range []struct {
		name   string
		damage func(path string)
		want   string // what is wrong, after "is damaged: "
	}{
		{"truncated", func(path string) {
			if err := os.Truncate(path, end/2); err != nil {
				t.Fatal(err)
			}
		}, fmt.Sprintf("the file is %d bytes, but its pages reach to byte %d (it was cut short)", end/2, end)},
		{"garbage freelist", func(path string) {
			testkit.OverwriteAt(t, path, l.freelist*l.pageSize, garbage(l.pageSize))
		}, fmt.Sprintf("its freelist page %d is no freelist page (flags 0xa5a5)", l.freelist)},
		{"garbage leaf page", func(path string) {
			testkit.OverwriteAt(t, path, leaf*l.pageSize, garbage(l.pageSize))
		}, fmt.Sprintf("reading it failed: assertion failed: Page expected to be: %d, but self identifies as 11936128518282651045", leaf)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a2ad.db")
			copyStore(t, seeded, path)
			tc.damage(path)

			code, stdout, stderr := runBinary(t, "serve", "--catalog", exampleCatalog, "--store", path,
				"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
			want := "a2ad: the store file " + path + " is damaged: " + tc.want + "; restore the last backup or run a2ad store check --store " + path + "\n"
			if code != 3 || stdout != "" || stderr != want { // 3: the README's and the systemd unit's
				t.Errorf("a2ad serve = %d, stdout %q, stderr %q; want 3 and %q", code, stdout, stderr, want)
			}

			code, stdout, stderr = runBinary(t, "store", "check", "--store", path)
			want = "a2ad: the store file " + path + " is damaged: " + tc.want + "; restore the last backup\n"
			if code != 3 || stdout != "" || stderr != want {
				t.Errorf("a2ad store check = %d, stdout %q, stderr %q; want 3 and %q", code, stdout, stderr, want)
			}
		})
	}
}

// launchServer starts the real binary's serve on store without waiting
// for it; ready yields its base URL once it serves.
func launchServer(tb testing.TB, store string, extra ...string) (p *process, ready <-chan string) {
	tb.Helper()
	return launch(tb, append([]string{"serve", "--catalog", exampleCatalog, "--store", store, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"}, extra...)...)
}

// fdsOn counts the descriptors process pid has open on the file fi
// (/proc/PID/fd); the test skips where there is no /proc.
func fdsOn(tb testing.TB, pid int, fi os.FileInfo) int {
	tb.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Skipf("no %s: %v", dir, err)
	}
	n := 0
	for _, e := range ents {
		if got, err := os.Stat(dir + "/" + e.Name()); err == nil && os.SameFile(got, fi) {
			n++
		}
	}
	return n
}

// holdsTask reports whether the store file at path holds task id.
func holdsTask(tb testing.TB, path, id string) bool {
	tb.Helper()
	var found bool
	testkit.ViewStore(tb, path, func(tx *bolt.Tx) error {
		found = tx.Bucket([]byte("tasks")).Get([]byte(id)) != nil
		return nil
	})
	return found
}

// TestCompactWhileAServerWaitsForTheStore is issue 13's race against the
// real binaries: a server starts while the store is held (here by this
// test, as by a server still shutting down) and waits for the lock;
// meanwhile `a2ad store compact` rewrites the file in place. When the
// lock is free, the server must hold the compacted file, never the
// original kept as .bak: a task it takes is in the file at the path and
// not in the .bak, which compact tells the operator to delete.
func TestCompactWhileAServerWaitsForTheStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "a2ad.db")
	m, stop := runServer(t, path, nil)
	before := sendMany(t, "http://"+m.Addr(), "m", 20, 100)
	stop()

	// A shared lock, as a2ad store check or backup --store take: the
	// server waits, compact does not.
	holder, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	original := testkit.Stat(t, path)
	p, ready := launchServer(t, path, "--store-lock-timeout", "60s")
	deadline := time.Now().Add(20 * time.Second)
	for fdsOn(t, p.cmd.Process.Pid, original) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server did not open the store")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-ready:
		t.Fatal("the server started on a store that is held")
	case <-time.After(200 * time.Millisecond):
	}

	code, stdout, stderr := runBinary(t, "store", "compact", "--store", path)
	if code != 0 || !strings.Contains(stdout, "kept the original as "+path+".bak") {
		t.Fatalf("a2ad store compact = %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	var base string
	select {
	case base = <-ready:
	case <-time.After(20 * time.Second):
		p.mu.Lock()
		defer p.mu.Unlock()
		t.Fatalf("the server did not start once the store was free:\n%s", p.logs)
	}
	pid := p.cmd.Process.Pid
	if n := fdsOn(t, pid, original); n != 0 {
		t.Errorf("the server has %d descriptors on the original, now %s.bak", n, path)
	}
	if n := fdsOn(t, pid, testkit.Stat(t, path)); n != 1 {
		t.Errorf("the server has %d descriptors on the compacted %s, want 1", n, path)
	}
	id, err := send(base, "after-compact", 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("the server's exit: %v", err)
	}
	if !holdsTask(t, path, id) {
		t.Errorf("the task taken after the compact is not in %s", path)
	}
	if holdsTask(t, path+".bak", id) {
		t.Errorf("the task taken after the compact is in %s.bak", path)
	}
	for _, old := range before {
		if !holdsTask(t, path, old) {
			t.Fatalf("task %s, written before the compact, is not in %s", old, path)
		}
	}
}
