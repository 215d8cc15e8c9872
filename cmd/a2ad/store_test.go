package main

import (
	"bytes"
	"context"
	be "encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/storecmd"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// runServer runs the real server on the store file at path until stop,
// which may be called before the test ends (and is called at its end).
func runServer(tb testing.TB, path string, mod func(*Config)) (m *Main, stop func()) {
	tb.Helper()
	m = startMainNoCleanup(tb, func(c *Config) {
		c.Store = path
		if mod != nil {
			mod(c)
		}
	})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			if err := m.Close(); err != nil {
				tb.Error(err)
			}
		})
	}
	tb.Cleanup(stop)
	return m, stop
}

func startMainNoCleanup(tb testing.TB, mod func(*Config)) *Main {
	tb.Helper()
	cfg := testConfig("")
	cfg.ShutdownGrace = 200 * time.Millisecond
	cfg.RatePerSecond = 0 // these tests seed stores as fast as one client can
	mod(&cfg)
	m := &Main{Config: cfg, Logger: zerolog.Nop()}
	if err := m.Open(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return m
}

// send posts a message/send of demo::echo with a message of size bytes
// and returns the task id; it may run outside the test's goroutine.
func send(base, msgID string, size int) (string, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send",
		"params": sendParams(msgID, "demo::echo", map[string]any{"message": strings.Repeat("x", size)}, true)})
	resp, err := http.Post(base+"/a2a", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		Result struct {
			ID     string `json:"id"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", err
	}
	if out.Result.Status.State != "completed" {
		return "", fmt.Errorf("message %s: task %q is %q", msgID, out.Result.ID, out.Result.Status.State)
	}
	return out.Result.ID, nil
}

// writeTasks runs a server on the store at path, sends it n echo
// messages (see sendMany) and stops it; it returns the task ids.
func writeTasks(tb testing.TB, path, prefix string, n, size int) []string {
	tb.Helper()
	m, stop := runServer(tb, path, nil)
	defer stop()
	return sendMany(tb, "http://"+m.Addr(), prefix, n, size)
}

// sendMany sends n echo messages from 8 senders and returns the task ids.
func sendMany(tb testing.TB, base, prefix string, n, size int) []string {
	tb.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				id, err := send(base, fmt.Sprintf("%s-%d", prefix, i), size)
				if err != nil {
					tb.Error(err)
					return
				}
				ids[i] = id
			}
		})
	}
	wg.Wait()
	if tb.Failed() {
		tb.FailNow()
	}
	return ids
}

func taskCount(tb testing.TB, m *Main) int {
	tb.Helper()
	var n int
	if err := boltOf(tb, m).DB().View(func(tx *bolt.Tx) error {
		n = tx.Bucket([]byte("tasks")).Stats().KeyN
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return n
}

// bucketLines are the bucket lines a check prints for the file at path,
// read here with bbolt itself.
func bucketLines(tb testing.TB, path string) []string {
	tb.Helper()
	var lines []string
	testkit.ViewStore(tb, path, func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			lines = append(lines, fmt.Sprintf("  %-8s %d keys", name, b.Stats().KeyN))
			return nil
		})
	})
	return lines
}

func lines(s string) []string { return strings.Split(strings.TrimRight(s, "\n"), "\n") }

// TestStoreBackupWhileWritesContinue copies a running server's store with
// `a2ad store backup --server` while senders keep writing tasks through
// its HTTP API: the copy checks clean and holds between the tasks there
// were when the backup began and when it ended.
func TestStoreBackupWhileWritesContinue(t *testing.T) {
	dir := t.TempDir()
	m, _ := runServer(t, filepath.Join(dir, "a2ad.db"), nil)
	base := "http://" + m.Addr()
	first := sendMany(t, base, "seed", 50, 512)

	var (
		stop    atomic.Bool
		written atomic.Int64
		wg      sync.WaitGroup
		errs    = make(chan error, 4)
	)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				if _, err := send(base, fmt.Sprintf("during-%d-%d", w, i), 512); err != nil {
					errs <- err
					return
				}
				written.Add(1)
			}
		})
	}
	eventually(t, 10*time.Second, "writes under way", func() bool { return written.Load() >= 20 })

	out := filepath.Join(dir, "backup.db")
	before := taskCount(t, m)
	code, stdout, stderr := runA2AD(t, nil, "store", "backup", "--server", "http://"+m.AdminAddr(), "--out", out)
	after := taskCount(t, m)
	// The writes go on after the backup: the copy is behind the store.
	mark := written.Load()
	eventually(t, 10*time.Second, "writes after the backup", func() bool { return written.Load() >= mark+10 })
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if code != 0 || stderr != "" {
		t.Fatalf("a2ad store backup = %d, stderr %q", code, stderr)
	}

	size := fileSize(t, out)
	got := lines(stdout)
	want := append([]string{
		fmt.Sprintf("copied %d bytes from the a2ad at %s to %s (synced to disk)", size, "http://"+m.AdminAddr(), out),
		got[1], // checked ..., with the task count, which is compared below
	}, bucketLines(t, out)...)
	want = append(want, "no problems found")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("stdout (-want +got):\n%s", diff)
	}
	n, err := strconv.Atoi(regexp.MustCompile(`^checked .*: schema "6", (\d+) tasks$`).FindStringSubmatch(got[1] + "")[1])
	if err != nil {
		t.Fatal(err)
	}
	if n < before || n > after || n >= taskCount(t, m) {
		t.Fatalf("the backup holds %d tasks; want from %d (at its start) to %d (at its end), fewer than the %d now", n, before, after, taskCount(t, m))
	}
	t.Logf("backup of %d bytes holds %d tasks; %d at its start, %d at its end", size, n, before, after)

	// The copy is a store of its own: check it again, then serve from it.
	if code, _, stderr := runA2AD(t, nil, "store", "check", "--store", out); code != 0 {
		t.Fatalf("a2ad store check of the backup = %d, stderr %q", code, stderr)
	}
	b, _ := runServer(t, out, nil)
	resp := rpc(t, "http://"+b.Addr(), "tasks/get", map[string]any{"id": first[0]})
	if task := resultTask(t, resp); state(task) != "completed" {
		t.Fatalf("a task from before the backup, served from the backup: %v", task)
	}
}

// pagesInUse is the size of the store file at path up to its last page
// in use, read with bbolt itself.
func pagesInUse(tb testing.TB, path string) int64 {
	tb.Helper()
	var n int64
	testkit.ViewStore(tb, path, func(tx *bolt.Tx) error {
		n = tx.Size()
		return nil
	})
	return n
}

func fileSize(tb testing.TB, path string) int64 { return testkit.Stat(tb, path).Size() }

// TestStoreToolsOnAStoreInUse: the offline tools refuse a store a server
// holds, each saying what to do instead, and change nothing.
func TestStoreToolsOnAStoreInUse(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a2ad.db")
	m, _ := runServer(t, path, nil)
	sendMany(t, "http://"+m.Addr(), "m", 3, 10)
	out := filepath.Join(dir, "copy.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"backup", "--store", path, "--out", out},
			"a2ad: the store " + path + " is in use by a running a2ad: use --server to copy it through the server"},
		{[]string{"compact", "--store", path},
			"a2ad: the store " + path + " is in use by a running a2ad: stop it first (compact rewrites the file offline)"},
		{[]string{"check", "--store", path},
			"a2ad: the store " + path + " is in use by a running a2ad: check a copy instead (a2ad store backup --server URL --out FILE copies it and checks the copy)"},
		// A backup must not replace a live store.
		{[]string{"backup", "--server", "http://" + m.AdminAddr(), "--out", path},
			"a2ad: " + path + " is in use by a running a2ad: it is a live store, not a place for a backup"},
	} {
		args := append(append([]string{"store"}, tc.args...), "--lock-timeout", "100ms")
		code, stdout, stderr := runA2AD(t, nil, args...)
		if code != 1 || stdout != "" || strings.TrimSpace(stderr) != tc.want {
			t.Errorf("a2ad %q = %d, stdout %q, stderr %q; want 1 and %q", args, code, stdout, stderr, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 || entries[0].Name() != "a2ad.db" || entries[1].Name() != "a2ad.db.wal" {
		t.Errorf("files in the store's directory: %v; want the store and its write-ahead log alone", entries)
	}
	if n := taskCount(t, m); n != 3 {
		t.Errorf("the store holds %d tasks, want 3", n)
	}
}

// TestStoreBackupOffline copies a store no server holds.
func TestStoreBackupOffline(t *testing.T) {
	dir := t.TempDir()
	path, out := filepath.Join(dir, "a2ad.db"), filepath.Join(dir, "copy.db")
	writeTasks(t, path, "m", 5, 10)
	code, stdout, stderr := runA2AD(t, nil, "store", "backup", "--store", path, "--out", out)
	if code != 0 || stderr != "" {
		t.Fatalf("a2ad store backup --store = %d, stderr %q", code, stderr)
	}
	want := append([]string{
		fmt.Sprintf("copied %d bytes from %s to %s (synced to disk)", fileSize(t, out), path, out),
		fmt.Sprintf(`checked %s: schema "6", 5 tasks`, out),
	}, bucketLines(t, out)...)
	want = append(want, "no problems found")
	if diff := cmp.Diff(want, lines(stdout)); diff != "" {
		t.Fatalf("stdout (-want +got):\n%s", diff)
	}
	code, _, stderr = runA2AD(t, nil, "store", "backup", "--store", path, "--out", path)
	if code != 2 || stderr != "a2ad: store backup: --out is the store file itself\n" {
		t.Fatalf("backup onto the store itself = %d, %q", code, stderr)
	}
}

// TestStoreCompactAndCheck fills a store, lets retention delete all of
// it, adds a few tasks more, and compacts it with `a2ad store compact`:
// the file shrinks, the original is kept, `a2ad store check` finds it
// clean, and the server reads every remaining task back.
func TestStoreCompactAndCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a2ad.db")
	writeTasks(t, path, "gone", 400, 2048)
	// Restarted with a short retention, the server deletes them all.
	m, stop := runServer(t, path, func(c *Config) {
		c.Retention, c.RetentionInterval = time.Millisecond, 20*time.Millisecond
	})
	eventually(t, 20*time.Second, "retention deletes the tasks", func() bool { return taskCount(t, m) == 0 })
	stop()
	kept := writeTasks(t, path, "kept", 40, 2048)

	before, used := fileSize(t, path), pagesInUse(t, path)
	code, stdout, stderr := runA2AD(t, nil, "store", "compact", "--store", path)
	if code != 0 || stderr != "" {
		t.Fatalf("a2ad store compact = %d, stderr %q", code, stderr)
	}
	after := fileSize(t, path)
	want := []string{
		fmt.Sprintf("compacted %s in place: %d -> %d bytes (%d%% smaller)", path, before, after, (before-after)*100/before),
		fmt.Sprintf("pages: %d -> %d bytes (%d%% smaller); the rest of the original was space allocated ahead, which a2ad allocates again (up to 16 MiB) as it writes",
			used, after, (used-after)*100/used),
		"kept the original as " + path + ".bak: delete it once a2ad runs well on the compacted file",
		"left " + path + ".wal as it is: 16 MiB of write-ahead log segments, allocated ahead and reused, holding nothing the file does not",
	}
	if diff := cmp.Diff(want, lines(stdout)); diff != "" {
		t.Fatalf("stdout (-want +got):\n%s", diff)
	}
	// Retention freed most pages: compaction gives them back, beyond the
	// space bbolt allocates ahead.
	if after >= used/2 {
		t.Fatalf("compacted %d bytes of pages to %d; want less than half", used, after)
	}
	if got := fileSize(t, path+".bak"); got != before {
		t.Fatalf("the original kept has %d bytes, want %d", got, before)
	}

	code, stdout, stderr = runA2AD(t, nil, "store", "check", "--store", path)
	want = append([]string{fmt.Sprintf(`checked %s: schema "6", 40 tasks`, path)}, bucketLines(t, path)...)
	want = append(want, "no problems found")
	if diff := cmp.Diff(want, lines(stdout)); code != 0 || stderr != "" || diff != "" {
		t.Fatalf("a2ad store check = %d, stderr %q, stdout (-want +got):\n%s", code, stderr, diff)
	}

	m, _ = runServer(t, path, nil)
	for _, id := range kept {
		if task := resultTask(t, rpc(t, "http://"+m.Addr(), "tasks/get", map[string]any{"id": id})); state(task) != "completed" {
			t.Fatalf("task %s after compaction: %v", id, task)
		}
	}

	// Once more, to another file: refused while the server holds the store.
	code, _, stderr = runA2AD(t, nil, "store", "compact", "--store", path, "--out", filepath.Join(dir, "x.db"), "--lock-timeout", "100ms")
	if code != 1 || !strings.Contains(stderr, "is in use by a running a2ad: stop it first") {
		t.Fatalf("compact of a store in use = %d, %q", code, stderr)
	}
}

func TestStoreCompactToAnotherFile(t *testing.T) {
	dir := t.TempDir()
	path, out := filepath.Join(dir, "a2ad.db"), filepath.Join(dir, "small.db")
	writeTasks(t, path, "m", 5, 10)
	before, used := fileSize(t, path), pagesInUse(t, path)
	code, stdout, stderr := runA2AD(t, nil, "store", "compact", "--store", path, "--out", out)
	if code != 0 || stderr != "" {
		t.Fatalf("a2ad store compact --out = %d, stderr %q", code, stderr)
	}
	after := fileSize(t, out)
	want := fmt.Sprintf("wrote a compacted copy of %s to %s: %d -> %d bytes (%s); %s is unchanged\n", path, out, before, after, storecmd.Change(before, after), path) +
		fmt.Sprintf("pages: %d -> %d bytes (%s); the rest of the original was space allocated ahead, which a2ad allocates again (up to 16 MiB) as it writes\n", used, after, storecmd.Change(used, after))
	if stdout != want {
		t.Fatalf("stdout %q, want %q", stdout, want)
	}
	code, _, stderr = runA2AD(t, nil, "store", "compact", "--store", path, "--out", out)
	if code != 1 || stderr != "a2ad: compact task store "+path+": "+out+" exists: give a new file; nothing was changed\n" {
		t.Fatalf("compact onto an existing file = %d, %q", code, stderr)
	}
}

// TestStoreCheckFindsCorruption damages a store the server wrote in the
// three ways issue 9 names; `a2ad store check` reports exactly those, one
// per line with bucket and key, and exits 1.
func TestStoreCheckFindsCorruption(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a2ad.db")
	m, stop := runServer(t, path, nil)
	base := "http://" + m.Addr()
	ids := sendMany(t, base, "m", 4, 10)
	sleeping := resultTask(t, rpc(t, base, "message/send", sendParams("sleep", "demo::sleep", map[string]any{"seconds": 30}, false)))
	sleepID := sleeping["id"].(string)
	stop() // the sleeping task stays working, for the next start to recover

	testkit.UpdateStore(t, path, func(tx *bolt.Tx) error {
		// An owners entry without a task: the anonymous caller ("").
		ghost := append(be.AppendUvarint(nil, 0), "t-ghost"...)
		if err := tx.Bucket([]byte("owners")).Put(ghost, nil); err != nil {
			return err
		}
		if err := tx.Bucket([]byte("active")).Delete([]byte(sleepID)); err != nil {
			return err
		}
		// A head cut short: seq, the layout byte, the anonymous owner, no
		// history, no artifacts, and the start of its JSON.
		return tx.Bucket([]byte("tasks")).Put([]byte(ids[0]), append(be.BigEndian.AppendUint64(nil, 1), "\x01\x00\x00\x00{\"task\":{\"id\":"...))
	})

	code, stdout, stderr := runA2AD(t, nil, "store", "check", "--store", path)
	if code != 1 {
		t.Fatalf("a2ad store check of a damaged store = %d, want 1", code)
	}
	wantErr := []string{
		`tasks "` + ids[0] + `": does not decode: unexpected end of JSON input (byte 14)`,
		`owners "" "t-ghost": no such task`,
		`active "` + sleepID + `": missing: task is working`,
		"a2ad: 3 problem(s) in " + path,
	}
	if diff := cmp.Diff(wantErr, lines(stderr)); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
	wantOut := append([]string{fmt.Sprintf(`checked %s: schema "6", 5 tasks`, path)}, bucketLines(t, path)...)
	if diff := cmp.Diff(wantOut, lines(stdout)); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
}

func TestStoreUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string // the last line of stderr, or of stdout for code 0
	}{
		{[]string{"store"}, 2, "pages that cannot be read): restore the last backup."},
		{[]string{"store", "help"}, 0, "pages that cannot be read): restore the last backup."},
		{[]string{"store", "bogus"}, 2, "pages that cannot be read): restore the last backup."},
		{[]string{"store", "backup"}, 2, "a2ad: store backup: give the file to write with --out"}, // --server defaults to the admin listener
		{[]string{"store", "backup", "--server", "http://127.0.0.1:1", "--store", "x", "--out", "y"}, 2, "a2ad: store backup: give either --server URL (a running a2ad) or --store FILE (a store no server holds)"},
		{[]string{"store", "backup", "--store", "x"}, 2, "a2ad: store backup: give the file to write with --out"},
		{[]string{"store", "backup", "--server", "127.0.0.1:8081", "--out", "y"}, 2, `a2ad: store backup: --server: want the admin listener's base URL, e.g. http://127.0.0.1:8081, not "127.0.0.1:8081"`},
		{[]string{"store", "compact"}, 2, "a2ad: store compact: give the store file with --store"},
		{[]string{"store", "check"}, 2, "a2ad: store check: give the store file with --store"},
		{[]string{"store", "check", "a2ad.db"}, 2, `a2ad: unexpected argument "a2ad.db" (the tools take flags only)`},
		{[]string{"store", "check", "--bogus"}, 2, `Run "a2ad store check --help" for the flags.`},
		{[]string{"store", "check", "-h"}, 0, ""},
		{[]string{"store", "check", "--store", filepath.Join(dir, "none.db")}, 1,
			"a2ad: store check: open task store: stat " + filepath.Join(dir, "none.db") + ": no such file or directory"},
	} {
		code, stdout, stderr := runA2AD(t, nil, tc.args...)
		out := stderr
		if tc.code == 0 {
			out = stdout
		}
		if got := lines(out); code != tc.code || got[len(got)-1] != tc.want {
			t.Errorf("a2ad %q = %d, stdout %q, stderr %q; want %d and %q", tc.args, code, stdout, stderr, tc.code, tc.want)
		}
	}
	if code, stdout, _ := runA2AD(t, nil, "help"); code != 0 || !strings.Contains(stdout, "a2ad store backup|compact|check|repair|migrate [flags]") {
		t.Errorf("a2ad help does not name the store tools: %q", stdout)
	}
}

