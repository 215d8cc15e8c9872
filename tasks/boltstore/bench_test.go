package boltstore_test

// Benchmarks of the bbolt task store, all on real files.
//
// BenchmarkGet/tasks=1e6, BenchmarkRSS1e6 and BenchmarkRecoveryStart need a
// store with a million tasks. Building it takes minutes, so it is built once
// (with NoSync, many Creates grouped per commit) and kept under
// os.TempDir() as a2ad-bench-<N>tasks-schema<S>-data<D>.db; later runs
// reuse it. Delete the file to rebuild it; it is rebuilt anyway when the
// store schema (S) or the shape of the benchmark data (D) changes. Nothing
// here runs without -bench: plain `go test` builds no file.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

const (
	// benchSchema is the store schema the cached files were built with;
	// a cached file with another one is rebuilt.
	benchSchema = "6"
	// benchDataVersion changes whenever benchTask changes what it stores.
	benchDataVersion = 2
	// benchActive is how many tasks of a preloaded store are left working,
	// for the recovery benchmark.
	benchActive = 100
	// benchOwners is how many callers own the preloaded tasks.
	benchOwners = 8
	// benchFunction is the function of every preloaded task.
	benchFunction = "demo::echo"
)

// BenchmarkCommit measures durable creates (fsync on, default options): one
// task record and its first event per op, from one goroutine and from 16.
// writes/commit shows how many creates the store grouped into one fsync.
func BenchmarkCommit(b *testing.B) {
	b.Run("serial", func(b *testing.B) { benchCommit(b, false) })
	b.Run("parallel-16", func(b *testing.B) { benchCommit(b, true) })
}

