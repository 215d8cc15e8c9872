//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/crashpoint"
)

// walCrashCatalog has a call that ends at once and one that sleeps, so
// that tasks are mid-flight and updated when the crash comes. Neither is
// retry-safe: a restart fails what was interrupted and runs nothing again,
// so the count of new tasks tells whether a resent message ran anything.
const walCrashCatalog = `functions:
  - id: demo::echo
    metadata: {"a2a.expose": true}
    builtin: echo
  - id: work::slow
    metadata: {"a2a.expose": true}
    builtin: sleep
`

const (
	// walSegmentEnv makes log segments small, so that the log rotates every
	// few dozen tasks and checkpoints have old segments to remove.
	walSegmentEnv = "A2AD_TEST_WAL_SEGMENT_BYTES"
	walSegment    = "65536"
	// walCrashBound is how long the load may run before a step counts as
	// never reached: a checkpoint comes about every 500 ms under load.
	walCrashBound = 6 * time.Second
	walStartBound = 30 * time.Second
)

// walCrashCases are the steps of the write-ahead log, the checkpoint and
// recovery (see tasks/boltstore); the busy ones are also hit a later time.
var walCrashCases = []struct {
	at     string   // A2AD_TEST_CRASH_AT while the server takes load
	atOpen []string // or steps a2ad must die at, one start each, opening on a log a SIGKILL left
}{
	// :1 meets the first write a2ad makes as it starts; :300 one under load.
	{at: "wal.write:1"}, {at: "wal.write:300"},
	{at: "wal.sync:1"}, {at: "wal.sync:300"},
	{at: "wal.ack:1"}, {at: "wal.ack:300"},
	{at: "wal.rotate:1"}, {at: "wal.rotate:20"},
	{at: "checkpoint.start:1"}, {at: "checkpoint.start:2"},
	{at: "checkpoint.apply:1"}, {at: "checkpoint.apply:2"},
	{at: "checkpoint.commit:1"}, {at: "checkpoint.commit:2"},
	{at: "checkpoint.trim:1"}, {at: "checkpoint.trim:2"},
	{atOpen: []string{"recover.apply"}},
	{atOpen: []string{"recover.commit"}},
	{atOpen: []string{"recover.apply", "recover.commit"}},
}

// TestWALCrashAtEveryStep is issue 19's crash test: the real binary dies
// by SIGKILL at every step of the task store's log, checkpoint and
// recovery, under load from 8 clients; restarted on the same store it has
// every task it acknowledged, in at least the state it acknowledged,
// resending an acknowledged message runs nothing again, the store file
// checks clean, and the server takes new calls.
func TestWALCrashAtEveryStep(t *testing.T) {
	skipShort(t, "builds and kills the real binary")
	binary(t) // once, before the subtests start it
	for _, tc := range walCrashCases {
		name := tc.at
		if name == "" {
			name = strings.Join(tc.atOpen, "+")
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			catalog, store := crashSetup(t, walCrashCatalog)
			var acks []walAck
			if tc.at != "" {
				// Tasks already checkpointed must survive the crash too.
				acks = runSeed(t, catalog, store, false)
				more, err := crashUnderLoad(t, startWAL(t, catalog, store, tc.at), tc.at)
				if err != nil {
					t.Fatal(err)
				}
				acks = append(acks, more...)
			} else {
				acks = runSeed(t, catalog, store, true) // the log holds records
				for _, step := range tc.atOpen {
					if err := crashAtOpen(t, catalog, store, step); err != nil {
						t.Fatal(err)
					}
				}
			}
			checkStoreFile(t, store, 0, "after the crash at "+name)
			verifyRecovered(t, catalog, store, acks)
		})
	}
}

