package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

func TestParseFlagsPerf(t *testing.T) {
	o, err := parseFlags([]string{"-servers", "floor", "-perf", "out/prof"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.perfDir != "out/prof" {
		t.Fatalf("-perf out/prof: perfDir = %q", o.perfDir)
	}
	if o, err = parseFlags(nil, &bytes.Buffer{}); err != nil || o.perfDir != "" {
		t.Fatalf("no -perf: perfDir = %q, %v; want none", o.perfDir, err)
	}
}

// TestParseReport reads testdata/perf-report.txt, perf report --stdio
// --no-children --sort sym -g none -n of a2ad-pg-working (perf 6.1, cut to
// 16 symbols).
func TestParseReport(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "perf-report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := parseReport(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.syms) != 16 || rep.samples != 338 {
		t.Fatalf("parsed %d symbols, %d samples; want 16, 338", len(rep.syms), rep.samples)
	}
	first, obj := rep.syms[0], rep.syms[13]
	if first != (symShare{share: 28.65, samples: 212, kernel: true, sym: "finish_task_switch.isra.0"}) ||
		obj != (symShare{share: 0.54, samples: 4, sym: "github.com/a2ad/a2ad/internal/jsonw.(*scanner).object"}) {
		t.Fatalf("symbols 1 and 14 = %+v, %+v", first, obj)
	}
	var b strings.Builder
	rep.format(&b, "a2ad (pid 7)", 3)
	want := "a2ad (pid 7): 338 samples at 999 Hz (0.34s of CPU), 37.7% in the kernel\n" +
		"   28.65%  finish_task_switch.isra.0 [kernel]\n" +
		"    3.38%  _raw_spin_unlock_irqrestore [kernel]\n" +
		"    2.84%  irqentry_exit_to_user_mode [kernel]\n" +
		"   10.85%  (13 other symbols)\n"
	if b.String() != want {
		t.Fatalf("format:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestParseReportFoldsAddresses(t *testing.T) {
	in := "# Overhead  Samples  Symbol\n" +
		"    40.00%   40  [.] hash_search_with_hash_value\n" +
		"    30.00%   30  [.] 0x0000000000446bf2\n" +
		"    20.00%   20  [k] fdget\n" +
		"    10.00%   10  [.] 0x000000000046b7c3\n"
	rep, err := parseReport(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.format(&b, "postgres", 15)
	want := "postgres: 100 samples at 999 Hz (0.10s of CPU), 20.0% in the kernel\n" +
		"   40.00%  " + unresolved + "\n" +
		"   40.00%  hash_search_with_hash_value\n" +
		"   20.00%  fdget [kernel]\n"
	if b.String() != want {
		t.Fatalf("format:\n%s\nwant:\n%s", b.String(), want)
	}
	// A line that is not a symbol's (a call graph, a changed format) is
	// an error, not a share misread.
	_, err = parseReport(strings.NewReader(in + "            |--50.00%--main\n"))
	if err == nil || !strings.Contains(err.Error(), "line 6 is not a symbol's share") {
		t.Fatalf("call graph line: %v", err)
	}
}

func TestByPackage(t *testing.T) {
	for sym, want := range map[string]string{
		"runtime.memmove":                                            "runtime",
		"runtime.(*mspan).writeHeapBitsSmall":                        "runtime",
		"internal/runtime/maps.(*Map).getWithKeySmall":               "internal/runtime/maps",
		"github.com/a2ad/a2ad/internal/jsonw.(*scanner).object":      "github.com/a2ad/a2ad/internal/jsonw",
		"net/http.(*conn).serve.func1":                               "net/http",
		"ExecInterpExpr.part.0":                                      "",
		"hash_search_with_hash_value":                                "",
		"v8::internal::LookupIterator::LookupInRegularHolder<false>": "",
		"0x0000000000446bf2":                                         "",
		"cmpbody":                                                    "",
	} {
		if got := goPackage(sym); got != want {
			t.Errorf("goPackage(%q) = %q, want %q", sym, got, want)
		}
	}
	in := "    40.00%   40  [k] finish_task_switch.isra.0\n" +
		"    25.00%   25  [.] runtime.mallocgc\n" +
		"    15.00%   15  [.] github.com/a2ad/a2ad/tasks.(*Service).Send\n" +
		"    10.00%   10  [.] runtime.memmove\n" +
		"    10.00%   10  [.] cmpbody\n"
	rep, err := parseReport(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.format(&b, "a2ad", 1)
	if want := "\n  by Go package: [kernel] 40.0%, runtime 35.0%, github.com/a2ad/a2ad/tasks 15.0%, (not Go) 10.0%\n"; !strings.HasSuffix(b.String(), want) {
		t.Fatalf("format:\n%s\nwant it to end with:%s", b.String(), want)
	}
	// Under 10% in Go: not a Go process, no by-package line.
	rep, _ = parseReport(strings.NewReader("    95.00%   95  [.] hash_search_with_hash_value\n     5.00%    5  [.] runtime.memmove\n"))
	b.Reset()
	if rep.format(&b, "postgres", 15); strings.Contains(b.String(), "by Go package") {
		t.Fatalf("a C process got a by-package line:\n%s", b.String())
	}
}

func TestWaitResultFormat(t *testing.T) {
	s := newWaitSampler("", "a2abench_x")
	s.samples = 4
	s.counts = map[string]int{"LWLock:WALWrite": 12, "CPU": 6, "IO:WALSync": 6, "idle in transaction": 1}
	var b strings.Builder
	s.result().format(&b, 3)
	want := "postgres waits of the run's backends (pg_stat_activity every 50ms): 4 samples, 6.2 backends not idle on average\n" +
		"   48.00%      12  LWLock:WALWrite\n" +
		"   24.00%       6  CPU\n" +
		"   24.00%       6  IO:WALSync\n" +
		"  (1 other waits)\n"
	if b.String() != want {
		t.Fatalf("format:\n%s\nwant:\n%s", b.String(), want)
	}
	if text := s.result().text(); !strings.HasSuffix(text, "    4.00%       1  idle in transaction\n") {
		t.Fatalf("text lacks the last wait:\n%s", text)
	}
}

// TestPerfWithoutPerf runs a2abench -perf with a PATH that holds the go
// command and no perf: it stops before building anything, with one line.
func TestPerfWithoutPerf(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipped: a2abench finds its module with the go command, not on PATH")
	}
	bin := t.TempDir()
	if err := os.Symlink(gobin, filepath.Join(bin, "go")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	dir := filepath.Join(t.TempDir(), "prof")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-servers", "floor", "-perf", dir}, &stdout, &stderr)
	if want := "a2abench: -perf: perf is not installed (Debian: apt-get install linux-perf)\n"; code != 1 || stderr.String() != want || stdout.Len() != 0 {
		t.Fatalf("a2abench -perf without perf: exit %d, stderr %q, stdout %q; want 1, %q and nothing", code, stderr.String(), stdout.String(), want)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a2abench -perf without perf made %s: %v", dir, err)
	}
}

// TestPerfRun runs a2abench -perf on the floor for a second and reads
// what it wrote. It needs perf, allowed to record.
func TestPerfRun(t *testing.T) {
	if err := checkPerf(context.Background(), t.TempDir(), t.TempDir(), false); err != nil {
		t.Skip("skipped: ", err)
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("skipped: a2abench builds its servers with the go command, not on PATH")
	}
	dir := filepath.Join(t.TempDir(), "prof")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	args := []string{"-servers", "floor", "-clients", "4", "-duration", "1s", "-warmup", "0s", "-perf", dir}
	if code := run(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("a2abench %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	for _, f := range []string{"send-floor-4.server.data", "send-floor-4.server.txt", "send-floor-4.summary.txt"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v (want a file with something in it)", f, err)
		}
	}
	summary, err := os.ReadFile(filepath.Join(dir, "send-floor-4.summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	if !strings.Contains(out, "Where the time goes") || !strings.Contains(out, string(summary)) {
		t.Fatalf("stdout lacks the summary:\n%s", out)
	}
	// A symbol of the floor's own code: Go's runtime or net/http, named.
	if !strings.Contains(string(summary), "floor (pid ") || !strings.Contains(string(summary), "%  runtime.") {
		t.Fatalf("summary names no Go symbol:\n%s", summary)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("%s holds %d files, want 3 (no FIFO or other file left)", dir, len(entries))
	}
}

// TestWaitSampler samples a backend of the run's application_name that
// sleeps (wait event Timeout:PgSleep) and one that holds a transaction
// open between statements, beside a backend of another name it must not
// count.
func TestWaitSampler(t *testing.T) {
	pgtest.Require(t)
	ctx := context.Background()
	app := "a2abench_waits_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	dsn, err := withSearchPath(pgtest.DSN(), app) // search_path and application_name
	if err != nil {
		t.Fatal(err)
	}
	connect := func(dsn string) *pgx.Conn {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	sleeper, holder, other := connect(dsn), connect(dsn), connect(pgtest.DSN())
	if _, err := holder.Exec(ctx, "BEGIN; SELECT 1"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { _, err := sleeper.Exec(ctx, "SELECT pg_sleep(3)"); done <- err }()
	go func() { _, err := other.Exec(ctx, "SELECT pg_sleep(3)"); done <- err }()
	time.Sleep(200 * time.Millisecond) // the sleeps have begun
	s := newWaitSampler(pgtest.DSN(), app)
	s.start()
	time.Sleep(time.Second)
	s.stop()
	s.stop() // a second stop is harmless
	// The run's backends for perf report: the sleeper's and the
	// holder's, not the other's; PostgreSQL's own processes beside.
	backends, own, err := runPIDs(ctx, pgtest.DSN(), app)
	if err != nil || len(backends) != 2 || !slices.Contains(backends, strconv.Itoa(int(sleeper.PgConn().PID()))) ||
		!slices.Contains(backends, strconv.Itoa(int(holder.PgConn().PID()))) || len(own) == 0 {
		t.Errorf("runPIDs = %v, %v, %v; want the sleeper's and the holder's, and PostgreSQL's own", backends, own, err)
	}
	if _, _, err := runPIDs(ctx, pgtest.DSN(), app+"_none"); err == nil || !strings.Contains(err.Error(), "no backend has application_name") {
		t.Errorf("runPIDs of no backend: %v", err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	r := s.result()
	if r.err != nil || r.samples < 5 {
		t.Fatalf("%d samples, error %v; want at least 5 in a second at %v", r.samples, r.err, waitEvery)
	}
	got := map[string]int{}
	for _, w := range r.waits {
		got[w.what] = w.n
	}
	// Each sample sees the sleeper and the holder, and never the other.
	if len(got) != 2 || got["Timeout:PgSleep"] != r.samples || got["idle in transaction"] != r.samples {
		t.Fatalf("waits %v over %d samples; want Timeout:PgSleep and idle in transaction in each", got, r.samples)
	}
}
