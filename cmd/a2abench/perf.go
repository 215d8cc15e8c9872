package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// -perf DIR: where each run's time goes (issue 31), recorded over the
// measured window only. For each run a2abench starts `perf record` with
// its events disabled before the warm-up, enables them through perf's
// control FIFO as the window opens and disables them as it closes, then
// stops perf and reads its report. A run's files in DIR are named
// MODE-SERVER-CLIENTS: .server.data and .server.txt (perf record -p of the
// server's processes, and perf report's self time by symbol), for the
// a2ad-pg servers .postgres.data and .postgres.txt (every process named
// postgres), .waits.txt (pg_stat_activity's wait events of the run's
// backends), and .summary.txt, which a2abench also prints after its
// tables.
//
// PostgreSQL is recorded system-wide (perf record -a), not with -p and
// the pids of the run's backends: a backend the pool opens during the
// window (after -warmup 0s, or a reconnect) is not there to be found when
// perf starts, and perf -p does not follow the postmaster's later
// children. The report is then filtered (perf report --pid) to the
// backends pg_stat_activity lists for the run's application_name once the
// window has closed (the server still runs, its pool still open) and to
// PostgreSQL's own processes (WAL writer, checkpointer, background writer,
// autovacuum: where WAL flushes and the run's dead rows may be paid),
// which serve every database: on a busy machine others' share those.
// Other clients' backends are left out, which the pg cpu/req column (every
// process named postgres, from /proc) cannot do; if the list cannot be
// read, the report falls back to every process named postgres.
//
// Reading the summaries: on a VM without a hardware PMU perf samples
// cpu-clock, and a sample due while interrupts were off lands where they
// are turned back on: a large finish_task_switch share is scheduling
// (context switches), not that function. The .data files name binaries in
// a2abench's temporary directory: run with -keep to perf report them
// later with other options (call graphs: perf report -g -i FILE).

// perfFreq is perf record's sampling frequency (Hz): not a multiple of
// the kernel's tick, so samples do not beat with periodic work.
const perfFreq = 999

// perfTop is how many symbols a summary lists per process group.
const perfTop = 15

// profiler records the runs' profiles into dir (-perf).
type profiler struct {
	dir  string // where the files go
	tmp  string // a2abench's temporary directory: the control FIFOs
	mode string // send or stream, the first part of a run's label
}