// runSeed serves the store until 40 tasks are acknowledged, then stops
// a2ad with SIGTERM, or with SIGKILL mid-load if kill.
func runSeed(t *testing.T, catalog, store string, kill bool) []walAck {
	t.Helper()
	srv := startWAL(t, catalog, store, "")
	if !srv.serving(t) {
		t.Fatalf("a2ad did not start: %v\n%s", srv.cmd.ProcessState, srv.tail())
	}
	l := startLoad(srv, "seed")
	deadline := time.Now().Add(walStartBound)
	for l.count() < 40 {
		if time.Now().After(deadline) {
			t.Fatalf("a2ad acknowledged %d tasks in %v", l.count(), walStartBound)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if kill {
		srv.kill()
		return l.halt()
	}
	acks := l.halt()
	if err := srv.terminate(walStartBound); err != nil {
		t.Fatalf("a2ad's exit on SIGTERM: %v\n%s", err, srv.tail())
	}
	return acks
}

// crashUnderLoad loads srv, started with A2AD_TEST_CRASH_AT=at, until it
// dies, and returns the tasks it acknowledged. The error says if the step
// was never reached or a2ad died otherwise than by SIGKILL.
func crashUnderLoad(tb testing.TB, srv *walServer, at string) ([]walAck, error) {
	tb.Helper()
	if !srv.serving(tb) {
		if err := srv.diedAt(at); err != nil {
			return nil, err
		}
		tb.Logf("a2ad died at %s while it opened the store", at)
		return nil, nil
	}
	l := startLoad(srv, "load")
	select {
	case <-srv.exited:
	case <-time.After(walCrashBound):
		srv.kill()
		return l.halt(), fmt.Errorf("step %s never reached: a2ad still served after %v of load (%d tasks acknowledged)",
			at, walCrashBound, l.count())
	}
	acks := l.halt()
	if err := srv.diedAt(at); err != nil {
		return nil, err
	}
	tb.Logf("a2ad died at %s; %d tasks acknowledged, %d calls refused", at, len(acks), l.refused)
	return acks, nil
}

// crashAtOpen starts a2ad with A2AD_TEST_CRASH_AT=step, which it must die
// at while it opens the store, before it serves.
func crashAtOpen(tb testing.TB, catalog, store, step string) error {
	tb.Helper()
	srv := startWAL(tb, catalog, store, step)
	select {
	case <-srv.exited:
		select {
		case <-srv.ready:
		default:
			return srv.diedAt(step)
		}
	case <-srv.ready:
	case <-time.After(walStartBound):
		srv.kill()
		return fmt.Errorf("step %s never reached: a2ad neither served nor died in %v", step, walStartBound)
	}
	srv.kill()
	return fmt.Errorf("step %s never reached: a2ad opened the store and served (did the log hold records?)", step)
}

// verifyRecovered restarts a2ad on the store without a crash step and
// checks it against acks, the tasks acknowledged before the crash.
func verifyRecovered(t *testing.T, catalog, store string, acks []walAck) {
	t.Helper()
	srv := startWAL(t, catalog, store, "")
	if !srv.serving(t) {
		t.Fatalf("a2ad did not start on the store the crash left: %v\n%s", srv.cmd.ProcessState, srv.tail())
	}
	hc := walClient()
	defer hc.CloseIdleConnections()
	before := scrapeAdmin(t, srv.admin)
	if problems := checkAcks(hc, srv.base, acks); len(problems) > 0 {
		t.Errorf("%d of %d acknowledged tasks are wrong after the restart; the first:\n%s",
			len(problems), len(acks), strings.Join(problems[:min(len(problems), 10)], "\n"))
	}
	after := scrapeAdmin(t, srv.admin)
	for _, st := range []string{"submitted", "working"} {
		if d := after.value("a2ad_task_transitions_total", "state", st) - before.value("a2ad_task_transitions_total", "state", st); d != 0 {
			t.Errorf("resending %d acknowledged messages moved %v tasks to %s: something ran again", len(acks), d, st)
		}
	}
	if d := after.value("a2ad_idempotent_replays_total") - before.value("a2ad_idempotent_replays_total"); d != float64(len(acks)) {
		t.Errorf("resending %d acknowledged messages replayed %v", len(acks), d)
	}

	a, err := walCall(hc, srv.base, "message/send", sendParams("after-restart", "demo::echo", map[string]any{"message": "new"}, true))
	switch {
	case err != nil:
		t.Fatalf("a new call after the restart: %v\n%s", err, srv.tail())
	case a.Result == nil:
		t.Fatalf("a new call after the restart: %+v\n%s", a.Error, srv.tail())
	case a.Result.Status.State != "completed":
		t.Fatalf("a new call after the restart: %s\n%s", a.Result.Status.State, srv.tail())
	}
	// Every run enters working: the counter that must not move above does here.
	if d := scrapeAdmin(t, srv.admin).value("a2ad_task_transitions_total", "state", "working") - after.value("a2ad_task_transitions_total", "state", "working"); d != 1 {
		t.Errorf("a new call counted %v runs, want 1", d)
	}
	if err := srv.terminate(walStartBound); err != nil {
		t.Fatalf("a2ad's exit on SIGTERM after the restart: %v\n%s", err, srv.tail())
	}
	checkStoreFile(t, store, len(acks)+1, "after the restart")
}

// checkAcks reads each acknowledged task and sends its message again, and
// returns what is wrong: a task lost, behind its acknowledged state or
// with other artifacts, or a resent message that made another task.
func checkAcks(hc *http.Client, base string, acks []walAck) []string {
	var (
		mu       sync.Mutex
		problems []string
		wg       sync.WaitGroup
		next     = make(chan walAck)
	)
	for range 8 {
		wg.Go(func() {
			for ack := range next {
				got, err := walCall(hc, base, "tasks/get", map[string]any{"id": ack.id, "historyLength": 0})
				p := ack.problem("tasks/get", got, err)
				if p == "" {
					got, err = walCall(hc, base, "message/send", ack.params)
					p = ack.problem("resent", got, err)
				}
				if p != "" {
					mu.Lock()
					problems = append(problems, p)
					mu.Unlock()
				}
			}
		})
	}
	for _, ack := range acks {
		next <- ack
	}
	close(next)
	wg.Wait()
	return problems
}

var checkedTasks = regexp.MustCompile(`(?m)^checked .*: schema .*, (\d+) tasks$`)

// checkStoreFile runs a2ad store check on the stopped store, which must be
// clean and hold at least atLeast tasks.
func checkStoreFile(tb testing.TB, store string, atLeast int, when string) {
	tb.Helper()
	code, stdout, stderr := runBinary(tb, "store", "check", "--store", store)
	if code != 0 || !strings.Contains(stdout, "no problems found") {
		tb.Errorf("a2ad store check %s = %d:\n%s%s", when, code, stdout, stderr)
		return
	}
	m := checkedTasks.FindStringSubmatch(stdout)
	if m == nil {
		tb.Fatalf("a2ad store check %s: no task count in %q", when, stdout)
	}
	if n, _ := strconv.Atoi(m[1]); n < atLeast {
		tb.Errorf("a2ad store check %s: %d tasks, fewer than the %d acknowledged", when, n, atLeast)
	}
}

// walAck is a task a2ad acknowledged: the answer to its message/send was
// read in full.
type walAck struct {
	msgID     string
	params    map[string]any // of the message/send, to send it again
	id, state string
	artifacts string // canonical JSON
}

// problem says what is wrong with got, the answer to what (a tasks/get of
// the task or its message sent again), given the acknowledgement a; "" if
// nothing is.
func (a walAck) problem(what string, got walAnswer, err error) string {
	switch {
	case err != nil:
		return fmt.Sprintf("task %s (message %s, %s): %s: %v", a.id, a.msgID, a.state, what, err)
	case got.Result == nil:
		return fmt.Sprintf("task %s (message %s, %s): %s: %+v", a.id, a.msgID, a.state, what, got.Error)
	case got.Result.ID != a.id:
		return fmt.Sprintf("task %s (message %s, %s): %s: task %s", a.id, a.msgID, a.state, what, got.Result.ID)
	}
	st := got.Result.Status.State
	if stateRank(a.state) == 2 {
		if st != a.state {
			return fmt.Sprintf("task %s (message %s): %s: %s, acknowledged %s", a.id, a.msgID, what, st, a.state)
		}
		if arts := canonical(got.Result.Artifacts); arts != a.artifacts {
			return fmt.Sprintf("task %s (message %s): %s: artifacts %s, acknowledged %s", a.id, a.msgID, what, arts, a.artifacts)
		}
	} else if stateRank(st) < stateRank(a.state) {
		return fmt.Sprintf("task %s (message %s): %s: %s, acknowledged %s", a.id, a.msgID, what, st, a.state)
	}
	return ""
}

// stateRank orders task states: submitted, then running or waiting, then
// terminal; -1 for a state it does not know.
func stateRank(s string) int {
	switch s {
	case "submitted":
		return 0
	case "working", "input-required", "auth-required":
		return 1
	case "completed", "failed", "canceled", "rejected":
		return 2
	}
	return -1
}

func canonical(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// walAnswer is a JSON-RPC answer whose result, if any, is a task.
type walAnswer struct {
	Result *struct {
		ID     string `json:"id"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
		Artifacts json.RawMessage `json:"artifacts"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// walClient keeps a connection per client open, so that the load does
// not pile up sockets in TIME_WAIT.
func walClient() *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
}

// walCall posts one JSON-RPC request; it may run outside the test's
// goroutine. An error means no answer was read in full.
func walCall(hc *http.Client, base, method string, params any) (walAnswer, error) {
	var a walAnswer
	resp, err := hc.Post(base+"/a2a", "application/json", bytes.NewReader(rpcBody(method, params)))
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return a, fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
	}
	return a, nil
}

// walLoad is 8 clients sending messages to a server until it dies or
// halt: 6 send blocking echoes, one blocking short sleeps, and one starts
// longer sleeps without waiting for them.
type walLoad struct {
	srv     *walServer
	hc      *http.Client
	prefix  string
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	acks    []walAck
	refused int // answered with an error while a2ad served
}

func startLoad(srv *walServer, prefix string) *walLoad {
	l := &walLoad{srv: srv, hc: walClient(), prefix: prefix, stop: make(chan struct{})}
	for k := range 8 {
		l.wg.Go(func() { l.client(k) })
	}
	return l
}

func (l *walLoad) client(k int) {
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return
		case <-l.srv.exited:
			return
		default:
		}
		msgID := fmt.Sprintf("%s-%d-%d", l.prefix, k, i)
		var params map[string]any
		switch k {
		case 6:
			params = sendParams(msgID, "work::slow", map[string]any{"seconds": 0.1}, true)
		case 7:
			params = sendParams(msgID, "work::slow", map[string]any{"seconds": 2}, false)
		default:
			params = sendParams(msgID, "demo::echo", map[string]any{"message": msgID + strings.Repeat(".", 400)}, true)
		}
		a, err := walCall(l.hc, l.srv.base, "message/send", params)
		l.mu.Lock()
		switch {
		case err != nil:
		case a.Result == nil || a.Result.ID == "":
			l.refused++
		default:
			l.acks = append(l.acks, walAck{msgID: msgID, params: params, id: a.Result.ID,
				state: a.Result.Status.State, artifacts: canonical(a.Result.Artifacts)})
		}
		l.mu.Unlock()
		if err != nil || k == 7 {
			// A refused connection (a2ad dying) or the pace of long calls,
			// of which the server runs only so many for one caller.
			select {
			case <-l.stop:
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

func (l *walLoad) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

// halt stops the clients and returns the tasks acknowledged.
func (l *walLoad) halt() []walAck {
	close(l.stop)
	l.wg.Wait()
	l.hc.CloseIdleConnections()
	return l.acks
}

// walServer is the real binary with a crash step: one goroutine reads its
// log and then reaps it, so the test can tell how it ended.
type walServer struct {
	cmd         *exec.Cmd
	ready       chan struct{} // closed once it serves
	exited      chan struct{} // closed once reaped
	base, admin string        // set before ready is closed
	mu          sync.Mutex
	logs        []string // the last lines
}

// startWAL starts a2ad on store with A2AD_TEST_CRASH_AT=at ("" for none)
// and small log segments, without waiting for it to serve.
func startWAL(tb testing.TB, catalog, store, at string) *walServer {
	tb.Helper()
	cmd := exec.Command(binary(tb), "serve", "--catalog", catalog, "--store", store, "--listen", "127.0.0.1:0",
		"--admin-listen", "127.0.0.1:0", "--rate", "0", "--shutdown-grace", "300ms", "--audit-log", "off")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, crashpoint.Env+"=") && !strings.HasPrefix(kv, walSegmentEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, walSegmentEnv+"="+walSegment)
	if at != "" {
		cmd.Env = append(cmd.Env, crashpoint.Env+"="+at)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	s := &walServer{cmd: cmd, ready: make(chan struct{}), exited: make(chan struct{})}
	go s.read(stderr)
	tb.Cleanup(s.kill)
	return s
}

// read keeps the last lines of the log, notes when a2ad serves, and reaps
// it once the log ends.
func (s *walServer) read(stderr io.Reader) {
	defer close(s.exited)
	sc := bufio.NewScanner(stderr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		s.mu.Lock()
		line := sc.Text()
		s.logs = append(s.logs[max(0, len(s.logs)-19):], line[:min(len(line), 300)])
		s.mu.Unlock()
		var entry struct {
			Message string `json:"message"`
			BaseURL string `json:"base_url"`
			Admin   string `json:"admin_listen"`
		}
		if json.Unmarshal(sc.Bytes(), &entry) == nil && entry.Message == "a2ad serving" {
			s.base, s.admin = entry.BaseURL, "http://"+entry.Admin
			close(s.ready)
		}
	}
	_, _ = io.Copy(io.Discard, stderr)
	_ = s.cmd.Wait()
}

// serving waits until a2ad serves, and returns false if it ended first.
func (s *walServer) serving(tb testing.TB) bool {
	tb.Helper()
	select {
	case <-s.ready:
		return true
	case <-s.exited:
		select {
		case <-s.ready:
			return true
		default:
			return false
		}
	case <-time.After(walStartBound):
		s.kill()
		tb.Fatalf("a2ad neither served nor ended in %v:\n%s", walStartBound, s.tail())
		return false
	}
}

// diedAt returns nil if a2ad, which ended, died of SIGKILL, as at step at.
func (s *walServer) diedAt(at string) error {
	if ws, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		return nil
	}
	return fmt.Errorf("a2ad ended with %v, not the SIGKILL of step %s:\n%s", s.cmd.ProcessState, at, s.tail())
}

// kill sends SIGKILL, unless a2ad ended, and waits until it is reaped.
func (s *walServer) kill() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// terminate sends SIGTERM and returns the error of a2ad's exit; it kills
// a2ad if it still runs after within.
func (s *walServer) terminate(within time.Duration) error {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-s.exited:
	case <-time.After(within):
		s.kill()
		return fmt.Errorf("still running %v after SIGTERM", within)
	}
	if !s.cmd.ProcessState.Success() {
		return errors.New(s.cmd.ProcessState.String())
	}
	return nil
}

func (s *walServer) tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.logs, "\n")
}
