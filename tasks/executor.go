package tasks

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/functions"
)

// Reasons a run is cancelled, read with context.Cause.
var (
	errCanceledByClient = errors.New("canceled by the client")
	errShuttingDown     = errors.New("server shutting down")
)

// executor runs calls under the caps. It owns the places of calls
// (reserved, queued or running: in all, and per caller), the concurrency
// slots (global and per function), the cancel of each running call, and
// the lifetime of runs. It knows nothing of tasks or the store: what a
// run does is the function its owner hands to spawn.
//
// A place is held from reserve (or hold) until it is given back, by
// unreserve or by the end of the run spawned with it; Close waits for
// every place to be given back.
type executor struct {
	maxConcurrent int
	maxQueue      int

	ctx    context.Context // the lifetime of runs
	cancel context.CancelCauseFunc

	slots   chan struct{} // global concurrency cap
	fnSlots sync.Map      // *functions.Function → chan struct{}

	places sync.WaitGroup // one per place held; Add only under mu while open

	mu       sync.Mutex
	inflight int                // places held
	calls    map[callKey]int    // the same, per caller (no zero entries)
	runs     map[string]running // taskID → its run
	closed   bool
	idle     chan struct{} // once closed: closed when every place is given back
}

// running is a spawned run: its function and the cancel of its context.
type running struct {
	fn     string
	cancel context.CancelCauseFunc
}

func newExecutor(maxConcurrent, maxQueue int) *executor {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &executor{
		maxConcurrent: maxConcurrent,
		maxQueue:      maxQueue,
		ctx:           ctx,
		cancel:        cancel,
		slots:         make(chan struct{}, maxConcurrent),
		calls:         make(map[callKey]int),
		runs:          make(map[string]running),
	}
}

// reserve takes a place for one call of k among the running and queued
// ones: at most maxConcurrent run and maxQueue wait in all, and at most
// max (0: no cap) are k's. The caller's own cap is checked first: a
// caller at its cap hears so even when the server is full too. Errors:
// ErrClosed, ErrCallerBusy, ErrBusy.
func (ex *executor) reserve(k callKey, max int) error {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.closed {
		return ErrClosed
	}
	if max > 0 && ex.calls[k] >= max {
		return ErrCallerBusy
	}
	if ex.inflight >= ex.maxQueue+ex.maxConcurrent {
		return ErrBusy
	}
	ex.count(k)
	return nil
}

// hold takes a place for a call of k whatever the caps: a recovered run.
// It reports false, taking nothing, once the executor is closed.
func (ex *executor) hold(k callKey) bool {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.closed {
		return false
	}
	ex.count(k)
	return true
}

// count counts a place of k; ex.mu is held and ex is open.
func (ex *executor) count(k callKey) {
	ex.places.Add(1)
	ex.inflight++
	ex.calls[k]++
}

// unreserve gives back k's place when its call never starts.
func (ex *executor) unreserve(k callKey) {
	ex.leave(k)
	ex.places.Done()
}

// leave uncounts a place of k: the caps no longer see it, though Close
// still waits for it (places).
func (ex *executor) leave(k callKey) {
	ex.mu.Lock()
	ex.inflight--
	if n := ex.calls[k]; n > 1 {
		ex.calls[k] = n - 1
	} else {
		delete(ex.calls, k)
	}
	ex.mu.Unlock()
}

// spawn runs run in a goroutine as the call of task id to function fn,
// with a context that stop and Close cancel; a place was taken for it
// under k, and is given back when run returns, or before by run's leave
// (a no-op after the first call): a run calls it once its outcome is
// stored and before anyone is told of it, so that a caller at its cap
// that hears of the outcome may start its next call at once
// (TestCallerCapCountsResumedTasks once saw ErrCallerBusy there). It
// returns the cancel of run's context.
func (ex *executor) spawn(id, fn string, k callKey, run func(ctx context.Context, leave func())) context.CancelCauseFunc {
	ctx, cancel := context.WithCancelCause(ex.ctx)
	ex.mu.Lock()
	ex.runs[id] = running{fn: fn, cancel: cancel}
	ex.mu.Unlock()
	var once sync.Once
	leave := func() { once.Do(func() { ex.leave(k) }) }
	go func() {
		defer ex.places.Done() // last: Close may return once it is done
		defer leave()
		defer func() {
			ex.mu.Lock()
			delete(ex.runs, id)
			ex.mu.Unlock()
			cancel(nil)
		}()
		run(ctx, leave)
	}()
	return cancel
}