// checkPerf makes dir and makes sure perf can record here, system-wide
// too when allWide (the PostgreSQL servers need it): it records `true`
// into tmp. The error is one line.
func checkPerf(ctx context.Context, dir, tmp string, allWide bool) error {
	if _, err := exec.LookPath("perf"); err != nil {
		return errors.New("-perf: perf is not installed (Debian: apt-get install linux-perf)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("-perf: %v", err)
	}
	args := []string{"record", "-q", "--no-buildid-cache", "-F", strconv.Itoa(perfFreq), "-g", "-o", filepath.Join(tmp, "perf-check.data")}
	if allWide {
		args = append(args, "-a")
	}
	out, err := exec.CommandContext(ctx, "perf", append(args, "--", "true")...).CombinedOutput()
	_ = os.Remove(filepath.Join(tmp, "perf-check.data"))
	if err != nil {
		return fmt.Errorf("-perf: perf cannot record here (run as root, or lower /proc/sys/kernel/perf_event_paranoid): %s", firstLine(out, err))
	}
	return nil
}

// firstLine is the first non-blank line of out, or err's text.
func firstLine(out []byte, err error) string {
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return err.Error()
}

// perfProc is one perf record process of a run, its events disabled until
// enable.
type perfProc struct {
	group  string   // "server" or "postgres": the files' middle name
	title  string   // what the summary calls the group
	report []string // perf report's extra arguments (the filter)
	data   string   // perf.data path
	cmd    *exec.Cmd
	ctl    *os.File // perf's control FIFO, written
	ack    *os.File // its acknowledgements, read
	fifos  []string // their paths, removed by stop
	log    *tailBuffer
	done   chan struct{}
}

// controlTimeout bounds perf's start and each answer on its control FIFO.
const controlTimeout = time.Minute

// startPerf starts perf record -F perfFreq -g into dir/label.group.data,
// with events disabled, on target (-p PIDS, or -a). Its control FIFOs are
// made in tmp.
func startPerf(dir, tmp, label, group string, target []string) (*perfProc, error) {
	p := &perfProc{group: group, data: filepath.Join(dir, label+"."+group+".data"), log: &tailBuffer{max: 2048}, done: make(chan struct{})}
	ctlPath, ackPath := filepath.Join(tmp, label+"."+group+".ctl"), filepath.Join(tmp, label+"."+group+".ack")
	p.fifos = []string{ctlPath, ackPath}
	for _, f := range p.fifos {
		_ = os.Remove(f)
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			return nil, fmt.Errorf("perf control FIFO: %w", err)
		}
	}
	args := append([]string{"record", "-q", "--no-buildid-cache", "-F", strconv.Itoa(perfFreq), "-g", "-D", "-1",
		"--control", "fifo:" + ctlPath + "," + ackPath, "-o", p.data}, target...)
	p.cmd = exec.Command("perf", args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	setProcAttr(p.cmd)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start perf: %w", err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	// Opened for reading or writing only, a FIFO waits for its other
	// end; opened O_RDWR it does not, so a perf that dies before opening
	// them is seen (p.done), not waited for.
	var err error
	if p.ctl, err = os.OpenFile(ctlPath, os.O_RDWR, 0); err == nil {
		p.ack, err = os.OpenFile(ackPath, os.O_RDWR, 0)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("perf control FIFO: %w", err), p.stop())
	}
	// perf reads its FIFO once it is ready to record (system-wide, it
	// first lists every process's mappings: seconds on a busy machine).
	// Waiting here keeps that out of the window, whose edges are then
	// quick.
	if err := p.command("ping"); err != nil {
		return nil, errors.Join(err, p.stop())
	}
	return p, nil
}

// command sends cmd ("enable", "disable" or "ping") to perf and waits for
// its ack.
func (p *perfProc) command(cmd string) error {
	if _, err := p.ctl.WriteString(cmd + "\n"); err != nil {
		return fmt.Errorf("perf %s: %w", cmd, err)
	}
	got := make(chan error, 1)
	go func() {
		buf := make([]byte, 16)
		n, err := p.ack.Read(buf)
		// perf writes "ack\n" and the string's NUL.
		if err == nil && strings.Trim(string(buf[:n]), "\x00\n ") != "ack" {
			err = fmt.Errorf("answer %q", buf[:n])
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			return fmt.Errorf("perf %s: %w", cmd, err)
		}
		return nil
	case <-p.done:
		return fmt.Errorf("perf exited before its %s was acknowledged: %s", cmd, firstLine([]byte(p.log.String()), errors.New("no output")))
	case <-time.After(controlTimeout):
		return fmt.Errorf("perf did not acknowledge %s within %v", cmd, controlTimeout)
	}
}

// stop ends perf (SIGINT: it writes its file and exits) and closes the
// FIFOs. It returns once perf has exited.
func (p *perfProc) stop() error {
	_ = p.cmd.Process.Signal(os.Interrupt)
	var err error
	select {
	case <-p.done:
	case <-time.After(controlTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		err = fmt.Errorf("perf did not stop on SIGINT within %v: killed", controlTimeout)
	}
	for _, f := range []*os.File{p.ctl, p.ack} {
		if f != nil {
			f.Close()
		}
	}
	for _, f := range p.fifos {
		_ = os.Remove(f)
	}
	if err == nil && !p.cmd.ProcessState.Success() && !signalled(p.cmd.ProcessState, os.Interrupt) {
		err = fmt.Errorf("perf record: %v: %s", p.cmd.ProcessState, firstLine([]byte(p.log.String()), errors.New("no output")))
	}
	return err
}

// signalled reports whether the process ended by sig.
func signalled(ps *os.ProcessState, sig os.Signal) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// reportSyms runs perf report on the recording: self time by symbol, no
// call graphs, the sample counts, and writes its text to dir/label.group.txt.
func (p *perfProc) reportSyms(ctx context.Context, dir, label string) (symReport, error) {
	args := append([]string{"report", "-i", p.data, "--stdio", "--no-children", "--sort", "sym", "-g", "none", "-n"}, p.report...)
	cmd := exec.CommandContext(ctx, "perf", args...)
	var stderr tailBuffer
	stderr.max = 2048
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return symReport{}, fmt.Errorf("perf report %s: %w: %s", p.data, err, strings.TrimSpace(stderr.String()))
	}
	if err := os.WriteFile(filepath.Join(dir, label+"."+p.group+".txt"), out, 0o644); err != nil {
		return symReport{}, err
	}
	return parseReport(strings.NewReader(string(out)))
}

