// Command a2abench compares a2ad side by side with the official A2A SDKs
// (JS, Go at A2A 0.3 and at 1.0) and with a bare HTTP floor, in one run on
// one machine:
//
//	go run ./cmd/a2abench [-mode send|stream] [-servers a2ad,js,sdk,floor] [-clients 16,64] [-duration 10s] [-warmup 2s] [-pgbench] [-perf DIR]
//
// With -perf DIR it also records where each run's measured window spent
// its time, with perf (see perf.go), and prints the top symbols.
// It builds the Go servers (go build -trimpath -ldflags="-s -w") into a
// temporary directory, starts them one at a time on random loopback ports,
// and drives each with the same load: blocking message/send of a data part
// {"skill":"demo::echo","input":{"message":"hello"}}, a fresh messageId per
// request, from N concurrent clients sharing one keep-alive http.Client. It
// prints requests/s, p50, p99 and max latency, errors and the server's CPU
// time per request (utime and stime of its processes in /proc over the
// measured window, so it does not depend on what else runs) per server
// and concurrency, then the throughput ratios a2ad/js, a2ad/sdk,
// a2ad/sdk2 and a2ad/floor, and a2ad against the targets of issue 19
// (printed, not enforced). It speaks A2A 0.3 (message/send, no A2A-Version
// header) to every server but sdk2, which serves A2A 1.0 only: to it, it
// sends SendMessage (message/stream: SendStreamingMessage) in the 1.0
// form with A2A-Version: 1.0, and reads 1.0 answers.
//
// With -mode stream (default clients: 16), each client instead loops over
// message/stream (Accept: text/event-stream) of the same data part and
// reads every stream to its end. A stream counts as an error unless its
// events are JSON-RPC results for the request and the last one is a
// "final":true status-update in state completed (in 1.0, which has no
// final: a status-update in a terminal or interrupted state, completed).
// It prints streams/s, events/s, events per stream, the time to first
// event (from sending the request to reading the first complete data
// line) p50, p99 and max, and errors, then a2ad/sdk, a2ad/sdk2 and
// a2ad/floor in events/s and a2ad's TTFE p99,
// against the targets (printed, not enforced): a2ad events/s at least 5x
// the SDK's, and a2ad TTFE p99 under 10 ms at 16 clients.
//
//   - a2ad:  ./cmd/a2ad serve with examples/catalog.yaml and a fresh store
//     file (fsync on, as in production; logging at info, the default).
//   - a2ad-tmpfs: the same a2ad, its store file (and the store's
//     write-ahead log, <store>.wal, beside it) in a fresh directory under
//     /dev/shm, removed at the end: nothing is really fsynced, so it is
//     the upper bound of what the disk costs. Skipped, with a line on
//     stderr, when /dev/shm is not writable.
//   - a2ad-pg, a2ad-pg2, a2ad-pg4: the same a2ad, 1, 2 or 4 replicas, on a fresh
//     schema (a2abench_<random>, dropped at the end) of the PostgreSQL
//     server A2AD_BENCH_POSTGRES (else A2AD_TEST_POSTGRES, else the
//     project's 127.0.0.1:5432 test database). With n, client i talks
//     to replica i%n. Not in the default: it needs PostgreSQL.
//   - a2ad-pg-working: a2ad-pg serving cmd/a2abench/working.yaml, whose
//     bench::once the load calls: an echo that is not retry-safe, so each
//     call is stored as working before it runs (the slower path).
//
// For the a2ad-pg servers it prints what PostgreSQL spent per request:
// the CPU of its processes (when it runs on this machine), the write
// transactions it began (transaction ids handed out: each a commit that
// waits for its WAL flush), the WAL written, and with -pg-roundtrips the
// round trips a2ad made to it, counted by a proxy between them (which
// adds latency of its own: compare throughput without it). From the same
// figures it projects a fleet (fleet.go): what 1, 2, 4 and 8 replicas on
// machines of their own (-fleet-cores each) could serve against one
// database (-fleet-db-cores), bounded by the replicas' CPU, the database's
// CPU, the commits it sustains (pgbench -N's rate, with -pgbench) or its
// max_connections (-fleet-pool each, plus one listening), and which bounds
// it first.
//   - js:    ./cmd/a2abench/jsserver, the official JS SDK (@a2a-js/sdk with
//     Express, its packages installed by npm ci from the committed
//     lockfile) with its in-memory task store, the same echo executor, and
//     its v0.3 compatibility layer on. Needs node (>= 20) and npm.
//   - sdk2:  ./cmd/a2abench/sdk2server, the a2a-go v2 server (A2A 1.0,
//     JSON-RPC) with its in-memory task store and the same echo executor.
//   - sdk:   ./cmd/a2abench/sdkserver, a2asrv of a2a-go v0.3 (A2A 0.3)
//     with its in-memory task store and an echo executor.
//   - floor: ./cmd/a2abench/floor, an Echo handler that decodes the request
//     and returns a fixed completed task (message/send), or writes a
//     fixed stream of 3 events: task, artifact-update, final
//     status-update (message/stream).
//
// With -pgbench it first runs pgbench -N -c 16 -T 10 on that server, in a
// schema of its own (initialised with pgbench -i, then dropped), as the
// floor of what the server can commit, and prints a2ad-pg against it,
// the SDK and a2ad-pg2 (the targets of issue 15, printed, not enforced).
//
// Only loopback is used. The load phases may add up to 10 minutes at most,
// and the whole run, builds included, stops after 10 minutes. Every server
// started is stopped on exit, on error and on interrupt. Run it from the
// module (it needs the go command and the sources).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// maxTotal bounds a run: the load phases it plans, and the whole process.
const maxTotal = 10 * time.Minute

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the command's flags.
type options struct {
	mode     string
	servers  []string
	clients  []int
	duration time.Duration
	warmup   time.Duration
	logLevel string
	keep     bool
	pgbench  bool
	pgTrips  bool
	perfDir  string // -perf: where the profiles go ("" without)
	// The fleet model's machines (see fleet.go).
	fleetCores, fleetDBCores float64
	fleetPool                int
}

