package tasks

// What a call does to its task, step by step against the store: start,
// progress, process group, result. The executor runs these steps; the
// state machine decides whether each still applies.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
)

// run is one call of a function for a task, from its start to its
// stored result: what each of its steps needs (the call, the function,
// its input, the asking caller's quota, the logger) is held here once
// instead of passed from step to step. The steps go through the state
// machine, so a step the task moved past (a cancel, say) is dropped.
type run struct {
	s     *Service
	c     functions.Call // c.Caller owns the task c.TaskID
	fn    *functions.Function
	input json.RawMessage
	// q is the quota of the caller that asked for the call, which its
	// progress is checked against (see progress); zero for a call
	// recovery resumed.
	q   Quota
	log zerolog.Logger
	// leave gives back the call's place under its caller's cap once its
	// outcome is stored, before it is published (see executor.spawn).
	leave func()
	// Of a call that runs before its task is stored (speculate, runNow):
	// the send's key, the new task and its first events.
	key    IdemKey
	rec    *Record
	events []Event
}

// newRun is the run of call c of rec's task to fn, for a caller of quota
// q.
func newRun(s *Service, rec *Record, c functions.Call, fn *functions.Function, q Quota) *run {
	c.FunctionID = fn.ID
	return &run{s: s, c: c, fn: fn, input: rec.Input, q: q, rec: rec, leave: func() {},
		log: s.log.With().Str("task_id", c.TaskID).Str("function_id", fn.ID).Logger()}
}

// start runs the call in the background; a place was reserved for it
// under k. held, when not nil, releases the slots the call already holds:
// its task was stored working, so the run goes straight to the call. The
// run is traced under the span in ctx, the request's that started it.
func (r *run) start(ctx context.Context, k callKey, held func()) {
	s := r.s
	unfollow := s.relay.follow(r.c.TaskID, r.rec.Seq) // a cancel may come from another process
	traced := traceRun(s.cfg.Tracer, ctx)
	s.ex.spawn(r.c.TaskID, r.fn.ID, k, func(ctx context.Context, leave func()) {
		r.leave = leave
		defer unfollow()
		r.live(traced(ctx), held)
	})
}

// callOf is the call of rec's task that the message msgID asked for, in
// its attempt (1, 2, …). Its idempotency key derives from the task and
// the message, both stored, so that a re-run after a crash sends the
// same key without storing one.
func callOf(rec *Record, msgID string, attempt int) functions.Call {
	h := sha256.Sum256([]byte(rec.Task.ID + "\x00" + msgID))
	return functions.Call{
		IdempotencyKey: hex.EncodeToString(h[:16]),
		TaskID:         rec.Task.ID,
		ContextID:      rec.Task.ContextID,
		Caller:         rec.Owner,
		Attempt:        attempt,
	}
}

// recoveredCall is the call of rec, a task recovery submitted again,
// from its history: the message that asked for the call is the last
// user message, and each run of the call that recovery cut short left an
// agent message after it ("Resubmitted: …"; nothing else does while a
// call is pending: a new call starts with a status without a message,
// and a question or a failure ends the call).
func recoveredCall(rec *Record) functions.Call {
	resubmitted, msgID := 0, ""
	for i := len(rec.Task.History) - 1; i >= 0; i-- {
		m := &rec.Task.History[i]
		if m.Role == a2a.RoleUser {
			msgID = m.MessageID
			break
		}
		resubmitted++
	}
	return callOf(rec, msgID, 1+resubmitted)
}

// withRecord attaches rec, the task after the events, to the last event,
// so that waiters need not read it back from the store.
func withRecord(evs []Event, rec *Record) []Event {
	if len(evs) > 0 {
		evs[len(evs)-1].rec = rec
	}
	return evs
}

// live is the life of the call, spawned by the executor: it waits for
// its slots (unless held), moves the task to working, calls the function
// and stores the result.
func (r *run) live(ctx context.Context, held func()) {
	s, fn := r.s, r.fn
	if held != nil {
		defer held()
	} else {
		s.met.CallQueued(fn.ID, 1)
		release, ok := s.ex.acquireTraced(ctx, s.cfg.Tracer, fn, true)
		s.met.CallQueued(fn.ID, -1)
		if !ok {
			return // canceled while queued, or shutting down: the task is as it should be
		}
		defer release()
		events, err := r.storeWorking(ctx)
		if err != nil {
			if !errors.Is(err, errSkip) {
				r.log.Error().Err(err).Msg("store working state")
			}
			return
		}
		s.broker.Publish(r.c.TaskID, events)
	}
	report := func(p functions.Progress) { r.progress(ctx, p) }
	started := func(g functions.ProcessGroup) { r.storeGroup(ctx, g) }
	if res := r.call(ctx, report, started); !res.stopped {
		r.finish(ctx, res)
	}
}