// symShare is one line of perf report --sort sym.
type symShare struct {
	share   float64 // percent of the samples shown
	samples int
	kernel  bool // [k]: in the kernel
	sym     string
}

// symReport is a parsed perf report: its lines, most first, and the sum
// of their samples.
type symReport struct {
	syms    []symShare
	samples int
}

// reportLine is a line of perf report --stdio --sort sym -n:
// "    12.34%          1234  [.] runtime.mallocgc".
var reportLine = regexp.MustCompile(`^\s*([0-9.]+)%\s+([0-9]+)\s+\[(.)\]\s+(.+?)\s*$`)

// parseReport reads the output of perf report --stdio --no-children
// --sort sym -g none -n. Comments and blank lines are skipped; any other
// line that is not a symbol's is an error, so a change of perf's format
// is noticed, not misread.
func parseReport(r io.Reader) (symReport, error) {
	var rep symReport
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		m := reportLine.FindStringSubmatch(line)
		if m == nil {
			return symReport{}, fmt.Errorf("perf report line %d is not a symbol's share: %.100q", n, line)
		}
		share, err1 := strconv.ParseFloat(m[1], 64)
		samples, err2 := strconv.Atoi(m[2])
		if err1 != nil || err2 != nil {
			return symReport{}, fmt.Errorf("perf report line %d: share %q, samples %q", n, m[1], m[2])
		}
		rep.syms = append(rep.syms, symShare{share: share, samples: samples, kernel: m[3] == "k", sym: m[4]})
		rep.samples += samples
	}
	return rep, sc.Err()
}

// unresolved is what folded calls the addresses perf found no symbol
// for: functions of a binary without a symbol table (Debian's postgres
// keeps only its exported ones), or code a JIT made and did not map.
const unresolved = "(addresses without a symbol: a stripped binary's static functions, or JIT code)"

// hexAddr is a symbol perf could not name.
var hexAddr = regexp.MustCompile(`^0x[0-9a-f]+$`)

// folded is the report with the addresses perf could not name summed into
// one line, unresolved, in its place by share.
func (rep symReport) folded() symReport {
	out := symReport{samples: rep.samples}
	var un symShare
	for _, s := range rep.syms {
		if hexAddr.MatchString(s.sym) {
			un.share += s.share
			un.samples += s.samples
			continue
		}
		out.syms = append(out.syms, s)
	}
	if un.samples > 0 {
		un.sym = unresolved
		i, _ := slices.BinarySearchFunc(out.syms, un.share, func(s symShare, share float64) int { return cmp.Compare(share, s.share) })
		out.syms = slices.Insert(out.syms, i, un)
	}
	return out
}

