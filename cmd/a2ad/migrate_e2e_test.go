package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
	"github.com/a2ad/a2ad/tasks/pgstore"
)

// runStore runs "a2ad store args..." in this process and returns the
// exit code, stdout and stderr.
func runStore(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"store"}, args...), nil, &out, &errOut, os.LookupEnv)
	return code, out.String(), errOut.String()
}

// TestStoreMigrate: oldStoreDir's store, migrated to PostgreSQL, has
// every row of every kind (the command's own count check, and store
// check of the database is clean); served from the database, every task
// reads as the old a2ad answered, lists match, and every recorded message
// sent again is the same message with nothing run. Migrating into the
// database again is refused, and with --force fails on the ids it holds.
func TestStoreMigrate(t *testing.T) {
	dsn := pgtest.Schema(t)
	old := readOldStore(t)
	store := filepath.Join(t.TempDir(), "a2ad.db")
	testkit.CopyFile(t, filepath.Join(oldStoreDir, "a2ad.db"), store)
	checkOldStore(t, store) // opens it: migrates it to this a2ad's schema

	code, out, errOut := runStore(t, "migrate", "--from", store, "--to", dsn)
	if code != 0 {
		t.Fatalf("store migrate: exit %d\n%s%s", code, out, errOut)
	}
	want := fmt.Sprintf(`(?m)^  tasks +%d +%d$`, len(old.Tasks), len(old.Tasks))
	if !regexp.MustCompile(want).MatchString(out) || strings.Contains(out, "differs") {
		t.Errorf("store migrate printed:\n%s\nwant every kind the same, and %d tasks", out, len(old.Tasks))
	}
	for _, kind := range []string{"events", "messages", "artifacts", "idem", "outbox", "dead_letters"} {
		if !regexp.MustCompile(`(?m)^  ` + kind + ` +(\d+) +(\d+)$`).MatchString(out) {
			t.Errorf("store migrate printed no count of %s:\n%s", kind, out)
		}
	}
	if m := regexp.MustCompile(`(?m)^  (events|idem) +0 `).FindString(out); m != "" {
		t.Errorf("store migrate copied no %s:\n%s", m, out)
	}
	if !strings.Contains(errOut, fmt.Sprintf("a2ad: store migrate: %d tasks copied\n", len(old.Tasks))) {
		t.Errorf("no progress line on stderr: %q", errOut)
	}
	if code, out, errOut := runStore(t, "check", "--store", dsn); code != 0 {
		t.Fatalf("store check of the database: exit %d\n%s%s", code, out, errOut)
	}

	code, _, errOut = runStore(t, "migrate", "--from", store, "--to", dsn)
	wantErr := fmt.Sprintf("a2ad: store migrate: postgres://%s holds %d tasks already: migrate into an empty database, or give --force to add to them\n",
		strings.TrimPrefix(storeName(dsn), "postgres://"), len(old.Tasks))
	if code != 1 || errOut != wantErr {
		t.Errorf("migrating into a database with tasks: exit %d, %q; want 1, %q", code, errOut, wantErr)
	}
	code, _, errOut = runStore(t, "migrate", "--from", store, "--to", dsn, "--force")
	if code != 1 || !strings.Contains(errOut, "exists already in the target store") {
		t.Errorf("--force onto the same tasks: exit %d, %q; want 1 and exists already", code, errOut)
	}

	serveOldStore(t, &old, dsn)
}

// TestStoreMigrateRefuses: a source that does not exist, one a server
// holds, and bad usage are refused before anything is copied; an empty
// store migrates to nothing.
func TestStoreMigrateRefuses(t *testing.T) {
	dsn := pgtest.Schema(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.db")
	code, _, errOut := runStore(t, "migrate", "--from", missing, "--to", dsn)
	if code != 1 || errOut != "a2ad: store migrate: open task store: stat "+missing+": no such file or directory\n" {
		t.Errorf("a missing source: exit %d, %q", code, errOut)
	}

	held := filepath.Join(dir, "held.db")
	s, err := boltstore.Open(held, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runStore(t, "migrate", "--from", held, "--to", dsn, "--lock-timeout", "100ms")
	s.Close()
	if code != 1 || errOut != "a2ad: the store "+held+" is in use by a running a2ad: stop it first, then migrate\n" {
		t.Errorf("a source a server holds: exit %d, %q", code, errOut)
	}

	for _, args := range [][]string{
		{"--to", dsn},
		{"--from", held},
		{"--from", dsn, "--to", dsn},
		{"--from", held, "--to", held},
	} {
		if code, _, _ := runStore(t, append([]string{"migrate"}, args...)...); code != 2 {
			t.Errorf("store migrate %q: exit %d, want 2", args, code)
		}
	}
	if code, out, _ := runStore(t, "migrate", "--from", held, "--to", dsn); code != 0 || !strings.Contains(out, "  tasks                 0          0\n") {
		t.Errorf("an empty store: exit %d\n%s", code, out)
	}
}

// TestStoreMigrateOutbox: a delivery waiting, with its attempts and next
// time, and a dead letter move with their tasks.
func TestStoreMigrateOutbox(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	path := filepath.Join(t.TempDir(), "a2ad.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, id := range []string{"t-retry", "t-dead"} {
		rec := &tasks.Record{
			Task:  a2a.Task{ID: id, ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateCompleted}},
			Owner: "alice", PushConfigs: []a2a.PushConfig{{ID: "hook", URL: "http://127.0.0.1:1/hook"}},
			CreatedAt: now, UpdatedAt: now,
		}
		key := tasks.IdemKey{Owner: "alice", MessageID: "m-" + id}
		if _, _, err := s.Create(ctx, key, rec, []tasks.Event{{Status: &rec.Task.Status}}); err != nil {
			t.Fatal(err)
		}
	}
	due, err := s.Due(ctx, now.Add(time.Second), 10)
	if err != nil || len(due) != 2 {
		t.Fatalf("due: %v, %v", due, err)
	}
	next := now.Add(time.Hour)
	for _, d := range due {
		if d.TaskID == "t-retry" {
			err = s.Retry(ctx, d.ID, 3, next, "HTTP 503")
		} else {
			err = s.Dead(ctx, d.ID, "http://127.0.0.1:1/hook", 9, "HTTP 410")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	if code, out, errOut := runStore(t, "migrate", "--from", path, "--to", dsn); code != 0 ||
		!strings.Contains(out, "  outbox                1          1\n") || !strings.Contains(out, "  dead_letters          1          1\n") {
		t.Fatalf("store migrate: exit %d\n%s%s", code, out, errOut)
	}
	p, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got, err := p.Due(ctx, now, 10); err != nil || len(got) != 0 {
		t.Errorf("due before its next time: %v, %v", got, err)
	}
	got, err := p.Due(ctx, next, 10)
	if err != nil || len(got) != 1 || got[0].TaskID != "t-retry" || got[0].ConfigID != "hook" || got[0].Attempts != 3 ||
		!got[0].NextAt.Equal(next) || got[0].LastError != "HTTP 503" {
		t.Errorf("due at its next time: %+v, %v", got, err)
	}
	dead, err := p.DeadLetters(ctx, 0, 10)
	if err != nil || len(dead) != 1 || dead[0].TaskID != "t-dead" || dead[0].Attempts != 9 || dead[0].LastError != "HTTP 410" ||
		dead[0].URL != "http://127.0.0.1:1/hook" {
		t.Errorf("dead letters: %+v, %v", dead, err)
	}
}
