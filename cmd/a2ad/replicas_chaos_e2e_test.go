package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgtest"
)

// chaosFleet is three replicas, one of which the test kills and restarts;
// cut, behind a proxy, is never killed.
type chaosFleet struct {
	mu       sync.Mutex
	replicas []*process
	cut      *process
	outage   atomic.Bool // a refused send is expected
	// excused: while cut was cut off, and just before each kill (see
	// checkBut).
	excused []span
}

// ready waits until every replica is ready.
func (f *chaosFleet) ready(t *testing.T) {
	f.mu.Lock()
	rs := slices.Clone(f.replicas)
	f.mu.Unlock()
	for _, r := range rs {
		waitReady(t, r, 30*time.Second)
	}
}

func (f *chaosFleet) pick() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.replicas[rand.IntN(len(f.replicas))].base
}

// chaosTask is a task a replica acknowledged.
type chaosTask struct {
	id, key string
	again   bool // of the retry-safe function
}

// TestReplicasChaos (A2AD_CHAOS=1) runs 8 clients over three replicas on
// a PostgreSQL server of its own for about 50 s while one replica is
// SIGKILLed and restarted, twice, then PostgreSQL stops for 2.5 times the
// ttl, then one replica's connections are cut as long, with calls sent to
// every replica right after each. By the end every acknowledged task
// exists and is terminal, the function that is not retry-safe ran at most
// once per task, the retry-safe one ran again only for calls a death or
// an outage interrupted (counted and logged), no two attempts of a call
// overlapped, no task failed "replica lost" while its call completed, and
// the calls sent right after an outage each ran once.
func TestReplicasChaos(t *testing.T) {
	if os.Getenv("A2AD_CHAOS") != "1" {
		t.Skip("set A2AD_CHAOS=1 to run the 50 s chaos run")
	}
	pg := pgtest.StartPrivate(t)
	dsn := pg.DSN()
	backend, url := newTimedBackend(t)
	catalog := leaseCatalog(t, url, url)
	// The clients all come from 127.0.0.1: one anonymous caller, whom the
	// default rate limit would hold back.
	flags := []string{"--lease-ttl", "1s", "--rate", "0"}
	proxy := pgtest.NewProxy(t, dsn)
	fleet := &chaosFleet{replicas: startReplicas(t, catalog, dsn, 2, flags...)}
	fleet.cut = startBinary(t, catalog, proxy.DSN(dsn), flags...)
	fleet.replicas = append(fleet.replicas, fleet.cut)

	stop := make(chan struct{})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		acked    []chaosTask
		refusals []string
		lost     int // sends whose replica died before it answered
		refused  int // sends refused during an outage
		after    []leaseCall
		deads    []*process
	)
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("c%d-%d", c, i)
				again := rand.IntN(2) == 0
				fn := map[bool]string{true: "work::again", false: "work::once"}[again]
				outage := fleet.outage.Load()
				task, refusal, err := chaosSend(fleet.pick(), key, fn, rand.IntN(2) == 0)
				mu.Lock()
				switch {
				case err != nil:
					lost++
				case refusal != "" && (outage || fleet.outage.Load()):
					refused++
				case refusal != "":
					refusals = append(refusals, refusal)
				default:
					acked = append(acked, chaosTask{id: task, key: key, again: again})
				}
				mu.Unlock()
			}
		}()
	}
	for round := range 2 {
		time.Sleep(9 * time.Second)
		fleet.mu.Lock()
		victim := slices.IndexFunc(fleet.replicas, func(p *process) bool { return p != fleet.cut })
		dead := fleet.replicas[victim]
		fleet.replicas = slices.Delete(fleet.replicas, victim, victim+1)
		fleet.mu.Unlock()
		dead.kill(t)
		fleet.excused = append(fleet.excused, span{time.Now().Add(-500 * time.Millisecond), time.Now()})
		deads = append(deads, dead)
		t.Logf("%s round %d: SIGKILLed a replica", time.Now().Format("15:04:05.000"), round+1)
		time.Sleep(2 * time.Second)
		fresh := startBinary(t, catalog, dsn, flags...)
		fleet.mu.Lock()
		fleet.replicas = append(fleet.replicas, fresh)
		fleet.mu.Unlock()
	}
	time.Sleep(4 * time.Second)
	after = append(after, chaosOutage(t, fleet, "db", pg.Stop, pg.Start)...)
	time.Sleep(4 * time.Second)
	var cutAt time.Time
	cut := func() { cutAt = time.Now(); proxy.Cut() }
	restore := func() { proxy.Restore(); fleet.excused = append(fleet.excused, span{cutAt, time.Now()}) }
	after = append(after, chaosOutage(t, fleet, "cut", cut, restore)...)
	time.Sleep(5 * time.Second)
	close(stop)
	wg.Wait()
	if len(refusals) > 0 {
		t.Errorf("%d sends refused, first: %s", len(refusals), refusals[0])
	}
	checkChaos(t, fleet, backend, acked)
	if t.Failed() && testing.Verbose() {
		for _, r := range append(fleet.replicas, deads...) {
			r.mu.Lock()
			for _, l := range strings.Split(r.logs.String(), "\n") {
				if strings.Contains(l, `"level":"warn"`) || strings.Contains(l, `"level":"error"`) {
					t.Log(r.base, l)
				}
			}
			r.mu.Unlock()
		}
	}
	checkLeaseCalls(t, fleet.pick(), backend, after, true)
	t.Logf("%d tasks acknowledged, %d sends lost with their replica, %d refused during an outage", len(acked), lost, refused)
}

