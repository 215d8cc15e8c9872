package tasks

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

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

// speculate runs rec's call (a slot is held) and stores the task once it
// ends, or working when the window passes first. rec is submitted, with
// events; key has no task yet.
func (s *Service) speculate(ctx context.Context, in *incoming, ck callKey, key IdemKey, rec *Record, events []Event, fn *functions.Function, held func(), window time.Duration) (*Record, error) {
	id := rec.Task.ID
	log := s.log.With().Str("task_id", id).Str("function_id", fn.ID).Logger()
	sp := &speculation{ready: make(chan struct{})}
	input := rec.Input
	traced := s.traceRun(ctx)
	cancel := s.ex.spawn(id, fn.ID, ck, func(runCtx context.Context) {
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
			s.progress(runCtx, rec.Owner, key.Quota, id, p, log)
		}
		started := func(g functions.ProcessGroup) {
			sp.mu.Lock()
			if !sp.stored {
				sp.group = &g
				sp.mu.Unlock()
				return
			}
			sp.mu.Unlock()
			s.storeGroup(runCtx, rec.Owner, id, g, log)
		}
		res := s.call(runCtx, callOf(rec, key.messageID(), 1), fn, input, log, report, started)
		sp.mu.Lock()
		if sp.stored {
			sp.mu.Unlock()
			if !res.stopped {
				s.finish(runCtx, rec.Owner, id, res, log)
			}
			return
		}
		sp.res = &res
		sp.mu.Unlock()
		close(sp.ready)
	})

	working := s.status(a2a.StateWorking, nil)
	events = append(events, Event{Status: &working})
	timer := time.NewTimer(window)
	defer timer.Stop()
	select {
	case <-sp.ready:
		return s.storeEnded(ctx, key, rec, events, working, sp, log)
	case <-timer.C:
		in.watch(s.broker, id)
		return s.storeRunning(ctx, key, rec, events, working, sp, cancel, log)
	}
}

// runNow is speculate for a call of an immediate backend (see
// functions.Immediate), which returns at once: it runs on this goroutine,
// with no run, timer or deadline of its own (a call that took longer than
// the function's timeout still times out), then gives back its slots
// (held) and its place, and stores the task once, with its outcome.
func (s *Service) runNow(ctx context.Context, ck callKey, key IdemKey, rec *Record, events []Event, fn *functions.Function, held func()) (*Record, error) {
	log := s.log.With().Str("task_id", rec.Task.ID).Str("function_id", fn.ID).Logger()
	res := s.callNow(ctx, rec.Task.ID, fn, rec.Input, log)
	held()
	s.ex.unreserve(ck)
	working := s.status(a2a.StateWorking, nil)
	return s.storeEnded(ctx, key, rec, append(events, Event{Status: &working}), working, &speculation{res: &res}, log)
}

// storeEnded stores rec's task once its call ended within the window: in
// one commit, with what the call reported and its result (events end with
// the move to working).
func (s *Service) storeEnded(ctx context.Context, key IdemKey, rec *Record, events []Event, working a2a.TaskStatus, sp *speculation, log zerolog.Logger) (*Record, error) {
	res := sp.res
	if res.stopped { // shutting down before anything was stored
		return nil, ErrClosed
	}
	// rec is this send's own, and the call is done with it: it is
	// moved on in place, not copied.
	final := rec
	final.Task.Artifacts = nil
	if err := s.move(final, onStart, working); err != nil {
		return nil, err
	}
	// final is held whole: each artifact event is folded into it as it
	// comes, so that the artifact limit counts what came before.
	for _, p := range sp.pending {
		evs, err := s.applyProgress(final, p)
		if err != nil {
			break // a chunk past the artifact limit failed it
		}
		foldArtifacts(final, evs)
		events = append(events, evs...)
	}
	if evs, err := s.apply(final, res); err == nil { // else failed by a chunk
		foldArtifacts(final, evs)
		events = append(events, evs...)
	}
	got, created, err := s.store.Create(ctx, key, final, events)
	if err != nil || !created {
		return got, err
	}
	s.broker.Publish(rec.Task.ID, withRecord(events, got))
	log.Info().Str("state", string(got.State())).Dur("duration", time.Since(res.started)).Msg("call finished")
	return got, nil
}

// storeRunning stores rec's task working, its call being slow, with its
// process group if it has one already; then what the call reported
// meanwhile, after which the call stores its own progress and result.
// cancel stops the call if nothing could be stored.
func (s *Service) storeRunning(ctx context.Context, key IdemKey, rec *Record, events []Event, working a2a.TaskStatus, sp *speculation, cancel context.CancelCauseFunc, log zerolog.Logger) (*Record, error) {
	id := rec.Task.ID
	if err := s.move(rec, onStart, working); err != nil {
		cancel(errCanceledByClient) // nothing stored: the call's result has nowhere to go
		return nil, err
	}
	sp.mu.Lock()
	rec.Group = sp.group
	sp.mu.Unlock()
	got, created, err := s.store.Create(ctx, key, rec, events)
	if err != nil || !created {
		cancel(errCanceledByClient) // nothing stored: the call's result has nowhere to go
		return got, err
	}
	s.broker.Publish(id, events)
	// Store what the call reported meanwhile, in order, before it may
	// report more (it waits on sp.mu).
	sp.mu.Lock()
	if sp.group != rec.Group && sp.res == nil { // reported while the task was being stored, and still running
		s.storeGroup(ctx, rec.Owner, id, *sp.group, log)
	}
	for _, p := range sp.pending {
		s.progress(ctx, rec.Owner, key.Quota, id, p, log)
	}
	sp.pending = nil
	res := sp.res
	sp.stored = res == nil
	sp.mu.Unlock()
	if res != nil && !res.stopped { // it ended while the task was being stored
		s.finish(ctx, rec.Owner, id, *res, log)
	}
	return got, nil
}