// storeWorking moves the task to working before its call starts. While
// the store is unavailable it tries again, backing off, until the write
// takes or the run is stopped (a cancel, a fence, shutdown): a run that
// gave up at once left its task submitted under a live runner, which no
// recovery takes over (TestPostgresRestartedUnderLoad saw one).
func (r *run) storeWorking(ctx context.Context) ([]Event, error) {
	s, owner, id, log := r.s, r.c.Caller, r.c.TaskID, r.log
	working := s.sm.status(a2a.StateWorking, nil)
	for wait, tries := 100*time.Millisecond, 0; ; tries++ {
		_, events, _, err := s.store.Update(context.WithoutCancel(ctx), owner, id, nil, Head, func(r *Record) ([]Event, error) {
			if err := s.sm.move(r, onStart, working); err != nil {
				return nil, err
			}
			return []Event{{Status: &working}}, nil
		})
		if !errors.Is(err, ErrStoreUnavailable) {
			if tries > 0 && err == nil {
				log.Info().Int("tries", tries+1).Msg("call started once the store was back")
			}
			return events, err
		}
		if tries == 0 {
			log.Warn().Err(err).Msg("store unavailable: the call starts once its task is stored as working")
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second, s.cfg.LeaseTTL/4)
	}
}

// progress stores a report of a running call as an event, unless the task
// is no longer working.
// A chunk that takes the task's artifacts past MaxTaskArtifactBytes fails
// the task instead, and stops the call; so does a report that would take
// the owner past q, its caller's quota, in bytes (see overQuota).
func (r *run) progress(ctx context.Context, p functions.Progress) {
	s, owner, id, log := r.s, r.c.Caller, r.c.TaskID, r.log
	rec, evs, _, err := s.store.Update(context.WithoutCancel(ctx), owner, id, nil, Head, func(rec *Record) ([]Event, error) {
		rec.WriteQuota = Quota{Bytes: r.q.Bytes}
		return r.applyProgress(rec, p)
	})
	var qe *QuotaError
	switch {
	case errors.Is(err, errSkip):
	case errors.As(err, &qe):
		r.overQuota(ctx, qe)
	case err != nil:
		log.Error().Err(err).Msg("store call progress")
	case rec.State() == a2a.StateFailed:
		s.broker.Publish(id, evs) // rec is the head: a waiter reads the task
		log.Warn().Int64("limit", s.cfg.MaxTaskArtifactBytes).Msg("call stopped: its output passed the task's artifact limit")
		s.ex.stop(id, errOutputTooLarge)
	default:
		s.broker.Publish(id, evs)
	}
}

// storeGroup stores g, the process group of the task's running call, so
// that if a2ad crashes the next start can kill it (see recover); unless the
// task is no longer working.
func (r *run) storeGroup(ctx context.Context, g functions.ProcessGroup) {
	s := r.s
	_, _, _, err := s.store.Update(context.WithoutCancel(ctx), r.c.Caller, r.c.TaskID, nil, Head, func(rec *Record) ([]Event, error) {
		// A process group is news of a running call, as progress is.
		if err := s.sm.may(rec, a2a.StateWorking, onProgress); err != nil {
			return nil, err
		}
		rec.Group = &g
		return []Event{}, nil // a change of the record, no event
	})
	if err != nil && !errors.Is(err, errSkip) {
		r.log.Error().Err(err).Msg("store call process group")
	}
}