func benchCommit(b *testing.B, parallel bool) {
	s := MustOpen(b, "")
	var next atomic.Int64
	now := time.Now()
	create := func() error {
		id := "t" + strconv.FormatInt(next.Add(1), 10)
		_, _, err := s.Create(ctx, key("bench", id, id), newRecord(id, "bench", a2a.StateSubmitted, now),
			[]tasks.Event{statusEvent(a2a.StateSubmitted)})
		return err
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	if parallel {
		b.SetParallelism(8) // 8 × GOMAXPROCS (2 here) = 16 goroutines
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := create(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	} else {
		for range b.N {
			if err := create(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	// The process's CPU time (the checkpoints' included), per create.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	commits, writes := s.Counts()
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/secs, "commits/s")
	b.ReportMetric(float64(commits)/secs, "fsyncs/s")
	if commits > 0 {
		b.ReportMetric(float64(writes)/float64(commits), "writes/commit")
	}
}

// BenchmarkGet measures Store.Get of random existing tasks in a store of
// 1e4 and of 1e6 completed tasks, opened with the default options, and
// reports the median and 99th percentile latency of one Get.
func BenchmarkGet(b *testing.B) {
	for _, n := range []int{1e4, 1e6} {
		b.Run(fmt.Sprintf("tasks=1e%d", len(strconv.Itoa(n))-1), func(b *testing.B) {
			path := preloaded(b, n)
			warm(b, path)
			s, err := boltstore.Open(path, boltstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			rng := rand.New(rand.NewPCG(1, uint64(b.N)))
			lat := make([]time.Duration, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				j := rng.IntN(n)
				id, owner := benchTaskID(j), benchOwner(j)
				start := time.Now()
				rec, err := s.Get(ctx, owner, id, tasks.Whole)
				lat[i] = time.Since(start)
				if err != nil {
					b.Fatalf("get task %d (%s): %v", j, id, err)
				}
				if rec.Task.ID != id {
					b.Fatalf("get %s returned %s", id, rec.Task.ID)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Nanoseconds()), "p99-ns")
		})
	}
}

// rssChildEnv names the store a child process opens to measure its RSS.
const rssChildEnv = "A2AD_RSS_CHILD_STORE"

// BenchmarkRSS1e6 measures the resident memory of a process that has the
// million-task store open and has served 10,000 random Gets. The
// measurement runs in a fresh child process (this test binary, running
// TestRSSChild), so that nothing else this process did counts. It
// reports VmRSS and its anonymous (Go heap, stacks) and file-backed (the
// mmap of the store) parts after a GC, and the file size. The whole file
// is read into the page cache first, as it is on a server that has run
// for a while with memory to spare: that is the worst case for the
// file-backed part, since the kernel maps cached neighbours of every page
// a Get faults in. Run it with -benchtime=1x: one measurement is the
// result.
func BenchmarkRSS1e6(b *testing.B) {
	const n = 1e6
	path := preloaded(b, n)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	var last map[string]float64
	for range b.N {
		warm(b, path)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRSSChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), rssChildEnv+"="+path, "A2AD_RSS_CHILD_TASKS="+strconv.Itoa(n))
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			b.Fatalf("rss child: %v\n%s", err, out)
		}
		last = parseRSS(b, out)
	}
	for _, k := range []string{"rss-MB", "rss-anon-MB", "rss-file-MB", "rss-open-MB"} {
		b.ReportMetric(last[k], k)
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "file-MB")
	b.ReportMetric(0, "ns/op") // the time of a child process says nothing
}

// TestRSSChild is the child process of BenchmarkRSS1e6; it is skipped
// unless that benchmark starts it.
func TestRSSChild(t *testing.T) {
	path := os.Getenv(rssChildEnv)
	if path == "" {
		t.Skip("run by BenchmarkRSS1e6 only")
	}
	n, err := strconv.Atoi(os.Getenv("A2AD_RSS_CHILD_TASKS"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runtime.GC()
	debug.FreeOSMemory()
	open := readRSS(t)
	rng := rand.New(rand.NewPCG(2, 3))
	gets := 10_000
	if v, err := strconv.Atoi(os.Getenv("A2AD_RSS_CHILD_GETS")); err == nil {
		gets = v
	}
	for range gets {
		j := rng.IntN(n)
		if _, err := s.Get(ctx, benchOwner(j), benchTaskID(j), tasks.Whole); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	debug.FreeOSMemory()
	after := readRSS(t)
	fmt.Printf("A2AD_RSS rss-MB=%.1f rss-anon-MB=%.1f rss-file-MB=%.1f rss-open-MB=%.1f\n",
		after["VmRSS"]/1024, after["RssAnon"]/1024, after["RssFile"]/1024, open["VmRSS"]/1024)
}

// readRSS reads the memory lines of /proc/self/status, in kB.
func readRSS(tb testing.TB) map[string]float64 {
	tb.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		tb.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	out := make(map[string]float64)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || !strings.HasPrefix(name, "VmRSS") && !strings.HasPrefix(name, "Rss") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
		if err == nil {
			out[name] = v
		}
	}
	return out
}

func parseRSS(tb testing.TB, out []byte) map[string]float64 {
	tb.Helper()
	for line := range bytes.Lines(out) {
		rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("A2AD_RSS "))
		if !ok {
			continue
		}
		m := make(map[string]float64)
		for _, f := range strings.Fields(string(rest)) {
			k, v, _ := strings.Cut(f, "=")
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatalf("rss child: %q", f)
			}
			m[k] = x
		}
		return m
	}
	tb.Fatalf("rss child printed no measurement:\n%s", out)
	return nil
}

// BenchmarkRecoveryStart measures a restart on a store of a million tasks,
// 100 of them left working by a "crash": the time from boltstore.Open to
// tasks.Service.Start returning, which recovers (here: fails) the 100
// from the non-terminal index. Between runs, untimed, the same 100 tasks
// are put back to working, so the cached file is reused. Run it with a
// small -benchtime such as 5x.
func BenchmarkRecoveryStart(b *testing.B) {
	const n = 1e6
	path := preloaded(b, n)
	rearm(b, path, n) // in case an earlier run stopped half-way
	warm(b, path)
	echo, err := functions.NewBuiltin("echo")
	if err != nil {
		b.Fatal(err)
	}
	cat := functions.NewCatalog(&functions.Function{
		ID: benchFunction, Name: "Echo", Metadata: map[string]any{exposure.MetaExpose: true},
		Timeout: 5 * time.Second, Backend: echo, // not retry-safe: recovery fails the tasks
	})
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		s, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		svc := tasks.New(tasks.Config{
			Store:   s,
			Catalog: func() *functions.Catalog { return cat },
			Logger:  zerolog.Nop(),
			// The sweeper must not expire the cached tasks. (Not more than
			// ~50 years: a cutoff before 1970 wraps around in the store's
			// expiry keys and expires everything.)
			Retention: 10 * 365 * 24 * time.Hour,
		})
		if err := svc.Start(ctx); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		b.StopTimer()
		active, err := s.Active(ctx)
		if err != nil || len(active) != 0 {
			b.Fatalf("after recovery: %d active tasks, %v", len(active), err)
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = svc.Close(cctx)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		rearm(b, path, n)
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/start")
}

// rearm puts the preloaded store's designated active tasks back to
// working, as a crash during their calls would leave them.
func rearm(tb testing.TB, path string, n int) {
	tb.Helper()
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, benchActive)
	for j := range n {
		if !benchIsActive(j, n) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, _, err := s.Update(ctx, benchOwner(j), benchTaskID(j), nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
				if r.State() == a2a.StateWorking {
					return nil, nil
				}
				st := a2a.TaskStatus{State: a2a.StateWorking, Timestamp: a2a.Timestamp(time.Now())}
				r.Task.Status = st
				return []tasks.Event{{Status: &st}}, nil
			})
			if err != nil {
				errs <- fmt.Errorf("rearm task %d: %w", j, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Error(err)
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	if tb.Failed() {
		tb.FailNow()
	}
}

// warm reads the file at path into the page cache, so that benchmarks
// measure the store rather than the disk (or how much of the file the
// kernel happened to keep cached).
func warm(tb testing.TB, path string) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(io.Discard, f); err != nil {
		tb.Fatal(err)
	}
}

// preloaded returns the path of a store holding n benchmark tasks,
// building and caching it under os.TempDir() if needed.
func preloaded(tb testing.TB, n int) string {
	tb.Helper()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("a2ad-bench-%dtasks-schema%s-data%d.db", n, benchSchema, benchDataVersion))
	if err := checkPreloaded(path, n); err == nil {
		return path
	} else if !errors.Is(err, os.ErrNotExist) {
		tb.Logf("rebuilding %s: %v", path, err)
	}
	tmp := path + ".building"
	_ = os.Remove(tmp)
	start := time.Now()
	if err := build(tmp, n, 15*time.Minute); err != nil {
		_ = os.Remove(tmp)
		tb.Fatalf("preload %d tasks: %v", n, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
	fi, _ := os.Stat(path)
	msg := fmt.Sprintf("preloaded %d tasks into %s in %v (%d MB)", n, path, time.Since(start).Round(time.Millisecond), fi.Size()>>20)
	tb.Log(msg)
	fmt.Fprintln(os.Stderr, msg)
	return path
}

var (
	checkedMu sync.Mutex
	checked   = map[string]bool{} // preloaded stores counted by this process
)

// checkPreloaded checks that path is a finished store of n benchmark
// tasks with the schema this file expects.
func checkPreloaded(path string, n int) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	var schema string
	if err := s.DB().View(func(tx *bolt.Tx) error {
		if m := tx.Bucket([]byte("meta")); m != nil {
			schema = string(m.Get([]byte("schema")))
		}
		return nil
	}); err != nil {
		return err
	}
	if schema != benchSchema {
		return fmt.Errorf("schema %q, want %q", schema, benchSchema)
	}
	// A sample of a thousand tasks, the first and last included.
	step := max(1, n/1000)
	for j := 0; j < n; j += step {
		if _, err := s.Get(ctx, benchOwner(j), benchTaskID(j), tasks.Whole); err != nil {
			return fmt.Errorf("task %d: %w", j, err)
		}
	}
	if _, err := s.Get(ctx, benchOwner(n-1), benchTaskID(n-1), tasks.Whole); err != nil {
		return fmt.Errorf("task %d: %w", n-1, err)
	}
	// Once per process, count them all.
	checkedMu.Lock()
	defer checkedMu.Unlock()
	if checked[path] {
		return nil
	}
	var count int
	if err := s.DB().View(func(tx *bolt.Tx) error {
		count = tx.Bucket([]byte("tasks")).Stats().KeyN
		return nil
	}); err != nil {
		return err
	}
	if count != n {
		return fmt.Errorf("%d tasks, want %d", count, n)
	}
	checked[path] = true
	return nil
}

// build creates a store of n tasks at path with NoSync, from many
// goroutines at once so that the store groups their Creates into large
// commits. It gives up after limit.
func build(path string, n int, limit time.Duration) error {
	const workers = 1024
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true, MaxBatch: workers, InitialMmapSize: 1 << 30})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	base := time.Now().Add(-time.Hour)
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1) - 1)
				if j >= n || ctx.Err() != nil {
					return
				}
				key, rec, events := benchTask(j, n, base)
				if _, _, err := s.Create(ctx, key, rec, events); err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("create task %d: %w", j, err); cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := s.Close(); err != nil && firstErr == nil {
		firstErr = err
	}
	if firstErr == nil && ctx.Err() != nil {
		firstErr = fmt.Errorf("not done after %v", limit)
	}
	if firstErr != nil {
		return firstErr
	}
	// Flush the file once now, so that the first fsync of a benchmark
	// does not write back the whole unsynced preload.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// benchTaskID is the id of benchmark task j: like a2ad's own task ids, a