var knownServers = []string{"a2ad", "a2ad-tmpfs", "a2ad-pg", "a2ad-pg-working", "a2ad-pg2", "a2ad-pg4", "a2ad-mcp", "mcp-sdk", "a2ad-mcp26", "mcp-sdk26", "js", "sdk2", "sdk", "floor"}

// defaultServers need no PostgreSQL.
var defaultServers = []string{"a2ad", "js", "sdk", "floor"}

// defaultClients is -clients by mode.
var defaultClients = map[string]string{"send": "16,64", "stream": "16"}

// Targets of stream mode, printed against the results.
const (
	targetTTFEp99      = 10 * time.Millisecond // a2ad's TTFE p99 ...
	targetTTFEClients  = 16                    // ... at this many clients
	targetEventsPerSDK = 5.0                   // a2ad events/s over the SDK's
)

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("a2abench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	servers := fs.String("servers", strings.Join(defaultServers, ","),
		"servers to compare, in order: a2ad, a2ad-tmpfs (its store on "+tmpfsRoot+": no real fsync), a2ad-pg (one replica on PostgreSQL), "+
			"a2ad-pg-working (a2ad-pg calling a function that is not retry-safe, so every call goes through working), "+
			"a2ad-pg2, a2ad-pg4 (two or four on one schema), a2ad-mcp (a2ad's MCP tools/call of demo.echo, a durable task each), "+
			"mcp-sdk (the official MCP Go SDK's server, an echo tool, nothing stored), "+
			"a2ad-mcp26, mcp-sdk26 (the two at MCP revision 2026-07-28 instead of 2025-11-25), "+
			"js (the JS SDK server), sdk2 (a2a-go v2, A2A 1.0), sdk (a2a-go v0.3), floor")
	clients := fs.String("clients", "", "concurrent clients, one run per value (default 16,64; 16 with -mode stream)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured time of each run")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured warm-up before each run")
	fs.StringVar(&o.mode, "mode", "send", `load: "send" (blocking message/send) or "stream" (message/stream over SSE)`)
	fs.StringVar(&o.logLevel, "a2ad-log-level", "info", "a2ad's --log-level (info is its default; its log goes to a pipe that is drained)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory (binaries, a2ad's store; a2ad-tmpfs's store is removed)")
	fs.BoolVar(&o.pgTrips, "pg-roundtrips", false, "count the a2ad-pg servers' round trips to PostgreSQL, through a proxy that adds latency of its own")
	fs.StringVar(&o.perfDir, "perf", "", "record each run's measured window with perf record -F 999 -g into this directory "+
		"(the server's processes; for the a2ad-pg servers also PostgreSQL's, and its backends' wait events) and print where the time goes")
	fs.BoolVar(&o.pgbench, "pgbench", false, "also run pgbench "+strings.Join(pgbenchArgs, " ")+" on the PostgreSQL server, in a scratch schema")
	cores := float64(runtime.NumCPU())
	fs.Float64Var(&o.fleetCores, "fleet-cores", cores, "the fleet model's cores of each replica's machine (default: this machine's)")
	fs.Float64Var(&o.fleetDBCores, "fleet-db-cores", cores, "the fleet model's cores of the database's machine (default: this machine's)")
	fs.IntVar(&o.fleetPool, "fleet-pool", 16, "the fleet model's connections in each replica's pool (a2ad's --store-max-conns; 16 is its default)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch o.mode {
	case "send", "stream":
	default:
		return o, fmt.Errorf("-mode: %q is not send or stream", o.mode)
	}
	if *clients == "" {
		*clients = defaultClients[o.mode]
	}
	seen := map[string]bool{}
	for _, s := range strings.Split(*servers, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !contains(knownServers, s) {
			return o, fmt.Errorf("-servers: unknown server %q (known: %s)", s, strings.Join(knownServers, ", "))
		}
		if o.mode == "stream" && protocolOf(s).mcp {
			return o, fmt.Errorf("-servers: %s speaks MCP, whose calls a2abench sends, not streams (-mode send)", s)
		}
		if !seen[s] {
			o.servers = append(o.servers, s)
			seen[s] = true
		}
	}
	if len(o.servers) == 0 {
		return o, errors.New("-servers: name at least one server")
	}
	for _, c := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 || n > 4096 {
			return o, fmt.Errorf("-clients: %q is not a number of clients from 1 to 4096", c)
		}
		o.clients = append(o.clients, n)
	}
	if o.duration <= 0 || o.warmup < 0 {
		return o, errors.New("-duration must be positive and -warmup not negative")
	}
	if plan := o.planned(); plan > maxTotal {
		return o, fmt.Errorf("the runs would take %v, over the limit of %v: lower -duration, -warmup, -clients or -servers", plan, maxTotal)
	}
	switch o.logLevel {
	case "debug", "info", "warn", "error":
	default:
		return o, fmt.Errorf("-a2ad-log-level: %q is not debug, info, warn or error", o.logLevel)
	}
	return o, nil
}