// applyProgress records p on r: a note becomes r's working status (not
// history: notes are transient), an artifact chunk is an artifact event,
// which adds to, or appends to, its artifact (ApplyArtifact: the store
// applies it, and foldArtifacts does on a record held whole); a chunk that
// would take r's artifacts past MaxTaskArtifactBytes fails r instead
// (tooLarge). Returns errSkip, and changes nothing, if r is no longer
// working.
func (r *run) applyProgress(rec *Record, p functions.Progress) ([]Event, error) {
	s := r.s
	if err := s.sm.may(rec, a2a.StateWorking, onProgress); err != nil {
		return nil, err
	}
	if pa := p.Artifact; pa != nil {
		if st, over := r.tooLarge(rec, pa); over {
			if err := s.sm.move(rec, onProgress, st); err != nil {
				return nil, err
			}
			return []Event{{Status: &st}}, nil
		}
		rec.UpdatedAt = s.cfg.Now()
		return []Event{chunkEvent(pa)}, nil
	}
	if p.Message == "" {
		return nil, nil
	}
	st := s.sm.noteStatus(rec.Task.ID, rec.Task.ContextID, p.Message)
	if err := s.sm.move(rec, onProgress, st); err != nil {
		return nil, err
	}
	return []Event{{Status: &st}}, nil
}

// chunkEvent is the artifact event of an artifact chunk a call reported;
// a chunk without an id gets a new one.
func chunkEvent(pa *functions.ProgressArtifact) Event {
	part := a2a.DataPart(compactJSON(pa.Data))
	if pa.Text != nil {
		part = a2a.TextPart(*pa.Text)
	}
	id := pa.ArtifactID
	if id == "" {
		id = newID()
	}
	chunk := a2a.Artifact{ArtifactID: id, Name: pa.Name, Parts: []a2a.Part{part}}
	return Event{Artifact: &chunk, Append: pa.Append, LastChunk: pa.LastChunk}
}

// callResult is what a finished call leaves for its task.
type callResult struct {
	status    a2a.TaskStatus
	artifacts []a2a.Artifact
	// stopped: the call was cut short by a cancel or by shutdown, and
	// leaves the task as it is.
	stopped bool
	started time.Time
}

// events returns the events that record res: the artifact, then the
// status.
func (res *callResult) events() []Event {
	out := make([]Event, 0, 1+len(res.artifacts))
	for i := range res.artifacts {
		out = append(out, Event{Artifact: &res.artifacts[i], LastChunk: true})
	}
	return append(out, Event{Status: &res.status})
}

// apply records res on r: its status, and its artifact as an event; the
// call's process group is gone. A result that would take r's artifacts
// past MaxTaskArtifactBytes fails r instead, and is not stored. Returns
// errSkip, and changes nothing, if r is no longer working (a result after
// a cancel is discarded).
func (r *run) apply(rec *Record, res *callResult) ([]Event, error) {
	s := r.s
	if err := s.sm.may(rec, res.status.State, onResult); err != nil {
		return nil, err
	}
	rec.Group = nil
	if len(res.artifacts) > 0 {
		if st, over := r.resultTooLarge(rec, res.artifacts); over {
			if err := s.sm.move(rec, onResult, st); err != nil {
				return nil, err
			}
			return []Event{{Status: &st}}, nil
		}
	}
	if err := s.sm.move(rec, onResult, res.status); err != nil {
		return nil, err
	}
	return res.events(), nil
}

// foldArtifacts applies the artifact events to r's artifacts, for a record
// held whole (one about to be created); an update leaves that to the
// store.
func foldArtifacts(r *Record, evs []Event) {
	for _, e := range evs {
		if e.Artifact != nil {
			r.Task.Artifacts = ApplyArtifact(r.Task.Artifacts, e.Artifact, e.Append)
		}
	}
}