// backupServer is the admin listener's handler serving src's copies.
func backupServer(src admin.BackupSource) http.Handler {
	return admin.New(admin.Config{Backup: src, Logger: zerolog.Nop()}).Handler()
}

// TestStoreBackupFailures: a download that fails, ends short, or is no
// store leaves --out as it was and no temporary file behind.
func TestStoreBackupFailures(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "backup.db")
	putFile(t, out, "the previous backup")
	for _, tc := range []struct {
		name    string
		handler http.Handler
		want    string // after "a2ad: "
	}{
		{
			name:    "the copy fails before it starts",
			handler: backupServer(testkit.Backup{Size: -1, Err: errors.New("disk on fire")}),
			want:    "store backup from the a2ad at URL: the server answered 500 Internal Server Error: store backup failed; " + out + " was not written",
		},
		{
			name:    "the copy fails half way",
			handler: backupServer(testkit.Backup{Size: 8192, Body: make([]byte, 4096), Err: errors.New("disk on fire")}),
			want:    "store backup from the a2ad at URL: the download ended after 4096 bytes: unexpected EOF; " + out + " was not written",
		},
		{
			name: "not a loopback caller",
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				fmt.Fprint(w, `{"message":"admin endpoints answer loopback callers only"}`)
			}),
			want: "store backup from the a2ad at URL: the server answered 403 Forbidden: admin endpoints answer loopback callers only; " + out + " was not written",
		},
		{
			name:    "the copy is no store",
			handler: backupServer(testkit.Backup{Size: 8192, Body: bytes.Repeat([]byte("junk"), 2048)}),
			want:    "the copy from the a2ad at URL does not open as a store: it has no valid meta page (it is not a store file, or its first pages are damaged); " + out + " was not written",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			code, stdout, stderr := runA2AD(t, nil, "store", "backup", "--server", srv.URL, "--out", out)
			stderr = strings.ReplaceAll(stderr, srv.URL, "URL")
			if code != 1 || stdout != "" || stderr != "a2ad: "+tc.want+"\n" {
				t.Fatalf("a2ad store backup = %d, stdout %q, stderr %q; want 1 and %q", code, stdout, stderr, tc.want)
			}
			if b, _ := os.ReadFile(out); string(b) != "the previous backup" {
				t.Fatalf("--out now holds %q", b)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Fatalf("files left: %v", entries)
			}
		})
	}
}

