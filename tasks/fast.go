package tasks

import (
	"context"
	"sync"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
)

// speculationWindow is how long a blocking send of a retry-safe function
// runs the call before its task is stored. A call that ends within it is
// stored once, with its outcome: one commit instead of two. A slower one
// is then stored working and finishes like any other.
//
// Only retry-safe functions qualify: a crash inside the window loses a
// call that no one was told about, and the caller's retry runs it again,
// which such a function allows.
const speculationWindow = 20 * time.Millisecond

// streamSpeculationWindow is the window of message/stream, kept short:
// its client waits for the first event, the task.
const streamSpeculationWindow = 5 * time.Millisecond

// flights lets one send per (caller, messageId) work at a time, so that
// concurrent duplicates never run a call twice: the others wait for it,
// then find its task. The zero value is ready.
type flights struct {
	mu sync.Mutex
	m  map[string]chan struct{} // owner+messageId → closed when its send is done
}

// do runs lead as the one send of key, once no other send of key runs.
func (f *flights) do(ctx context.Context, key IdemKey, lead func() (*Record, error)) (*Record, error) {
	k := key.Owner + "\x00" + key.MessageID
	for {
		f.mu.Lock()
		if done, busy := f.m[k]; busy {
			f.mu.Unlock()
			select {
			case <-done:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if f.m == nil {
			f.m = make(map[string]chan struct{})
		}
		done := make(chan struct{})
		f.m[k] = done
		f.mu.Unlock()
		rec, err := lead()
		f.mu.Lock()
		delete(f.m, k)
		f.mu.Unlock()
		close(done)
		return rec, err
	}
}

// speculation is a call started before its task was stored.
type speculation struct {
	mu      sync.Mutex
	res     *callResult             // set when the call ended before the task was stored
	pending []functions.Progress    // progress reported before the task was stored
	group   *functions.ProcessGroup // the call's process group, reported before the task was stored
	stored  bool                    // the task was stored working: the call stores its own progress and result
	ready   chan struct{}           // closed when res is set
}

// speculate runs the call (a slot is held) and stores its task once it
// ends, or working when the window passes first. r.rec is submitted, with
// r.events; r.key has no task yet.
func (r *run) speculate(ctx context.Context, in *incoming, ck callKey, held func(), window time.Duration) (*Record, error) {
	s, id := r.s, r.c.TaskID
	sp := &speculation{ready: make(chan struct{})}
	traced := traceRun(s.cfg.Tracer, ctx)
	cancel := s.ex.spawn(id, r.fn.ID, ck, func(runCtx context.Context, leave func()) {
		r.leave = leave
		runCtx = traced(runCtx)
		defer held()
		defer s.relay.follow(id, 0)() // once stored, a cancel may come from another process
		report := func(p functions.Progress) {
			sp.mu.Lock()
			if !sp.stored {
				sp.pending = append(sp.pending, p)
				sp.mu.Unlock()
				return
			}
			sp.mu.Unlock()
			r.progress(runCtx, p)
		}
		started := func(g functions.ProcessGroup) {
			sp.mu.Lock()
			if !sp.stored {
				sp.group = &g
				sp.mu.Unlock()
				return
			}
			sp.mu.Unlock()
			r.storeGroup(runCtx, g)
		}
		res := r.call(runCtx, report, started)
		sp.mu.Lock()
		if sp.stored {
			sp.mu.Unlock()
			if !res.stopped {
				r.finish(runCtx, res)
			}
			return
		}
		sp.res = &res
		sp.mu.Unlock()
		leave() // the send stores and publishes the outcome once told
		close(sp.ready)
	})

	working := s.sm.status(a2a.StateWorking, nil)
	r.events = append(r.events, Event{Status: &working})
	timer := time.NewTimer(window)
	defer timer.Stop()
	select {
	case <-sp.ready:
		return r.storeEnded(ctx, working, sp)
	case <-timer.C:
		in.watch(s.broker, id)
		return r.storeRunning(ctx, working, sp, cancel)
	}
}

// runNow is speculate for a call of an immediate backend (see
// functions.Immediate), which returns at once: it runs on this goroutine,
// with no run, timer or deadline of its own (a call that took longer than
// the function's timeout still times out), then gives back its slots
// (held) and its place, and stores the task once, with its outcome.
func (r *run) runNow(ctx context.Context, ck callKey, held func()) (*Record, error) {
	s := r.s
	res := r.callNow(ctx)
	held()
	s.ex.unreserve(ck)
	working := s.sm.status(a2a.StateWorking, nil)
	r.events = append(r.events, Event{Status: &working})
	return r.storeEnded(ctx, working, &speculation{res: &res})
}

// storeEnded stores the task once its call ended within the window: in
// one commit, with what the call reported and its result (r.events end
// with the move to working).
func (r *run) storeEnded(ctx context.Context, working a2a.TaskStatus, sp *speculation) (*Record, error) {
	s, events := r.s, r.events
	res := sp.res
	if res.stopped { // shutting down before anything was stored
		return nil, ErrClosed
	}
	// r.rec is this send's own, and the call is done with it: it is
	// moved on in place, not copied.
	final := r.rec
	final.Task.Artifacts = nil
	if err := s.sm.move(final, onStart, working); err != nil {
		return nil, err
	}
	// final is held whole: each artifact event is folded into it as it
	// comes, so that the artifact limit counts what came before.
	for _, p := range sp.pending {
		evs, err := r.applyProgress(final, p)
		if err != nil {
			break // a chunk past the artifact limit failed it
		}
		foldArtifacts(final, evs)
		events = append(events, evs...)
	}
	if evs, err := r.apply(final, res); err == nil { // else failed by a chunk
		foldArtifacts(final, evs)
		events = append(events, evs...)
	}
	got, created, err := s.store.Create(ctx, r.key, final, events)
	if err != nil || !created {
		return got, err
	}
	s.broker.Publish(r.c.TaskID, withRecord(events, got))
	r.log.Info().Str("state", string(got.State())).Dur("duration", time.Since(res.started)).Msg("call finished")
	return got, nil
}

// storeRunning stores the task working, its call being slow, with its
// process group if it has one already; then what the call reported
// meanwhile, after which the call stores its own progress and result.
// cancel stops the call if nothing could be stored.
func (r *run) storeRunning(ctx context.Context, working a2a.TaskStatus, sp *speculation, cancel context.CancelCauseFunc) (*Record, error) {
	s, rec, id := r.s, r.rec, r.c.TaskID
	if err := s.sm.move(rec, onStart, working); err != nil {
		cancel(errCanceledByClient) // nothing stored: the call's result has nowhere to go
		return nil, err
	}
	sp.mu.Lock()
	rec.Group = sp.group
	sp.mu.Unlock()
	got, created, err := s.store.Create(ctx, r.key, rec, r.events)
	if err != nil || !created {
		cancel(errCanceledByClient) // nothing stored: the call's result has nowhere to go
		return got, err
	}
	s.broker.Publish(id, r.events)
	// Store what the call reported meanwhile, in order, before it may
	// report more (it waits on sp.mu).
	sp.mu.Lock()
	if sp.group != rec.Group && sp.res == nil { // reported while the task was being stored, and still running
		r.storeGroup(ctx, *sp.group)
	}
	for _, p := range sp.pending {
		r.progress(ctx, p)
	}
	sp.pending = nil
	res := sp.res
	sp.stored = res == nil
	sp.mu.Unlock()
	if res != nil && !res.stopped { // it ended while the task was being stored
		r.finish(ctx, *res)
	}
	return got, nil
}
