package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// leafOf is the page under the tasks bucket's root branch that holds id.
func leafOf(tb testing.TB, l testkit.Layout, path, id string) int64 {
	tb.Helper()
	leaf := int64(-1)
	for _, c := range l.Children(tb, path) {
		if c.Key > id {
			break
		}
		leaf = c.Page
	}
	if leaf < 0 {
		tb.Fatalf("no leaf under page %d holds %s", l.Root, id)
	}
	return leaf
}

// TestDamagedStoreEndsServeAndCheckCleanly damages a store the server
// wrote in the three ways issue 13 names, and runs the real binary on
// it: `a2ad serve` and `a2ad store check` each print one line that says
// the file is damaged and what to do, and exit 3; no panic, no goroutine
// dump, no SIGBUS (which killed both with exit code 2 before).
func TestDamagedStoreEndsServeAndCheckCleanly(t *testing.T) {
	skipShort(t, "runs the real binary")
	dir := t.TempDir()
	seeded := filepath.Join(dir, "seed.db")
	m, stop := runServer(t, seeded, nil)
	base := "http://" + m.Addr()
	sendMany(t, base, "m", 60, 1024) // the tasks bucket spans pages under a branch
	sleeping := resultTask(t, rpc(t, base, "message/send", sendParams("sleep", "demo::sleep", map[string]any{"seconds": 60}, false)))
	sleepID := sleeping["id"].(string)
	stop() // the sleeping task stays working: the next start reads it
	l := testkit.ReadLayout(t, seeded, "tasks")
	if l.Freelist == 0 {
		t.Fatalf("no freelist page in %+v", l)
	}
	end := l.Pages * l.PageSize
	leaf := leafOf(t, l, seeded, sleepID)
	garbage := testkit.Garbage

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
			testkit.OverwriteAt(t, path, l.Freelist*l.PageSize, garbage(l.PageSize))
		}, fmt.Sprintf("its freelist page %d is no freelist page (flags 0xa5a5)", l.Freelist)},
		{"garbage leaf page", func(path string) {
			testkit.OverwriteAt(t, path, leaf*l.PageSize, garbage(l.PageSize))
		}, fmt.Sprintf("reading it failed: assertion failed: Page expected to be: %d, but self identifies as 11936128518282651045", leaf)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a2ad.db")
			testkit.CopyFile(t, seeded, path)
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

// TestCompactWhileAServerWaitsForTheStore is issue 13's race against the
// real binaries: a server starts while the store is held (here by this
// test, as by a server still shutting down) and waits for the lock;
// meanwhile `a2ad store compact` rewrites the file in place. When the
// lock is free, the server must hold the compacted file, never the
// original kept as .bak: a task it takes is in the file at the path and
// not in the .bak, which compact tells the operator to delete.
func TestCompactWhileAServerWaitsForTheStore(t *testing.T) {
	skipShort(t, "runs the real binary")
	dir := t.TempDir()
	path := filepath.Join(dir, "a2ad.db")
	before := writeTasks(t, path, "m", 20, 100)

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
	for testkit.FDsOn(t, p.cmd.Process.Pid, original) == 0 {
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
	if n := testkit.FDsOn(t, pid, original); n != 0 {
		t.Errorf("the server has %d descriptors on the original, now %s.bak", n, path)
	}
	if n := testkit.FDsOn(t, pid, testkit.Stat(t, path)); n != 1 {
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
	if !testkit.HasKey(t, path, "tasks", id) {
		t.Errorf("the task taken after the compact is not in %s", path)
	}
	if testkit.HasKey(t, path+".bak", "tasks", id) {
		t.Errorf("the task taken after the compact is in %s.bak", path)
	}
	for _, old := range before {
		if !testkit.HasKey(t, path, "tasks", old) {
			t.Fatalf("task %s, written before the compact, is not in %s", old, path)
		}
	}
}