// time-ordered (version 7) UUID, with j in place of the milliseconds, so
// ids sort in creation order as real ones do, yet are known without
// reading the store.
func benchTaskID(j int) string {
	id := []byte(benchUUID("task", j))
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(j))
	h := hex.EncodeToString(ms[2:]) // 48 bits
	copy(id[0:8], h[0:8])
	copy(id[9:13], h[8:12])
	id[14] = '7'
	return string(id)
}

func benchOwner(j int) string { return "caller-" + strconv.Itoa(j%benchOwners) }

// benchIsActive reports whether task j of a store of n is left working.
func benchIsActive(j, n int) bool { return j%(n/benchActive) == 0 }

func benchUUID(kind string, j int) string {
	var in [8]byte
	binary.BigEndian.PutUint64(in[:], uint64(j))
	sum := sha256.Sum256(append([]byte(kind), in[:]...))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// benchTask is benchmark task j of a store of n, as a2ad stores a blocking
// call of demo::echo: the user's message with a data part, the output as
// one artifact, and the events submitted, working, artifact, completed.
// The designated active tasks are left working instead, without the
// artifact.
func benchTask(j, n int, base time.Time) (tasks.IdemKey, *tasks.Record, []tasks.Event) {
	id, ctxID, msgID := benchTaskID(j), benchUUID("context", j), benchUUID("message", j)
	owner := benchOwner(j)
	at := base.Add(time.Duration(j) * time.Microsecond)
	ts := a2a.Timestamp(at)
	input := json.RawMessage(`{"message":"hello ` + strconv.Itoa(j) + `"}`)
	msg := a2a.Message{
		MessageID: msgID, TaskID: id, ContextID: ctxID, Role: a2a.RoleUser,
		Parts: []a2a.Part{a2a.DataPart(json.RawMessage(`{"skill":"` + benchFunction + `","input":` + string(input) + `}`))},
	}
	rec := &tasks.Record{
		Task: a2a.Task{
			ID: id, ContextID: ctxID,
			Status:  a2a.TaskStatus{State: a2a.StateCompleted, Timestamp: ts},
			History: []a2a.Message{msg},
		},
		Owner: owner, FunctionID: benchFunction, Input: input,
		CreatedAt: at, UpdatedAt: at,
	}
	submitted := a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: ts}
	working := a2a.TaskStatus{State: a2a.StateWorking, Timestamp: ts}
	events := []tasks.Event{{Status: &submitted}, {Status: &working}}
	if benchIsActive(j, n) {
		rec.Task.Status = working
	} else {
		art := a2a.Artifact{ArtifactID: benchUUID("artifact", j), Name: benchFunction, Parts: []a2a.Part{a2a.DataPart(input)}}
		rec.Task.Artifacts = []a2a.Artifact{art}
		events = append(events, tasks.Event{Artifact: &art, LastChunk: true}, tasks.Event{Status: &rec.Task.Status})
	}
	return tasks.KeyFor(owner, &msg), rec, events
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