// call invokes the function once, bounded by its timeout; the call's
// progress goes to report, and the process group of an exec call to
// started.
func (r *run) call(ctx context.Context, report functions.ProgressFunc, started functions.StartedFunc) callResult {
	s, fn := r.s, r.fn
	begun := time.Now()
	callCtx, cancel := context.WithTimeout(ctx, fn.Timeout)
	callCtx = functions.WithCall(callCtx, r.c)
	callCtx = functions.WithProgress(r.log.WithContext(callCtx), report)
	callCtx = functions.WithStarted(callCtx, started)
	callCtx, span := r.traceCall(callCtx)
	s.met.CallRunning(fn.ID, 1)
	res, callErr := fn.Backend.Invoke(callCtx, r.input)
	s.met.CallRunning(fn.ID, -1)
	timedOut := errors.Is(callCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	endCall(span, callErr, timedOut, ctx.Err() != nil)
	return r.ended(context.Cause(ctx), res, callErr, timedOut, begun)
}

// callNow is call for an immediate backend (see functions.Immediate),
// inline: its context is ctx, and it times out if it took longer than fn's
// timeout. It is one of the executor's runs only in that its end reads
// their cause (a shutdown). The call is not in the context: the backend
// reads none of it.
func (r *run) callNow(ctx context.Context) callResult {
	s, fn := r.s, r.fn
	begun := time.Now()
	ctx, span := r.traceCall(ctx)
	s.met.CallRunning(fn.ID, 1)
	res, callErr := fn.Backend.Invoke(ctx, r.input)
	s.met.CallRunning(fn.ID, -1)
	cause := context.Cause(s.ex.ctx)
	timedOut := time.Since(begun) >= fn.Timeout && cause == nil
	endCall(span, callErr, timedOut, cause != nil)
	return r.ended(cause, res, callErr, timedOut, begun)
}

// ended is what the call that ended leaves for its task; cause is the
// cause of the end of its run's context, if it ended.
func (r *run) ended(cause error, res functions.Result, callErr error, timedOut bool, begun time.Time) callResult {
	log := r.log
	switch {
	case errors.Is(cause, errShuttingDown):
		log.Warn().Msg("call interrupted by shutdown; recovery settles the task, on another replica or at the next start")
		return callResult{stopped: true}
	case errors.Is(cause, errCanceledByClient):
		log.Info().Msg("call stopped: task canceled")
		return callResult{stopped: true}
	case errors.Is(cause, errFenced):
		log.Warn().Msg("call stopped: the replica's lease may have lapsed; another replica takes the task over")
		return callResult{stopped: true}
	case errors.Is(cause, errOutputTooLarge), errors.Is(cause, errQuotaExceeded):
		return callResult{stopped: true} // the task is failed already
	}
	status, artifacts := r.outcome(res, callErr, timedOut)
	return callResult{status: status, artifacts: artifacts, started: begun}
}

// finish stores a call's result, unless the task was canceled meanwhile
// (then the late result is discarded in the same transaction that sees
// the cancel). While the store is unavailable it tries again, backing off,
// until the store takes it or the run is stopped (shutdown: recovery at
// the next start settles the task): a result is not lost to an outage.
// A fence (errFenced) does not stop it: the result is stored unless
// another replica adopted the task meanwhile. The tries are at most a
// quarter of the lease's ttl apart, so that one lands before a replica
// back from an outage every one shared may adopt the task.
func (r *run) finish(ctx context.Context, res callResult) {
	s, owner, id, log := r.s, r.c.Caller, r.c.TaskID, r.log
	var (
		rec *Record
		evs []Event
		err error
	)
	for wait, tries := 100*time.Millisecond, 0; ; tries++ {
		rec, evs, _, err = s.store.Update(context.WithoutCancel(ctx), owner, id, nil, Whole, func(rec *Record) ([]Event, error) {
			return r.apply(rec, &res)
		})
		if !errors.Is(err, ErrStoreUnavailable) {
			if tries > 0 && err == nil {
				log.Info().Int("tries", tries+1).Msg("call result stored once the store was back")
			}
			break
		}
		if tries == 0 {
			log.Warn().Err(err).Msg("store unavailable: the call's result is kept and stored again until it takes")
		}
		stop := ctx.Done()
		if errors.Is(context.Cause(ctx), errFenced) {
			stop = s.ex.ctx.Done()
		}
		select {
		case <-stop:
			if s.ex.ctx.Err() == nil && errors.Is(context.Cause(ctx), errFenced) {
				continue // fenced while it waited: it tries on
			}
			log.Warn().Msg("call result not stored: shutdown while the store was unavailable; recovery settles the task at the next start")
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second, s.cfg.LeaseTTL/4)
	}
	switch {
	case errors.Is(err, errSkip):
		// After a try whose commit the outage hid, the result may be the
		// task's already.
		log.Info().Msg("call result discarded: task no longer working")
		return
	case err != nil:
		log.Error().Err(err).Msg("store call outcome")
		return
	}
	r.leave()
	s.broker.Publish(id, withRecord(evs, rec))
	log.Info().Str("state", string(rec.State())).Dur("duration", time.Since(res.started)).Msg("call finished")
}

// outcome turns a call's result into the task's next status and artifacts.
func (r *run) outcome(res functions.Result, callErr error, timedOut bool) (a2a.TaskStatus, []a2a.Artifact) {
	s, fn, taskID, log := r.s, r.fn, r.c.TaskID, r.log
	const ctxID = "" // advance fills in the task's context id
	switch {
	case timedOut:
		log.Warn().Err(callErr).Dur("timeout", fn.Timeout).Msg("call timed out")
		return s.sm.status(a2a.StateFailed, failure(taskID, ctxID, "Function call timed out after "+fn.Timeout.String(), FailureTimeout)), nil
	case callErr != nil:
		reason := "Function call failed"
		var ce *functions.CallError
		if errors.As(callErr, &ce) {
			reason = ce.Reason
		}
		log.Warn().Err(callErr).Msg("call failed")
		return s.sm.status(a2a.StateFailed, failure(taskID, ctxID, reason, FailureInvoke)), nil
	case res.InputRequired != "":
		return s.sm.status(a2a.StateInputRequired, agentText(taskID, ctxID, res.InputRequired)), nil
	}
	if fn.Output != nil {
		if problems := fn.Output.Validate(res.Output); len(problems) > 0 {
			log.Warn().Str("path", problems[0].Path).Str("problem", problems[0].Message).Msg("output does not match the output schema")
			return s.sm.status(a2a.StateFailed, failure(taskID, ctxID, "Function returned output that does not match its output schema", FailureOutput)), nil
		}
	}
	if fn.Parts {
		return r.partsOutcome(res.Output)
	}
	return s.sm.status(a2a.StateCompleted, nil), []a2a.Artifact{{
		ArtifactID: newID(),
		Name:       fn.ID,
		Parts:      []a2a.Part{outputPart(res.Output)},
	}}
}

// partsOutcome is the outcome of fn's output out, a parts envelope (see
// partsOf): completed with its artifacts and message, or failed if out is
// not one.
func (r *run) partsOutcome(out json.RawMessage) (a2a.TaskStatus, []a2a.Artifact) {
	s, fn, taskID, log := r.s, r.fn, r.c.TaskID, r.log
	const ctxID = "" // advance fills in the task's context id
	arts, parts, asMessage, path, problem := partsOf(out, fn)
	if problem != "" {
		log.Warn().Str("path", path).Str("problem", problem).Msg("output is not a parts envelope")
		text := "Function returned output that is not a parts envelope: " + problem
		if path != "" {
			text = "Function returned output that is not a parts envelope: " + path + ": " + problem
		}
		return s.sm.status(a2a.StateFailed, failure(taskID, ctxID, text, FailureOutput)), nil
	}
	var m *a2a.Message
	if len(parts) > 0 {
		m = agentText(taskID, ctxID, "")
		m.Parts = parts
		if asMessage {
			m.Metadata = map[string]any{ReplyKey: "message"}
		}
	}
	return s.sm.status(a2a.StateCompleted, m), arts
}

// outputPart is the artifact part for a function's output: a data part
// for an object, a data part {"items": [...]} for an array (0.3 data parts
// hold objects), a text part for a string, and the JSON text otherwise.
func outputPart(out json.RawMessage) a2a.Part {
	out = compactJSON(out)
	switch firstNonSpace(out) {
	case '{':
		return a2a.DataPart(out)
	case '[':
		b := make([]byte, 0, len(out)+10)
		b = append(b, `{"items":`...)
		b = append(b, out...)
		return a2a.DataPart(append(b, '}'))
	case '"':
		var str string
		if json.Unmarshal(out, &str) == nil {
			return a2a.TextPart(str)
		}
	}
	return a2a.TextPart(string(out))
}

// compactJSON returns out without insignificant space. The stores write
// data parts compacted (the canonical encoding), so a part must hold what
// is stored: its size is the artifact's size in the task's index, which
// `a2ad store check` compares with the stored bytes. Output with no
// space byte at all, the usual case, is returned as it is, unallocated.
func compactJSON(out json.RawMessage) json.RawMessage {
	if !bytes.ContainsAny(out, " \t\r\n") {
		return out
	}
	var b bytes.Buffer
	b.Grow(len(out))
	if json.Compact(&b, out) != nil {
		return out // not JSON: the caller reports it as it is
	}
	return b.Bytes()
}
