package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// packages are the main packages of the servers, by name.
var packages = map[string]string{
	"a2ad":       "./cmd/a2ad",
	"a2ad-tmpfs": "./cmd/a2ad",
	"a2ad-pg":    "./cmd/a2ad",
	"a2ad-pg2":   "./cmd/a2ad",
	"a2ad-pg4":   "./cmd/a2ad",
	// a2ad-pg calling bench::once (workingCatalog) instead of demo::echo.
	"a2ad-pg-working": "./cmd/a2ad",
	"a2ad-mcp":        "./cmd/a2ad",
	"mcp-sdk":         "./cmd/a2abench/mcpserver",
	"sdk":             "./cmd/a2abench/sdkserver",
	"sdk2":            "./cmd/a2abench/sdk2server",
	"floor":           "./cmd/a2abench/floor",
	"js":              jsDir,
	// a2ad-mcp and mcp-sdk, called at revision 2026-07-28.
	"a2ad-mcp26": "./cmd/a2ad",
	"mcp-sdk26":  "./cmd/a2abench/mcpserver",
}

// jsDir holds the JS SDK server: node runs its server.mjs, with the
// packages its committed lockfile pins (npm ci), not go build.
const jsDir = "./cmd/a2abench/jsserver"

// isA2AD reports whether the server is a2ad, on either store.
func isA2AD(name string) bool { return packages[name] == packages["a2ad"] }

// moduleRoot is the directory of the a2ad module, from the go command.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("run a2abench inside the a2ad module (go env GOMOD is empty)")
	}
	root := filepath.Dir(gomod)
	if _, err := os.Stat(filepath.Join(root, "cmd", "a2ad")); err != nil {
		return "", fmt.Errorf("%s is not the a2ad module: %w", root, err)
	}
	return root, nil
}

// build builds the servers' binaries into dir, as a release would:
// -trimpath, -ldflags "-s -w". Servers of one package share its binary.
// For perf (-perf) the symbol table stays (-ldflags -w), so that its
// reports name functions: it is not loaded at run time.
func build(ctx context.Context, root, dir string, servers []string, perf bool) (map[string]string, error) {
	ldflags := "-ldflags=-s -w"
	if perf {
		ldflags = "-ldflags=-w"
	}
	bins := make(map[string]string, len(servers))
	byPackage := map[string]string{}
	for _, s := range servers {
		if s == "js" {
			script, err := prepareJS(ctx, root)
			if err != nil {
				return nil, err
			}
			bins[s] = script
			continue
		}
		if bin, ok := byPackage[packages[s]]; ok {
			bins[s] = bin
			continue
		}
		bin := filepath.Join(dir, s)
		byPackage[packages[s]] = bin
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", ldflags, "-o", bin, packages[s])
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build %s: %w\n%s", s, err, out)
		}
		bins[s] = bin
	}
	return bins, nil
}

// server is a started server process.
type server struct {
	name    string
	cmd     *exec.Cmd
	baseURL string
	// adminAddr is a2ad's admin listener (its /metrics); empty for the
	// others.
	adminAddr string
	done      chan struct{} // closed when the process has exited
	waitErr   error
	log       *tailBuffer
	// perfMap is the JIT's symbol map node writes for perf
	// (--perf-basic-prof, with -perf), removed once it has stopped.
	perfMap string
}

// startTimeout bounds the wait for a server to listen.
const startTimeout = 30 * time.Second

// start runs a server and waits until it reports its address. store is
// a2ad's --store (a file, or a PostgreSQL URL); the others have none.
// With perf, node (js) writes its JIT's symbols where perf reads them.
func start(ctx context.Context, name, root, dir, bin, store, logLevel string, perf bool) (*server, error) {
	a2ad := isA2AD(name)
	cmd, fixedAddr, adminAddr, err := serverCmd(name, root, bin, store, logLevel)
	if err != nil {
		return nil, err
	}
	jsMap := perf && name == "js"
	if jsMap {
		cmd.Args = slices.Insert(cmd.Args, 1, "--perf-basic-prof")
	}
	cmd.Dir = dir
	setProcAttr(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	s := &server{name: name, cmd: cmd, done: make(chan struct{}), log: &tailBuffer{max: 4096}, adminAddr: adminAddr}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	if jsMap {
		// V8's path, fixed: not os.TempDir.
		s.perfMap = fmt.Sprintf("/tmp/perf-%d.map", cmd.Process.Pid)
	}
	addr := make(chan string, 2)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); s.scan(stdout, addr, !a2ad) }()
	go func() { defer readers.Done(); s.scan(stderr, addr, a2ad) }()
	go func() {
		readers.Wait() // all output read before Wait closes the pipes
		s.waitErr = cmd.Wait()
		close(s.done)
	}()

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	if fixedAddr != "" {
		if err := s.waitHealthy(ctx, "http://"+fixedAddr, timer.C); err != nil {
			return nil, errors.Join(err, s.stop())
		}
		s.baseURL = "http://" + fixedAddr
		return s, nil
	}
	select {
	case base := <-addr:
		u, err := url.Parse(base)
		if err != nil || u.Scheme != "http" || !isLoopback(u.Host) {
			return nil, errors.Join(fmt.Errorf("%s: address %q is not http on loopback", name, base), s.stop())
		}
		s.baseURL = strings.TrimSuffix(base, "/")
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("%s exited before listening: %v%s", name, s.waitErr, s.tail())
	case <-timer.C:
		return nil, errors.Join(fmt.Errorf("%s did not report its address within %v%s", name, startTimeout, s.tail()), s.stop())
	case <-ctx.Done():
		return nil, errors.Join(ctx.Err(), s.stop())
	}
}

