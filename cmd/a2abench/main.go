// Command a2abench compares a2ad side by side with the official A2A Go SDK
// and with a bare HTTP floor, in one run on one machine:
//
//	go run ./cmd/a2abench [-servers a2ad,sdk,floor] [-clients 16,64] [-duration 10s] [-warmup 2s]
//
// It builds the three servers (go build -trimpath -ldflags="-s -w") into a
// temporary directory, starts them one at a time on random loopback ports,
// and drives each with the same load: blocking message/send of a data part
// {"skill":"demo::echo","input":{"message":"hello"}}, a fresh messageId per
// request, from N concurrent clients sharing one keep-alive http.Client. It
// prints requests/s, p50, p99 and max latency and errors per server and
// concurrency, then the throughput ratios a2ad/sdk and a2ad/floor.
//
//   - a2ad:  ./cmd/a2ad serve with examples/catalog.yaml and a fresh store
//     file (fsync on, as in production; logging at info, the default).
//   - sdk:   ./cmd/a2abench/sdkserver, a2asrv with its in-memory task store
//     and an echo executor.
//   - floor: ./cmd/a2abench/floor, an Echo handler that decodes the request
//     and returns a fixed completed task.
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
}

var knownServers = []string{"a2ad", "sdk", "floor"}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("a2abench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	servers := fs.String("servers", strings.Join(knownServers, ","), "servers to compare, in order: a2ad, sdk, floor")
	clients := fs.String("clients", "16,64", "concurrent clients, one run per value")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured time of each run")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured warm-up before each run")
	fs.StringVar(&o.mode, "mode", "send", `load: "send" (blocking message/send); "stream" is planned`)
	fs.StringVar(&o.logLevel, "a2ad-log-level", "info", "a2ad's --log-level (info is its default; its log goes to a pipe that is drained)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory (binaries, a2ad's store)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
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
	return time.Duration(len(o.servers)*len(o.clients)) * (o.warmup + o.duration)
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
	switch o.mode {
	case "send":
	case "stream":
		fmt.Fprintln(stderr, "stream mode: not implemented yet")
		return 2
	default:
		fmt.Fprintf(stderr, "a2abench: -mode: %q is not send or stream\n", o.mode)
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
	fmt.Fprintf(stderr, "a2abench: building %s\n", strings.Join(o.servers, ", "))
	bins, err := build(ctx, root, dir, o.servers)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "a2abench: %d CPUs, %s %s/%s, mode %s, warm-up %v, duration %v, clients %s\n",
		runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, o.mode, o.warmup, o.duration, joinInts(o.clients))

	var results []result
	for _, name := range o.servers {
		rs, err := benchServer(ctx, o, name, root, dir, bins[name], stderr)
		results = append(results, rs...)
		if err != nil {
			printResults(stdout, o, results)
			return err
		}
	}
	printResults(stdout, o, results)
	return nil
}

// benchServer starts one server, runs every concurrency against it and
// stops it.
func benchServer(ctx context.Context, o options, name, root, dir, bin string, stderr io.Writer) ([]result, error) {
	srv, err := start(ctx, name, root, dir, bin, o.logLevel)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := srv.stop(); err != nil {
			fmt.Fprintf(stderr, "a2abench: stop %s: %v\n", name, err)
		}
	}()
	rpcURL := srv.baseURL + "/a2a"
	if err := smoke(ctx, rpcURL); err != nil {
		return nil, fmt.Errorf("%s: first request: %w%s", name, err, srv.tail())
	}
	var out []result
	for _, c := range o.clients {
		fmt.Fprintf(stderr, "a2abench: %s, %d clients: warm-up %v, then %v\n", name, c, o.warmup, o.duration)
		st, err := load(ctx, rpcURL, c, o.warmup, o.duration)
		if err != nil {
			return out, fmt.Errorf("%s, %d clients: %w%s", name, c, err, srv.tail())
		}
		if srv.exited() {
			return out, fmt.Errorf("%s exited during the run%s", name, srv.tail())
		}
		out = append(out, result{server: name, clients: c, stats: st})
	}
	return out, nil
}

func printResults(w io.Writer, o options, results []result) {
	if len(results) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "server\tclients\treq/s\tp50\tp99\tmax\terrors\t")
	byKey := map[string]stats{}
	for _, r := range results {
		s := r.stats
		byKey[r.server+"/"+strconv.Itoa(r.clients)] = s
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%s\t%d\t\n", r.server, r.clients, s.rps(), ms(s.p50), ms(s.p99), ms(s.max), s.errors)
	}
	tw.Flush()
	for _, r := range results {
		if r.stats.errors > 0 && r.stats.firstErr != "" {
			fmt.Fprintf(w, "first error of %s at %d clients: %s\n", r.server, r.clients, r.stats.firstErr)
		}
	}
	if !contains(o.servers, "a2ad") || len(o.servers) < 2 {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "clients\ta2ad/sdk\ta2ad/floor\t")
	for _, c := range o.clients {
		a, ok := byKey["a2ad/"+strconv.Itoa(c)]
		if !ok {
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t\n", c, ratio(a, byKey, "sdk/"+strconv.Itoa(c)), ratio(a, byKey, "floor/"+strconv.Itoa(c)))
	}
	tw.Flush()
}

func ratio(a stats, byKey map[string]stats, key string) string {
	b, ok := byKey[key]
	if !ok || b.rps() == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a.rps()/b.rps())
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
