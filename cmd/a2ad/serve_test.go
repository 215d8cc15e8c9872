package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/cmd/a2ad/internal/config"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// TestUnwind: the closers run last pushed first; Close returns the first
// error and logs the others; a failed Open returns its own error and logs
// every closer's; a second Close has nothing left to do.
func TestUnwind(t *testing.T) {
	for _, tc := range []struct {
		name    string
		openErr error
		want    string
		logged  []string
	}{
		{"close", nil, "c failed", []string{"b failed"}},
		{"failed open", errors.New("listen: address in use"), "listen: address in use", []string{"c failed", "b failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log testkit.SyncBuffer
			m := &Main{Config: config.Default(), Logger: zerolog.New(&log)}
			var ran []string
			for _, name := range []string{"a", "b", "c", "d"} {
				m.onClose(name, func(ctx context.Context) error {
					if _, ok := ctx.Deadline(); !ok {
						t.Errorf("closer %s: no deadline", name)
					}
					ran = append(ran, name)
					if name == "b" || name == "c" {
						return errors.New(name + " failed")
					}
					return nil
				})
			}
			var err error
			if tc.openErr != nil {
				err = m.unwind(tc.openErr)
			} else {
				err = m.Close()
			}
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %s", err, tc.want)
			}
			if diff := cmp.Diff([]string{"d", "c", "b", "a"}, ran); diff != "" {
				t.Errorf("closers ran (-want +got):\n%s", diff)
			}
			lines := strings.Split(strings.TrimSpace(log.String()), "\n")
			if len(lines) != len(tc.logged) {
				t.Fatalf("logged %q, want %d lines", lines, len(tc.logged))
			}
			for i, msg := range tc.logged {
				if !strings.Contains(lines[i], `"error":"`+msg+`"`) || !strings.Contains(lines[i], `"step":"`+msg[:1]+`"`) {
					t.Errorf("log line %d: %s, want %s of step %s", i, lines[i], msg, msg[:1])
				}
			}
			ran = nil
			if err := m.Close(); err != nil || ran != nil {
				t.Errorf("second Close: %v, ran %v", err, ran)
			}
		})
	}
}

// TestShutdownOrder pins the order Close stops things in, which is the
// reverse of Open's steps: the main listener's server first (running
// calls finish within the grace period), the task service, the push
// sender (it may still deliver the service's last writes), the admin
// listener (it shows the drain until then), the store (after the backups
// the admin listener streams), the rate limits, the audit log, and the
// listener's socket last.
func TestShutdownOrder(t *testing.T) {
	m := startMain(t, func(c *Config) { c.AuditLog = filepath.Join(t.TempDir(), "audit.log") })
	m.closeMu.Lock()
	var got []string
	for i := len(m.closers) - 1; i >= 0; i-- {
		got = append(got, m.closers[i].name)
	}
	m.closeMu.Unlock()
	want := []string{"http", "task service", "push sender", "admin listener", "store", "rate limits", "audit log", "listener"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shutdown order (-want +got):\n%s", diff)
	}
}

// TestFailedOpenUnwinds: an Open that fails at a late step (the admin
// listener's address is taken) returns that step's error and undoes every
// step before it: the main listener's port, the store file and the audit
// log file are let go, and the goroutines started end.
func TestFailedOpenUnwinds(t *testing.T) {
	taken := listenLoopback(t)
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Catalog = exampleCatalog
	cfg.Listen = "127.0.0.1:0"
	cfg.AdminListen = taken.Addr().String()
	cfg.Store = filepath.Join(dir, "a2ad.db")
	cfg.AuditLog = filepath.Join(dir, "audit.log")
	before := runtime.NumGoroutine()
	m := &Main{Config: cfg, Logger: zerolog.Nop()}
	err := m.Open(context.Background())
	want := "admin-listen " + cfg.AdminListen + ": the address is in use, by another a2ad or another program: stop it, or give --admin-listen another address"
	if err == nil || err.Error() != want {
		t.Fatalf("Open = %v, want the admin listener's error %q", err, want)
	}
	ln, err := net.Listen("tcp", m.ln.Addr().String())
	if err != nil {
		t.Errorf("the main listener's port is still held: %v", err)
	} else {
		ln.Close()
	}
	for _, f := range []string{cfg.Store, cfg.AuditLog} {
		if n := testkit.FDsOn(t, os.Getpid(), testkit.Stat(t, f)); n != 0 {
			t.Errorf("%d descriptors still open on %s", n, filepath.Base(f))
		}
	}
	s, err := boltstore.Open(cfg.Store, boltstore.Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("the store does not open again: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "the goroutines Open started to end", func() bool { return runtime.NumGoroutine() <= before })
	if err := m.Close(); err != nil {
		t.Errorf("Close after a failed Open: %v", err)
	}
}

// TestConsoleLogs: --log-format console writes no colour codes into a
// file or a pipe, and audit records carry a level (INF), not "???".
func TestConsoleLogs(t *testing.T) {
	dir := t.TempDir()
	file, err := os.Create(filepath.Join(dir, "a2ad.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	_, w := pipe(t)
	var buf testkit.SyncBuffer
	for _, out := range []io.Writer{file, w, &buf} {
		if isTerminal(out) {
			t.Errorf("isTerminal(%T) = true, want false", out)
		}
	}

	cfg := testConfig(filepath.Join(dir, "a2ad.db"))
	cfg.LogFormat = "console"
	log, err := newLogger(cfg, file)
	if err != nil {
		t.Fatal(err)
	}
	m := openMain(t, &Main{Config: cfg, Logger: log})
	resp := rpc(t, "http://"+m.Addr(), "message/send", sendParams("m1", "demo::echo", map[string]any{"message": "hi"}, true))
	if s := state(resultTask(t, resp)); s != "completed" {
		t.Fatalf("call ended %s", s)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(file.Name())
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	if strings.Contains(text, "\x1b[") {
		t.Errorf("colour codes in a log file:\n%q", text)
	}
	if strings.Contains(text, "???") {
		t.Errorf("a record without a level:\n%s", text)
	}
	audits := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, " audit=true ") {
			audits++
			if !strings.Contains(line, " INF call ") {
				t.Errorf("audit record not at info level: %s", line)
			}
		}
	}
	if audits != 1 {
		t.Errorf("%d audit records, want 1:\n%s", audits, text)
	}
}