// stop cancels the running call of task id, if any, with cause.
func (ex *executor) stop(id string, cause error) {
	ex.mu.Lock()
	r, ok := ex.runs[id]
	ex.mu.Unlock()
	if ok {
		r.cancel(cause)
	}
}

// stopAll cancels every running call with cause.
func (ex *executor) stopAll(cause error) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	for _, r := range ex.runs {
		r.cancel(cause)
	}
}

// running counts the spawned runs (queued or running) per function.
func (ex *executor) running() map[string]int {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	out := make(map[string]int)
	for _, r := range ex.runs {
		out[r.fn]++
	}
	return out
}

// drain refuses new places (ErrClosed) while the calls that hold one go
// on. It returns a channel closed once every place is given back.
func (ex *executor) drain() <-chan struct{} {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if !ex.closed {
		ex.closed = true
		ex.idle = make(chan struct{})
		// No place is taken once closed: the wait ends when the last
		// one is given back, at the latest once Close cancels the runs.
		go func() { ex.places.Wait(); close(ex.idle) }()
	}
	return ex.idle
}

// Close refuses new places, waits until every place is given back or ctx
// is done, then cancels the runs left (errShuttingDown) and waits for
// them to end. It returns how many runs of each function it cut (none
// when they all ended within ctx, or on a second Close).
func (ex *executor) Close(ctx context.Context) map[string]int {
	done := ex.drain()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	cut := ex.running()
	ex.cancel(errShuttingDown)
	<-done
	if len(cut) == 0 {
		return nil // the places left were sends that had not started a run
	}
	return cut
}

func (ex *executor) fnSemaphore(fn *functions.Function) chan struct{} {
	if fn.MaxConcurrency <= 0 {
		return nil
	}
	if v, ok := ex.fnSlots.Load(fn); ok {
		return v.(chan struct{})
	}
	v, _ := ex.fnSlots.LoadOrStore(fn, make(chan struct{}, fn.MaxConcurrency))
	return v.(chan struct{})
}

// acquire takes a slot of fn and a global one. With wait it waits for
// them until ctx ends; without, it takes them only if both are free now.
func (ex *executor) acquire(ctx context.Context, fn *functions.Function, wait bool) (release func(), ok bool) {
	fsem := ex.fnSemaphore(fn)
	if fsem != nil && !take(ctx, fsem, wait) {
		return nil, false
	}
	if !take(ctx, ex.slots, wait) {
		if fsem != nil {
			<-fsem
		}
		return nil, false
	}
	return func() {
		<-ex.slots
		if fsem != nil {
			<-fsem
		}
	}, true
}

func take(ctx context.Context, sem chan struct{}, wait bool) bool {
	if !wait {
		select {
		case sem <- struct{}{}:
			return true
		default:
			return false
		}
	}
	select {
	case sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// drainLogEvery is how often Drain says what it waits for.
const drainLogEvery = time.Second

// logDrain logs the calls Drain waits for, per function, and the time
// left.
func (ex *executor) logDrain(ctx context.Context, log zerolog.Logger) {
	fns := ex.running()
	ids := make([]string, 0, len(fns))
	total := 0
	for id, n := range fns {
		ids = append(ids, id)
		total += n
	}
	if total == 0 {
		return // the last calls are ending: nothing to wait for worth a line
	}
	slices.Sort(ids)
	per := zerolog.Dict()
	for _, id := range ids {
		per = per.Int(id, fns[id])
	}
	ev := log.Info().Int("calls", total).Dict("functions", per)
	if d, ok := ctx.Deadline(); ok {
		ev = ev.Dur("grace_left", time.Until(d).Round(time.Millisecond))
	}
	ev.Msg("draining: waiting for running calls")
}