// serverCmd is the command that runs the server name. fixedAddr is the
// address a2ad listens on when its log level hides the line that reports
// it (a free port picked here); empty otherwise. adminAddr is a2ad's
// admin listener, on a free port picked here, for its /metrics.
func serverCmd(name, root, bin, store, logLevel string) (cmd *exec.Cmd, fixedAddr, adminAddr string, err error) {
	if !isA2AD(name) {
		if name == "js" {
			return exec.Command("node", bin, "-listen", "127.0.0.1:0"), "", "", nil
		}
		return exec.Command(bin, "-listen", "127.0.0.1:0"), "", "", nil
	}
	if adminAddr, err = freePort(); err != nil {
		return nil, "", "", err
	}
	args := []string{"serve",
		"--catalog", catalogOf(name, root),
		"--store", store,
		"--listen", "127.0.0.1:0",
		"--log-level", logLevel,
		// The load comes from one address, as one anonymous caller:
		// measure the server, not its per-caller limits.
		"--rate", "0", "--max-inflight-per-caller", "0", "--admin-listen", adminAddr,
		"--max-calls-per-caller", "0", "--rate-bytes", "0",
		// A run stores more tasks than the per-caller storage quota
		// allows (100,000 by default): measure sends, not refusals.
		"--quota-tasks", "0", "--quota-bytes", "0",
	}
	if logLevel != "info" && logLevel != "debug" {
		// The address is in an info line; without it, pick a free port
		// first.
		if fixedAddr, err = freePort(); err != nil {
			return nil, "", "", err
		}
		args[6] = fixedAddr
	}
	return exec.Command(bin, args...), fixedAddr, adminAddr, nil
}

// scan reads a server's output. With wantAddr it reports the first base
// URL: a2ad's "a2ad serving" log line (field base_url), or the first line
// the other servers print. Everything else is kept in a short tail for
// error messages and otherwise discarded.
func (s *server) scan(r io.Reader, addr chan<- string, wantAddr bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if wantAddr {
			if base, ok := baseURLFrom(s.name, line); ok {
				addr <- base
				wantAddr = false
				continue
			}
		}
		s.log.Write(append(line, '\n'))
	}
	_, _ = io.Copy(io.Discard, r)
}

func baseURLFrom(name string, line []byte) (string, bool) {
	if !isA2AD(name) {
		l := strings.TrimSpace(string(line))
		return l, strings.HasPrefix(l, "http://")
	}
	if !bytes.Contains(line, []byte(`"a2ad serving"`)) {
		return "", false
	}
	var rec struct {
		Message string `json:"message"`
		BaseURL string `json:"base_url"`
	}
	if json.Unmarshal(line, &rec) != nil || rec.Message != "a2ad serving" || rec.BaseURL == "" {
		return "", false
	}
	return rec.BaseURL, true
}

