package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgtest"
)

func TestParseFlagsPostgres(t *testing.T) {
	o, err := parseFlags([]string{"-servers", "a2ad-pg,a2ad-pg2,sdk", "-pgbench", "-clients", "16", "-duration", "2s", "-warmup", "1s"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	// Three servers of 3s each, and pgbench's 10s.
	if strings.Join(o.servers, ",") != "a2ad-pg,a2ad-pg2,sdk" || !o.pgbench || o.planned() != 19*time.Second {
		t.Fatalf("options = %+v, planned %v", o, o.planned())
	}
	if d, _ := parseFlags(nil, &bytes.Buffer{}); d.pgbench || strings.Join(d.servers, ",") != "a2ad,js,sdk,floor" {
		t.Fatalf("defaults = %+v: they must need no PostgreSQL", d)
	}
}

func TestParsePgbench(t *testing.T) {
	out := "pgbench (15.20 (Debian 15.20-0+deb12u1))\nnumber of failed transactions: 0 (0.000%)\n" +
		"latency average = 3.277 ms\ninitial connection time = 21.404 ms\ntps = 4882.6 (without initial connection time)\n"
	r, err := parsePgbench(out)
	if err != nil || !r.available || r.tps != 4882.6 || r.latency != "3.277 ms" {
		t.Fatalf("parsePgbench = %+v, %v", r, err)
	}
	if _, err := parsePgbench("pgbench: error: connection refused\n"); err == nil || !strings.Contains(err.Error(), "pgbench printed no tps line") {
		t.Fatalf("parsePgbench of no report = %v", err)
	}
}

func TestRunPgbenchWithoutPgbench(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	r, err := runPgbench(context.Background(), "postgres://nowhere.invalid/x")
	if err != nil || r.available || !strings.Contains(r.skipped, "pgbench not found on PATH") {
		t.Fatalf("runPgbench without pgbench = %+v, %v", r, err)
	}
	var b bytes.Buffer
	printPostgres(&b, options{mode: "send", pgbench: true, servers: []string{"a2ad"}}, nil, r)
	if !strings.Contains(b.String(), "pgbench: did not run: pgbench not found on PATH") {
		t.Fatalf("output = %q", b.String())
	}
}

// TestNewSchema: a2abench's schema exists until dropped, and the URL with
// its search_path reaches it.
func TestNewSchema(t *testing.T) {
	pgtest.Require(t)
	ctx := context.Background()
	name, drop, err := newSchema(ctx, pgtest.DSN(), "a2abench_test")
	if err != nil {
		t.Fatal(err)
	}
	dsn, err := withSearchPath(pgtest.DSN(), name)
	if err != nil {
		t.Fatal(err)
	}
	if err := pgExec(ctx, dsn, "CREATE TABLE t (x int)"); err != nil {
		t.Fatal(err)
	}
	if err := drop(); err != nil {
		t.Fatal(err)
	}
	if err := pgExec(ctx, dsn, "SELECT * FROM "+name+".t"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("after drop: %v, want the schema gone", err)
	}
}

func TestPrintPostgres(t *testing.T) {
	o := options{mode: "send", pgbench: true, servers: []string{"a2ad", "a2ad-pg", "a2ad-pg2", "sdk"}, clients: []int{16, 64}}
	results := []result{
		{"a2ad", 16, stats{ok: 4000, elapsed: time.Second}},
		{"a2ad-pg", 16, stats{ok: 3000, elapsed: time.Second, p99: 15 * time.Millisecond}},
		{"a2ad-pg", 64, stats{ok: 1000, elapsed: time.Second, p99: 90 * time.Millisecond}},
		{"a2ad-pg2", 16, stats{ok: 3300, elapsed: time.Second}},
		{"a2ad-pg2", 64, stats{ok: 900, elapsed: time.Second}},
		{"sdk", 16, stats{ok: 500, elapsed: time.Second}},
		{"sdk", 64, stats{ok: 500, elapsed: time.Second}},
	}
	var b bytes.Buffer
	printPostgres(&b, o, results, pgbenchResult{tps: 5000, latency: "3.2 ms", available: true})
	out := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{
		"pgbench -N -c 16 -T 10: 5000 tps, latency average 3.2 ms",
		" 16 6.00x met 15.00ms met 0.60x met 1.10x met 0.75x ",
		" 64 2.00x missed 90.00ms - 0.20x missed 0.90x missed -",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}

	// Without a2ad-pg2, sdk or pgbench: no ratio, no verdict.
	o = options{mode: "send", servers: []string{"a2ad-pg"}, clients: []int{16}}
	b.Reset()
	printPostgres(&b, o, results[1:2], pgbenchResult{})
	out = strings.Join(strings.Fields(b.String()), " ")
	if want := " 16 - - 15.00ms met - - - - -"; !strings.HasSuffix(out, want) || strings.Contains(out, "pgbench -N") {
		t.Errorf("output = %q, want it to end %q", out, want)
	}
}