// format writes the report's top symbols under a title line.
func (rep symReport) format(w io.Writer, title string, top int) {
	rep = rep.folded()
	kernel := 0.0
	for _, s := range rep.syms {
		if s.kernel {
			kernel += s.share
		}
	}
	fmt.Fprintf(w, "%s: %d samples at %d Hz (%.2fs of CPU), %.1f%% in the kernel\n",
		title, rep.samples, perfFreq, float64(rep.samples)/perfFreq, kernel)
	for i, s := range rep.syms {
		if i == top {
			rest := 0.0
			for _, r := range rep.syms[top:] {
				rest += r.share
			}
			fmt.Fprintf(w, "  %6.2f%%  (%d other symbols)\n", rest, len(rep.syms)-top)
			break
		}
		where := ""
		if s.kernel {
			where = " [kernel]"
		}
		fmt.Fprintf(w, "  %6.2f%%  %s%s\n", s.share, s.sym, where)
	}
	if pkgs := rep.byPackage(); len(pkgs) > 0 {
		parts := make([]string, 0, perfTopPackages)
		for _, p := range pkgs[:min(len(pkgs), perfTopPackages)] {
			parts = append(parts, fmt.Sprintf("%s %.1f%%", p.sym, p.share))
		}
		fmt.Fprintf(w, "  by Go package: %s\n", strings.Join(parts, ", "))
	}
}

// perfTopPackages is how many packages the by-package line names.
const perfTopPackages = 8

// minGoShare is the share of samples in Go functions under which a
// process is not Go's and gets no by-package line.
const minGoShare = 10.0

// byPackage sums the shares by Go package (the kernel as "[kernel]",
// what is not Go as "(not Go)"), most first; none when less than
// minGoShare percent is in Go functions.
func (rep symReport) byPackage() []symShare {
	sums := map[string]float64{}
	goShare := 0.0
	for _, s := range rep.syms {
		pkg := goPackage(s.sym)
		switch {
		case s.kernel:
			pkg = "[kernel]"
		case pkg == "":
			pkg = "(not Go)"
		default:
			goShare += s.share
		}
		sums[pkg] += s.share
	}
	if goShare < minGoShare {
		return nil
	}
	var out []symShare
	for pkg, share := range sums {
		out = append(out, symShare{sym: pkg, share: share})
	}
	slices.SortFunc(out, func(a, b symShare) int { return cmp.Or(cmp.Compare(b.share, a.share), strings.Compare(a.sym, b.sym)) })
	return out
}

// gccClone is the suffix GCC gives a C function's copies (foo.isra.0,
// foo.part.0, foo.cold): a dot that is not a Go package's.
var gccClone = regexp.MustCompile(`\.(isra|part|constprop|cold|lto_priv)(\.|$)`)

// goPackage is the package of a Go function's symbol
// ("github.com/a2ad/a2ad/internal/jsonw" of
// "github.com/a2ad/a2ad/internal/jsonw.(*scanner).object"), or "" for a
// symbol that is not one (C's, C++'s, an address).
func goPackage(sym string) string {
	if strings.Contains(sym, "::") || strings.ContainsAny(sym, " <>") || hexAddr.MatchString(sym) || gccClone.MatchString(sym) {
		return ""
	}
	dot := strings.IndexByte(sym[strings.LastIndexByte(sym, '/')+1:], '.')
	if dot <= 0 {
		return ""
	}
	return sym[:strings.LastIndexByte(sym, '/')+1+dot]
}

// recording is the profiles of one run. Its methods do nothing on a nil
// recording (a run without -perf).
type recording struct {
	label string
	dir   string
	procs []*perfProc
	waits *waitSampler // nil unless the run is on PostgreSQL
	pg    *perfProc    // the PostgreSQL recording, or nil
	err   error        // the first error of edge (the window's open or close)
}

// begin starts the run's recordings, events disabled: perf of the group's
// processes and, on PostgreSQL, of every process named postgres and a
// sampler of its backends' wait events. It returns nil without -perf.
func (p *profiler) begin(ctx context.Context, name string, clients int, g *group) (*recording, error) {
	if p == nil {
		return nil, nil
	}
	r := &recording{label: fmt.Sprintf("%s-%s-%d", p.mode, name, clients), dir: p.dir}
	pids := make([]string, len(g.procs))
	for i, s := range g.procs {
		pids[i] = strconv.Itoa(s.cmd.Process.Pid)
	}
	sp, err := startPerf(p.dir, p.tmp, r.label, "server", []string{"-p", strings.Join(pids, ",")})
	if err != nil {
		return nil, err
	}
	sp.title = fmt.Sprintf("%s (pid %s)", name, strings.Join(pids, ", "))
	r.procs = append(r.procs, sp)
	if g.pg == nil {
		return r, nil
	}
	pp, err := startPerf(p.dir, p.tmp, r.label, "postgres", []string{"-a"})
	if err != nil {
		return nil, errors.Join(err, r.stopAll())
	}
	r.procs, r.pg = append(r.procs, pp), pp
	r.waits = newWaitSampler(benchPostgres(), g.app)
	return r, nil
}