func (s *server) waitHealthy(ctx context.Context, base string, timeout <-chan time.Time) error {
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-tick.C:
		case <-s.done:
			return fmt.Errorf("%s exited before listening: %v%s", s.name, s.waitErr, s.tail())
		case <-timeout:
			return fmt.Errorf("%s not healthy within %v%s", s.name, startTimeout, s.tail())
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stop ends the server: SIGTERM, then SIGKILL if it is still running
// after 10 seconds. It returns once the process has exited.
func (s *server) stop() error {
	if s.perfMap != "" {
		defer os.Remove(s.perfMap)
	}
	select {
	case <-s.done:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-s.done:
		return nil
	case <-t.C:
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	return fmt.Errorf("%s did not stop on SIGTERM within 10s: killed", s.name)
}

func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// tail is the end of the server's output, for error messages.
func (s *server) tail() string {
	t := strings.TrimSpace(s.log.String())
	if t == "" {
		return ""
	}
	return "\n" + s.name + " output (end):\n" + t
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// isLoopback reports whether host (host or host:port) is a loopback IP.
func isLoopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// replicas is how many a2ad replicas a Postgres server name runs on one
// schema.
var replicas = map[string]int{"a2ad-pg": 1, "a2ad-pg2": 2, "a2ad-pg4": 4, "a2ad-pg-working": 1}

// group is the processes of one server name: one, or a2ad's replicas on
// a schema of their own. Once they have stopped, stop drops that schema,
// or removes a2ad-tmpfs's store directory.
type group struct {
	procs []*server
	drop  func() error
	pg    *pgProbe // the a2ad-pg servers' database
	app   string   // their application_name in pg_stat_activity
}

// startGroup starts the server name: a2ad on a fresh file in dir,
// a2ad-tmpfs on one in a directory of its own under tmpfsRoot (removed
// once it has stopped), a2ad-pg and a2ad-pg2 on a fresh schema of
// benchPostgres() (their second replica once the first has made the
// tables), the others as they are. perf is -perf (see start).
func startGroup(ctx context.Context, name, root, dir, bin, logLevel string, pgTrips, perf bool) (*group, error) {
	g := &group{}
	store := filepath.Join(dir, name+".db")
	n := 1
	if name == "a2ad-tmpfs" {
		var err error
		if store, g.drop, err = tmpfsStore(name); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if r, ok := replicas[name]; ok {
		dsn := benchPostgres()
		schema, drop, err := newSchema(ctx, dsn, "a2abench")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		g.drop, g.app = drop, schema
		if store, err = withSearchPath(dsn, schema); err != nil {
			return nil, errors.Join(err, g.stop())
		}
		if g.pg, store, err = newPGProbe(store, pgTrips); err != nil {
			return nil, errors.Join(err, g.stop())
		}
		n = r
	}
	for range n {
		s, err := start(ctx, name, root, dir, bin, store, logLevel, perf)
		if err != nil {
			return nil, errors.Join(err, g.stop())
		}
		g.procs = append(g.procs, s)
	}
	return g, nil
}

// urls are the JSON-RPC endpoints of the group's processes.
func (g *group) urls() []string {
	u := make([]string, len(g.procs))
	for i, s := range g.procs {
		u[i] = s.baseURL + protocolOf(s.name).path
	}
	return u
}

// stop stops every process, then drops the schema or removes the tmpfs
// store.
func (g *group) stop() error {
	var errs []error
	for _, s := range g.procs {
		errs = append(errs, s.stop())
	}
	g.pg.close()
	if g.drop != nil {
		errs = append(errs, g.drop())
	}
	return errors.Join(errs...)
}

func (g *group) exited() bool {
	for _, s := range g.procs {
		if s.exited() {
			return true
		}
	}
	return false
}

func (g *group) tail() string {
	var t string
	for _, s := range g.procs {
		t += s.tail()
	}
	return t
}

// prepareJS installs the JS SDK server's packages from its lockfile (npm
// ci, as interop/js does), unless node_modules is newer than package.json
// and the lockfile, and returns the path of its script.
func prepareJS(ctx context.Context, root string) (string, error) {
	dir := filepath.Join(root, jsDir)
	if _, err := exec.LookPath("node"); err != nil {
		return "", errors.New("js: the JS SDK server needs node (>= 20) and npm")
	}
	if stale(filepath.Join(dir, "node_modules", ".package-lock.json"),
		filepath.Join(dir, "package.json"), filepath.Join(dir, "package-lock.json")) {
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("js: npm ci in %s: %w\n%s", dir, err, out)
		}
	}
	return filepath.Join(dir, "server.mjs"), nil
}

// stale reports whether target is missing or older than one of sources.
func stale(target string, sources ...string) bool {
	t, err := os.Stat(target)
	if err != nil {
		return true
	}
	for _, src := range sources {
		if s, err := os.Stat(src); err != nil || s.ModTime().After(t.ModTime()) {
			return true
		}
	}
	return false
}

// catalogOf is the catalogue a2ad serves as the server name: the
// example's, or for a2ad-pg-working the bench's own, whose bench::once
// is an echo that is not retry-safe.
func catalogOf(name, root string) string {
	if name == "a2ad-pg-working" {
		return filepath.Join(root, "cmd", "a2abench", "working.yaml")
	}
	return filepath.Join(root, "examples", "catalog.yaml")
}
