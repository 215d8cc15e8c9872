package main

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgtest"
)

// dbPassword is the password the tests' database URLs carry: the test
// server trusts every local connection and ignores it, and it must show
// nowhere.
const dbPassword = "pg-Secret-4242"

// withPassword is dsn with dbPassword as its password.
func withPassword(tb testing.TB, dsn string) string {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), dbPassword)
	return u.String()
}

// TestPostgresStoreEndToEnd runs the real binary on PostgreSQL: send,
// get, list and cancel, a second replica on the database that leaves the
// first's running call alone, then a restart that keeps the tasks. The
// database URL's password shows in no log, answer, metric or view.
func TestPostgresStoreEndToEnd(t *testing.T) {
	dsn := withPassword(t, pgtest.Schema(t))
	p := startBinary(t, exampleCatalog, dsn)

	echo := resultTask(t, rpc(t, p.base, "message/send", sendParams("pg-m1", "demo::echo", map[string]any{"message": "hi"}, true)))
	if state(echo) != "completed" {
		t.Fatalf("echo: %v", echo)
	}
	echoID := echo["id"].(string)
	if got := resultTask(t, rpc(t, p.base, "tasks/get", map[string]any{"id": echoID})); state(got) != "completed" || len(got["artifacts"].([]any)) != 1 {
		t.Fatalf("tasks/get: %v", got)
	}
	sleep := resultTask(t, rpc(t, p.base, "message/send", sendParams("pg-m2", "demo::sleep", map[string]any{"seconds": 30}, false)))
	sleepID := sleep["id"].(string)
	// A second a2ad serves the database too: it reads the first's tasks
	// and, at its start and after, leaves the call the first runs alone.
	r := startBinary(t, exampleCatalog, dsn, "--lease-ttl", "300ms")
	time.Sleep(time.Second)
	if got := resultTask(t, rpc(t, r.base, "tasks/get", map[string]any{"id": sleepID})); state(got) != "working" {
		t.Fatalf("a second replica's view of the first's running call: %v", got)
	}
	// A migration into the database the replicas serve is refused: they
	// would settle its tasks half copied.
	empty := filepath.Join(t.TempDir(), "empty.db")
	putFile(t, empty, "")
	if code, _, stderr := runBinary(t, "store", "migrate", "--from", empty, "--to", dsn); code != 1 || !strings.Contains(stderr, "the database is in use by another a2ad (a server or a store migrate): stop it first") || strings.Contains(stderr, dbPassword) {
		t.Fatalf("store migrate into a served database: exit %d, stderr:\n%s", code, stderr)
	}
	if canceled := resultTask(t, rpc(t, p.base, "tasks/cancel", map[string]any{"id": sleepID})); state(canceled) != "canceled" {
		t.Fatalf("tasks/cancel: %v", canceled)
	}
	listed := func(base string) []string {
		res := resultTask(t, rpc(t, base, "tasks/list", map[string]any{"page_size": 10}))
		var ids []string
		for _, task := range res["tasks"].([]any) {
			ids = append(ids, task.(map[string]any)["id"].(string))
		}
		if int(res["total_size"].(float64)) != len(ids) {
			t.Fatalf("tasks/list: total_size %v, %d tasks", res["total_size"], len(ids))
		}
		return ids
	}
	if ids := listed(p.base); len(ids) != 2 || ids[0] != sleepID || ids[1] != echoID {
		t.Fatalf("tasks/list = %v, want [%s %s]", ids, sleepID, echoID)
	}
	views := adminViews(t, p)

	// A restart (a graceful stop, then a new process) keeps every task.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("a2ad stopped with %v", err)
	}
	q := startBinary(t, exampleCatalog, dsn)
	if got := resultTask(t, rpc(t, q.base, "tasks/get", map[string]any{"id": echoID})); state(got) != "completed" {
		t.Fatalf("after the restart, the echo task: %v", got)
	}
	if got := resultTask(t, rpc(t, q.base, "tasks/get", map[string]any{"id": sleepID})); state(got) != "canceled" {
		t.Fatalf("after the restart, the canceled task: %v", got)
	}
	if ids := listed(q.base); len(ids) != 2 {
		t.Fatalf("after the restart, tasks/list = %v", ids)
	}
	// The same message again is the same task: its key was kept too.
	if again := resultTask(t, rpc(t, q.base, "message/send", sendParams("pg-m1", "demo::echo", map[string]any{"message": "hi"}, true))); again["id"] != echoID {
		t.Fatalf("a repeated message after the restart made task %v, want %s", again["id"], echoID)
	}

	_, version, _ := runBinary(t, "version")
	for what, text := range map[string]string{
		"the first process's logs": p.logText(), "the second process's logs": q.logText(), "the replica's logs": r.logText(),
		"the admin views": views + adminViews(t, q), "a2ad version": version,
	} {
		if strings.Contains(text, dbPassword) {
			t.Errorf("%s show the database password", what)
		}
	}
	if !strings.Contains(p.logText(), `"store":"postgres://postgres@127.0.0.1:5432/test"`) && pgtest.DSN() == pgtest.DefaultDSN {
		t.Errorf("the start log does not name the database as postgres://postgres@127.0.0.1:5432/test:\n%s", p.logText())
	}
}

// adminViews is what p's admin listener shows: the operator's overview
// and task list, the metrics, and the backup endpoint's answer.
func adminViews(tb testing.TB, p *process) string {
	tb.Helper()
	var all strings.Builder
	for _, path := range []string{"/admin/v1/overview", "/admin/v1/tasks", "/metrics", "/admin/store/backup"} {
		resp, err := http.Get(p.admin + path)
		if err != nil {
			tb.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if path == "/admin/store/backup" && (resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(b), "pg_dump")) {
			tb.Errorf("backup of a database: %d %s", resp.StatusCode, b)
		}
		all.Write(b)
	}
	if !strings.Contains(all.String(), "postgres://postgres@") {
		tb.Errorf("the overview does not name the database:\n%s", all.String())
	}
	return all.String()
}

// TestPostgresUnreachableAtStart: a database that does not answer stops
// a2ad at start, with an error naming its host and not its password.
func TestPostgresUnreachableAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there
	dsn := "postgres://alice:" + dbPassword + "@" + addr + "/a2ad?sslmode=disable"
	code, _, stderr := runBinary(t, "serve", "--catalog", exampleCatalog, "--store", dsn, "--listen", "127.0.0.1:0", "--admin-listen", "")
	if code != 1 || !strings.Contains(stderr, addr) || strings.Contains(stderr, dbPassword) {
		t.Fatalf("serve on a closed port: exit %d, stderr:\n%s\nwant a failure naming %s, without the password", code, stderr, addr)
	}
}

// logText is what p logged so far.
func (p *process) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}