// planned is the time the load phases take.
func (o options) planned() time.Duration {
	d := time.Duration(len(o.servers)*len(o.clients)) * (o.warmup + o.duration)
	if o.pgbench {
		d += pgbenchDuration
	}
	return d
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "a2abench:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, maxTotal)
	defer cancel()
	if err := bench(ctx, o, stdout, stderr); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w (the run is capped at %v)", err, maxTotal)
		}
		fmt.Fprintln(stderr, "a2abench:", err)
		return 1
	}
	return 0
}

// result is one run: one server at one concurrency.
type result struct {
	server  string
	clients int
	stats   stats
}

func bench(ctx context.Context, o options, stdout, stderr io.Writer) error {
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "a2abench-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(stderr, "a2abench: keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	var prof *profiler
	if o.perfDir != "" {
		if err := checkPerf(ctx, o.perfDir, dir, slices.ContainsFunc(o.servers, usesPostgres)); err != nil {
			return err
		}
		prof = &profiler{dir: o.perfDir, tmp: dir, mode: o.mode}
	}
	if o.servers = skipUnavailable(o.servers, stderr); len(o.servers) == 0 {
		return errors.New("no server left to run")
	}
	fmt.Fprintf(stderr, "a2abench: building %s\n", strings.Join(o.servers, ", "))
	bins, err := build(ctx, root, dir, o.servers, prof != nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "a2abench: %d CPUs, %s %s/%s, mode %s, warm-up %v, duration %v, clients %s\n",
		runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, o.mode, o.warmup, o.duration, joinInts(o.clients))

	var pgb pgbenchResult
	if o.pgbench {
		fmt.Fprintf(stderr, "a2abench: pgbench %s on %s\n", strings.Join(pgbenchArgs, " "), pgHost(benchPostgres()))
		if pgb, err = runPgbench(ctx, benchPostgres()); err != nil {
			return err
		}
	}
	var results []result
	for _, name := range o.servers {
		rs, err := benchServer(ctx, o, prof, name, root, dir, bins[name], stderr)
		results = append(results, rs...)
		if err != nil {
			printResults(stdout, o, results)
			return err
		}
	}
	printResults(stdout, o, results)
	printPostgres(stdout, o, results, pgb)
	printPGCost(stdout, results)
	if o.mode == "send" && slices.ContainsFunc(o.servers, usesPostgres) {
		printFleet(stdout, o, results, pgb, maxConnections(ctx, benchPostgres()))
	}
	printProfiles(stdout, results)
	return nil
}