// chaosOutage takes the database away from the fleet (or from one
// replica) for 2.5 s, 2.5 times the ttl, with stop and start, waits until
// every replica is ready again and sends each of them a call of each
// function at once, which it returns.
func chaosOutage(t *testing.T, fleet *chaosFleet, name string, stop, start func()) []leaseCall {
	fleet.outage.Store(true)
	stop()
	t.Logf("%s %s: outage begins", time.Now().Format("15:04:05.000"), name)
	time.Sleep(2500 * time.Millisecond)
	start()
	fleet.ready(t)
	fleet.mu.Lock()
	rs := slices.Clone(fleet.replicas)
	fleet.mu.Unlock()
	var calls []leaseCall
	for i, r := range rs {
		calls = append(calls,
			sendLease(t, r.base, fmt.Sprintf("%s-again-%d", name, i), "work::again", 1500),
			sendLease(t, r.base, fmt.Sprintf("%s-once-%d", name, i), "work::once", 1500))
	}
	time.Sleep(500 * time.Millisecond) // sends under way when the replicas came back
	fleet.outage.Store(false)
	t.Logf("%s %s: outage over, %d calls sent", time.Now().Format("15:04:05.000"), name, len(calls))
	return calls
}

// chaosSend sends one message to base; it returns the task's id, or the
// JSON-RPC error, or the transport error of a replica that died.
func chaosSend(base, key, fn string, blocking bool) (id, refusal string, err error) {
	hc := &http.Client{Timeout: 20 * time.Second}
	input := map[string]any{"key": key, "ms": 50 + rand.IntN(350)}
	resp, err := hc.Post(base+"/a2a", "application/json",
		bytes.NewReader(rpcBody("message/send", sendParams(key, fn, input, blocking))))
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", "", err
	}
	var answer struct {
		Result *struct{ ID string } `json:"result"`
		Error  json.RawMessage      `json:"error"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || answer.Result == nil || answer.Result.ID == "" {
		return "", fmt.Sprintf("HTTP %d %s", resp.StatusCode, body), nil
	}
	return answer.Result.ID, "", nil
}

// checkChaos waits for every acknowledged task to end, then checks how it
// ended and how often its function ran.
func checkChaos(t *testing.T, fleet *chaosFleet, backend *timedBackend, acked []chaosTask) {
	t.Helper()
	base := fleet.pick()
	deadline := time.Now().Add(30 * time.Second)
	reruns := 0
	ended := map[string]int{}
	for _, task := range acked {
		var got map[string]any
		for {
			got = resultTask(t, rpc(t, base, "tasks/get", map[string]any{"id": task.id}))
			if st := state(got); st == "completed" || st == "failed" || st == "canceled" || st == "rejected" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s (%s) is still %s", task.id, task.key, state(got))
			}
			time.Sleep(50 * time.Millisecond)
		}
		st, calls := state(got), backend.count(task.key)
		ended[st]++
		for _, bad := range backend.checkBut(task.key, st, statusMessage(got), fleet.excused) {
			t.Error(bad)
		}
		switch {
		case task.again && (st != "completed" || calls < 1 || calls > 3):
			t.Errorf("retry-safe task %s: %s after %d calls, want completed after 1 to 3", task.key, st, calls)
		case task.again && calls > 1:
			reruns += calls - 1
		case !task.again && calls > 1:
			t.Errorf("task %s that is not retry-safe: its function ran %d times", task.key, calls)
		case !task.again && st == "completed" && calls != 1:
			t.Errorf("task %s completed after %d calls", task.key, calls)
		case !task.again && st == "failed" && statusMessage(got) != "interrupted: replica lost":
			t.Errorf("task %s failed with %q", task.key, statusMessage(got))
		case !task.again && st != "completed" && st != "failed":
			t.Errorf("task %s ended %s", task.key, st)
		}
	}
	t.Logf("chaos: tasks ended %v; %d retry-safe re-runs after a lease expiry", ended, reruns)
}