// edge opens (true) or closes the measured window: perf's events on or
// off, the wait sampler started or stopped. load calls it from the
// goroutine that reads the probes; an error is kept for end.
func (r *recording) edge(open bool) {
	if r == nil {
		return
	}
	cmd := "disable"
	if open {
		cmd = "enable"
	}
	for _, p := range r.procs {
		if err := p.command(cmd); err != nil && r.err == nil {
			r.err = err
		}
	}
	if r.waits != nil {
		if open {
			r.waits.start()
		} else {
			r.waits.stop()
		}
	}
}

// stopAll stops every perf of the run and the sampler.
func (r *recording) stopAll() error {
	var errs []error
	for _, p := range r.procs {
		errs = append(errs, p.stop())
	}
	if r.waits != nil {
		r.waits.stop()
	}
	return errors.Join(errs...)
}

// end stops the recordings and returns the run's summary, which it also
// writes to dir/label.summary.txt. The first error of the window's edges
// makes it fail: a profile of the wrong span is no profile.
func (r *recording) end(ctx context.Context) (string, error) {
	if r == nil {
		return "", nil
	}
	if err := errors.Join(r.err, r.stopAll()); err != nil {
		return "", fmt.Errorf("-perf %s: %w", r.label, err)
	}
	if r.pg != nil {
		r.pg.title, r.pg.report = r.pgFilter(ctx)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: self time by symbol over the measured window (files %s.*)\n", r.label, filepath.Join(r.dir, r.label))
	for _, p := range r.procs {
		rep, err := p.reportSyms(ctx, r.dir, r.label)
		if err != nil {
			return "", fmt.Errorf("-perf %s: %w", r.label, err)
		}
		rep.format(&b, p.title, perfTop)
	}
	if r.waits != nil {
		w := r.waits.result()
		w.format(&b, perfTop)
		if err := os.WriteFile(filepath.Join(r.dir, r.label+".waits.txt"), []byte(w.text()), 0o644); err != nil {
			return "", err
		}
	}
	s := b.String()
	return s, os.WriteFile(filepath.Join(r.dir, r.label+".summary.txt"), []byte(s), 0o644)
}

// pgFilter is the title and perf report filter of the PostgreSQL
// recording: the run's backends and PostgreSQL's own processes, listed
// now (the server still runs), or if they cannot be listed every process
// named postgres. Shares are of the processes shown.
func (r *recording) pgFilter(ctx context.Context) (string, []string) {
	backends, own, err := runPIDs(ctx, benchPostgres(), r.waits.app)
	if err != nil {
		return fmt.Sprintf("postgres (every process named postgres: the run's backends are not known: %v)", err),
			[]string{"--comms", "postgres", "--percentage", "relative"}
	}
	return fmt.Sprintf("postgres (the run's %d backends and PostgreSQL's %d own processes)", len(backends), len(own)),
		[]string{"--pid", strings.Join(append(backends, own...), ","), "--percentage", "relative"}
}

// printProfiles prints the runs' summaries (-perf), after the tables.
func printProfiles(w io.Writer, results []result) {
	first := true
	for _, r := range results {
		if r.stats.profile == "" {
			continue
		}
		if first {
			fmt.Fprintln(w)
			fmt.Fprintf(w, "Where the time goes (-perf: perf record -F %d -g; a profiled run's figures include perf's own cost, and on PostgreSQL "+
				"the wait sampler's %d queries a second: quote rates from a run without it)\n", perfFreq, time.Second/waitEvery)
			first = false
		}
		fmt.Fprintln(w)
		fmt.Fprint(w, r.stats.profile)
	}
}