// usesPostgres reports whether the server name is a2ad on PostgreSQL.
func usesPostgres(name string) bool { return strings.HasPrefix(name, "a2ad-pg") }

// benchServer starts one server, runs every concurrency against it and
// stops it. With prof, each run's measured window is profiled.
func benchServer(ctx context.Context, o options, prof *profiler, name, root, dir, bin string, stderr io.Writer) ([]result, error) {
	srv, err := startGroup(ctx, name, root, dir, bin, o.logLevel, o.pgTrips, prof != nil)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := srv.stop(); err != nil {
			fmt.Fprintf(stderr, "a2abench: stop %s: %v\n", name, err)
		}
	}()
	mk := sendOp(protocolOf(name))
	if o.mode == "stream" {
		mk = streamOp(protocolOf(name))
	}
	for _, u := range srv.urls() {
		if err := smoke(ctx, u, mk); err != nil {
			return nil, fmt.Errorf("%s: first request: %w%s", name, err, srv.tail())
		}
	}
	var out []result
	for _, c := range o.clients {
		fmt.Fprintf(stderr, "a2abench: %s, %d clients: warm-up %v, then %v\n", name, c, o.warmup, o.duration)
		rec, err := prof.begin(ctx, name, c, srv)
		if err != nil {
			return out, fmt.Errorf("%s, %d clients: -perf: %w", name, c, err)
		}
		st, err := load(ctx, srv.urls(), c, o.warmup, o.duration, mk, srv.usage, rec.edge)
		summary, perr := rec.end(ctx)
		if err != nil {
			return out, fmt.Errorf("%s, %d clients: %w%s", name, c, err, srv.tail())
		}
		if srv.exited() {
			return out, fmt.Errorf("%s exited during the run%s", name, srv.tail())
		}
		if perr != nil {
			return out, perr
		}
		st.profile = summary
		out = append(out, result{server: name, clients: c, stats: st})
	}
	return out, nil
}

func printResults(w io.Writer, o options, results []result) {
	if len(results) == 0 {
		return
	}
	if o.mode == "stream" {
		printStreamResults(w, o, results)
		return
	}
	byKey := printRuns(w, results, "req/s\tp50\tp99\tmax\terrors\tcpu/req\tallocs/req\twrites/commit", func(s stats) string {
		return fmt.Sprintf("%.0f\t%s\t%s\t%s\t%d\t%s\t%s\t%s", s.rps(), ms(s.p50), ms(s.p99), ms(s.max), s.errors,
			s.cpuPerOp(), s.allocsPerOp(), s.writesPerCommit())
	})
	if !contains(o.servers, "a2ad") || len(o.servers) < 2 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "clients\ta2ad/js\ta2ad/sdk\ta2ad/sdk2\ta2ad/floor\t")
	for _, c := range o.clients {
		a, ok := byKey["a2ad/"+strconv.Itoa(c)]
		if !ok {
			continue
		}
		k := strconv.Itoa(c)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t\n", c, ratio(a, byKey, "js/"+k, stats.rps),
			ratio(a, byKey, "sdk/"+k, stats.rps), ratio(a, byKey, "sdk2/"+k, stats.rps), ratio(a, byKey, "floor/"+k, stats.rps))
	}
	tw.Flush()
	printSendTargets(w, byKey)
}

// Targets of send mode (issue 19), printed against the results.
const (
	targetSendClients = 16                   // at this many clients, a2ad's ...
	targetOverJS      = 3.0                  // ... req/s over the JS SDK server's
	targetOfFloor     = 0.40                 // ... req/s over the floor's
	targetSendP99     = 5 * time.Millisecond // ... p99 at most this
	targetMoreClients = 64                   // more req/s here than at 16, no errors
)

