package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// waitEvery is how often the wait sampler reads pg_stat_activity.
const waitEvery = 50 * time.Millisecond

// waitsQuery counts the run's backends that are not idle by what they
// are doing: "CPU" (no wait event: running, or waiting on nothing
// PostgreSQL names), "idle in transaction" (a transaction held open across
// a round trip), or the wait event's type and name (IO:WALSync). $1 is
// the run's application_name (its schema's name: withSearchPath sets it).
const waitsQuery = `SELECT CASE WHEN state LIKE 'idle in transaction%' THEN 'idle in transaction'
	WHEN wait_event IS NULL THEN 'CPU'
	ELSE wait_event_type || ':' || wait_event END, count(*)
FROM pg_stat_activity
WHERE application_name = $1 AND pid <> pg_backend_pid() AND state <> 'idle'
GROUP BY 1`

// waitSampler samples the wait events of one run's PostgreSQL backends
// over the measured window, on a connection of its own.
type waitSampler struct {
	dsn, app string

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	counts  map[string]int
	samples int
	err     error
}

func newWaitSampler(dsn, app string) *waitSampler {
	return &waitSampler{dsn: dsn, app: app, counts: map[string]int{}}
}

// start begins sampling every waitEvery, until stop.
func (s *waitSampler) start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		s.sample(ctx)
	}()
}

// stop ends the sampling and waits for it; it may be called more than
// once, and before start.
func (s *waitSampler) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	<-s.done
}

func (s *waitSampler) sample(ctx context.Context) {
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		s.fail(err)
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tick := time.NewTicker(waitEvery)
	defer tick.Stop()
	for {
		rows, _ := conn.Query(ctx, waitsQuery, s.app)
		var what string
		var n int
		counts := map[string]int{}
		_, err := pgx.ForEachRow(rows, []any{&what, &n}, func() error { counts[what] += n; return nil })
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.fail(err)
			return
		}
		s.mu.Lock()
		for k, v := range counts {
			s.counts[k] += v
		}
		s.samples++
		s.mu.Unlock()
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

func (s *waitSampler) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// waitCount is one kind of wait and how many backends were seen in it.
type waitCount struct {
	what string
	n    int
}

// waitResult is what the sampler saw: the waits, most first.
type waitResult struct {
	samples int
	waits   []waitCount
	total   int // backends seen, over every sample
	err     error
}

func (s *waitSampler) result() waitResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := waitResult{samples: s.samples, err: s.err}
	for k, v := range s.counts {
		r.waits = append(r.waits, waitCount{k, v})
		r.total += v
	}
	slices.SortFunc(r.waits, func(a, b waitCount) int {
		return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.what, b.what))
	})
	return r
}

// format writes the top waits with their counts and shares.
func (r waitResult) format(w io.Writer, top int) {
	mean := 0.0
	if r.samples > 0 {
		mean = float64(r.total) / float64(r.samples)
	}
	fmt.Fprintf(w, "postgres waits of the run's backends (pg_stat_activity every %v): %d samples, %.1f backends not idle on average\n",
		waitEvery, r.samples, mean)
	if r.err != nil {
		fmt.Fprintf(w, "  sampling stopped early: %v\n", r.err)
	}
	for i, c := range r.waits {
		if i == top {
			fmt.Fprintf(w, "  (%d other waits)\n", len(r.waits)-top)
			break
		}
		fmt.Fprintf(w, "  %6.2f%%  %6d  %s\n", 100*float64(c.n)/float64(r.total), c.n, c.what)
	}
}

// text is every wait, for the run's .waits.txt.
func (r waitResult) text() string {
	var b strings.Builder
	r.format(&b, len(r.waits))
	return b.String()
}

// runPIDs lists, as they are now, the pids of the run's backends (its
// application_name, app) and of PostgreSQL's own processes (every
// backend_type but client backends: the WAL writer, the checkpointer, the
// background writer, autovacuum), for perf report --pid: what the run
// cost PostgreSQL, without other clients' backends.
func runPIDs(ctx context.Context, dsn, app string) (backends, own []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, _ := conn.Query(ctx, `SELECT pid::text, backend_type = 'client backend' FROM pg_stat_activity
		WHERE (application_name = $1 AND pid <> pg_backend_pid()) OR backend_type <> 'client backend'`, app)
	var pid string
	var client bool
	_, err = pgx.ForEachRow(rows, []any{&pid, &client}, func() error {
		if client {
			backends = append(backends, pid)
		} else {
			own = append(own, pid)
		}
		return nil
	})
	if err == nil && len(backends) == 0 {
		err = fmt.Errorf("no backend has application_name %s", app)
	}
	return backends, own, err
}