// TestStoreBackupEndpoint: the route answers loopback callers only, and
// streams a file of the length it announces.
func TestStoreBackupEndpoint(t *testing.T) {
	const backupPath = "/admin/store/backup"
	m, _ := runServer(t, filepath.Join(t.TempDir(), "a2ad.db"), nil)
	req := httptest.NewRequest(http.MethodGet, backupPath, nil)
	req.RemoteAddr = "192.0.2.7:4242"
	rec := httptest.NewRecorder()
	m.admin.Handler.ServeHTTP(rec, req)
	if body := strings.TrimSpace(rec.Body.String()); rec.Code != http.StatusForbidden || body != `{"message":"admin endpoints answer loopback callers only"}` {
		t.Fatalf("backup for a remote caller: HTTP %d %s", rec.Code, body)
	}

	resp, body := httpGet(t, "http://"+m.AdminAddr()+backupPath)
	if resp.StatusCode != http.StatusOK || int64(len(body)) != resp.ContentLength || len(body) == 0 {
		t.Fatalf("GET %s = %s, %d of %d bytes", backupPath, resp.Status, len(body), resp.ContentLength)
	}
	for k, v := range map[string]string{
		"Content-Type":        "application/octet-stream",
		"Content-Disposition": `attachment; filename="a2ad-backup.db"`,
		"Cache-Control":       "no-store",
	} {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	putFile(t, copyPath, string(body))
	if r, err := boltstore.Check(copyPath, 0); err != nil || !r.Clean() {
		t.Fatalf("the streamed copy: %v, %+v", err, r)
	}
}

// TestStoreCheckCleanAfterSpacedOutput: a function whose JSON output
// holds insignificant space (demo::echo of the README's first call,
// {"message": "hello"}) leaves a store that `a2ad store check` finds
// clean. The store writes data parts compacted; the artifact's size in
// the task's index was the output's size as received, one byte more.
func TestStoreCheckCleanAfterSpacedOutput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.db")
	m, stop := runServer(t, path, nil)
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m-1","role":"user",` +
		`"parts":[{"kind":"data","data":{"skill":"demo::echo","input":{"message": "hello"}}}]}}}`
	resp, err := http.Post(m.BaseURL()+"/a2a", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	answer := jsonAnswer(t, resp, nil)
	if got := state(resultTask(t, answer)); got != "completed" {
		t.Fatalf("echo ended %q, want completed", got)
	}
	stop()
	code, stdout, stderr := runA2AD(t, nil, "store", "check", "--store", path)
	if code != 0 || !strings.HasSuffix(stdout, "no problems found\n") {
		t.Fatalf("a2ad store check = %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