// printSendTargets prints a2ad against issue 19's targets, each "met",
// "missed" or "-" (a run it needs is missing). They do not change the
// exit status.
func printSendTargets(w io.Writer, byKey map[string]stats) {
	a, ok := byKey["a2ad/"+strconv.Itoa(targetSendClients)]
	if !ok {
		return
	}
	against := func(key string, share float64) string {
		b, ok := byKey[key]
		if !ok || b.rps() == 0 {
			return "-"
		}
		return metOrMissed(a.rps() >= share*b.rps())
	}
	more := "-"
	if m, ok := byKey["a2ad/"+strconv.Itoa(targetMoreClients)]; ok {
		more = metOrMissed(m.rps() > a.rps() && m.errors == 0)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "at %d clients:\t>= %.0fx js\t>= %.0f%% of floor\tp99 <= %s\tat %d clients: more, no errors\t\n",
		targetSendClients, targetOverJS, targetOfFloor*100, ms(targetSendP99), targetMoreClients)
	fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s\t\n", against("js/"+strconv.Itoa(targetSendClients), targetOverJS),
		against("floor/"+strconv.Itoa(targetSendClients), targetOfFloor), metOrMissed(a.p99 <= targetSendP99 && a.ok > 0), more)
	tw.Flush()
}

// printRuns prints a table of the runs, a row each: the server, the
// clients and row's columns (under header), then the first error of each
// run that had errors. It returns the runs' stats by "server/clients".
func printRuns(w io.Writer, results []result, header string, row func(stats) string) map[string]stats {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "server\tclients\t"+header+"\t")
	byKey := map[string]stats{}
	for _, r := range results {
		byKey[r.server+"/"+strconv.Itoa(r.clients)] = r.stats
		fmt.Fprintf(tw, "%s\t%d\t%s\t\n", r.server, r.clients, row(r.stats))
	}
	tw.Flush()
	for _, r := range results {
		if r.stats.errors > 0 && r.stats.firstErr != "" {
			fmt.Fprintf(w, "first error of %s at %d clients: %s\n", r.server, r.clients, r.stats.firstErr)
		}
	}
	return byKey
}

// ratio is a's rate (stats.rps or stats.eps) over the run key's ("-"
// without that run).
func ratio(a stats, byKey map[string]stats, key string, rate func(stats) float64) string {
	b, ok := byKey[key]
	if !ok || rate(b) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", rate(a)/rate(b))
}

// printStreamResults prints stream mode's table, then a2ad against the
// others and the targets.
func printStreamResults(w io.Writer, o options, results []result) {
	byKey := printRuns(w, results, "streams/s\tevents/s\tev/stream\tTTFE p50\tTTFE p99\tTTFE max\terrors", func(s stats) string {
		return fmt.Sprintf("%.0f\t%.0f\t%.2f\t%s\t%s\t%s\t%d", s.rps(), s.eps(), s.perStream(), ms(s.p50), ms(s.p99), ms(s.max), s.errors)
	})
	if !contains(o.servers, "a2ad") {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "clients\tevents/s a2ad/sdk\ttarget >= %.0fx\tevents/s a2ad/sdk2\tevents/s a2ad/floor\ta2ad TTFE p99\ttarget < %s at %d clients\t\n",
		targetEventsPerSDK, ms(targetTTFEp99), targetTTFEClients)
	for _, c := range o.clients {
		key := strconv.Itoa(c)
		a, ok := byKey["a2ad/"+key]
		if !ok {
			continue
		}
		sdk, hasSDK := byKey["sdk/"+key]
		eTarget := "-"
		if hasSDK && sdk.eps() > 0 {
			eTarget = metOrMissed(a.eps() >= targetEventsPerSDK*sdk.eps())
		}
		tTarget := "-"
		if c == targetTTFEClients && a.ok > 0 {
			tTarget = metOrMissed(a.p99 < targetTTFEp99)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c, ratio(a, byKey, "sdk/"+key, stats.eps), eTarget,
			ratio(a, byKey, "sdk2/"+key, stats.eps), ratio(a, byKey, "floor/"+key, stats.eps), ms(a.p99), tTarget)
	}
	tw.Flush()
}

func metOrMissed(met bool) string {
	if met {
		return "met"
	}
	return "missed"
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
