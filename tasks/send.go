package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
)

// The two ways a message is taken: as the first of a new task (createTask,
// which may speculate, see fast.go) or as a follow-up to a task that waits
// for the client (followUp).

// incoming is one message being taken: who sent it, with which webhook
// and idempotency key, and the Outcome that the policy's decision on it
// is written to (for the audit trail; see Outcome). The steps of taking
// it are its methods, as a call's are run's.
type incoming struct {
	s      *Service
	caller Caller
	msg    *a2a.Message
	push   *a2a.PushConfig
	key    IdemKey
	out    *Outcome
	// wait says the sender waits for the new task to settle (a blocking
	// send): sub is then its subscription to the task, made by watch.
	wait bool
	sub  *Subscription
}

// watch subscribes in to task id, the new task, if its sender waits for
// it: just before id is stored unsettled, so that no event is missed. A
// task stored settled needs none.
func (in *incoming) watch(b *Broker, id string) {
	if in.wait && in.sub == nil {
		in.sub = b.Subscribe(id, 8)
	}
}

// sendNew creates a task for a message that names none. Sends with the
// same key take turns (see flights).
func (in *incoming) sendNew(ctx context.Context, id string, window time.Duration) (*Record, error) {
	return in.s.flights.do(ctx, in.key, func() (*Record, error) { return in.createTask(ctx, id, window) })
}

// createTask stores task id for msg, the first message, and starts its
// call if it asks for one: stored working at once when a slot is free, or
// run before the task is stored when it may (speculate).
func (in *incoming) createTask(ctx context.Context, id string, window time.Duration) (*Record, error) {
	s, caller, key := in.s, in.caller, in.key
	rec, fn, err := in.newRecord(ctx, id)
	if err != nil {
		return nil, err
	}
	first := rec.Task.Status // a copy: a start moves rec on
	// Room for the statuses submitted and working, an artifact and the
	// outcome: what a one-commit send stores.
	events := append(make([]Event, 0, 4), Event{Status: &first})
	var held func()
	ck := caller.callKey()
	if fn != nil {
		if err := s.ex.reserve(ck, caller.MaxCalls); err != nil {
			return nil, err
		}
		release, ok := s.ex.acquireTraced(ctx, s.cfg.Tracer, fn, false)
		// On a store other processes share, a send on another replica
		// may claim the messageId meanwhile (in one process, flights make
		// sends of one messageId take turns): there, a call that reaches
		// a backend waits for its task, so that a message makes one call,
		// under its task's key. An immediate call reaches none.
		immediate := functions.IsImmediate(fn.Backend)
		if ok && window > 0 && fn.RetrySafe && (s.relay == nil || immediate) {
			// The call may run before its task is stored, unless this
			// message already has a task.
			switch got, err := s.store.Lookup(ctx, key); {
			case errors.Is(err, ErrNotFound):
				r := newRun(s, rec, callOf(rec, key.messageID(), 1), fn, key.Quota)
				r.key, r.events = key, events
				if immediate {
					return r.runNow(ctx, ck, release)
				}
				return r.speculate(ctx, in, ck, release, window)
			default:
				release()
				s.ex.unreserve(ck)
				return got, err
			}
		}
		// With a slot free now, store the task already working: one
		// commit fewer than submitted, then working.
		if ok {
			working := s.sm.status(a2a.StateWorking, nil)
			if err := s.sm.move(rec, onStart, working); err != nil {
				release()
				s.ex.unreserve(ck)
				return nil, err
			}
			held = release
			events = append(events, Event{Status: &working})
		}
	}
	if !settled(rec.State()) {
		in.watch(s.broker, id)
	}
	got, created, err := s.store.Create(ctx, key, rec, events)
	if err != nil || !created {
		if held != nil {
			held()
		}
		if fn != nil {
			s.ex.unreserve(ck)
		}
		return got, err
	}
	s.broker.Publish(id, events)
	fid := "" // only an id of ours: a refused one is whatever the caller sent
	if fn != nil {
		fid = fn.ID
	}
	s.log.Debug().Str("task_id", id).Str("function_id", fid).Str("state", string(got.State())).
		Str("caller", caller.ID).Msg("task created")
	if fn != nil {
		newRun(s, got, callOf(got, key.messageID(), 1), fn, key.Quota).start(ctx, ck, held)
	}
	return got, nil
}

// newRecord builds task id for msg, its first message, moved to what msg
// asks for (see askFor), with the webhook push if not nil; fn is the
// function to call, if any. Errors: an *InputError for an invalid message,
// input or webhook.
func (in *incoming) newRecord(ctx context.Context, id string) (rec *Record, fn *functions.Function, err error) {
	s, caller, msg, push := in.s, in.caller, in.msg, in.push
	c, perr := resolveCall(msg)
	if perr != nil {
		return nil, nil, perr
	}
	now := s.cfg.Now()
	contextID := msg.ContextID
	if contextID == "" {
		contextID = newID()
	}
	stored := *msg
	stored.TaskID, stored.ContextID = id, contextID
	rec = &Record{
		Task:        a2a.Task{ID: id, ContextID: contextID, History: []a2a.Message{stored}},
		Owner:       caller.ID,
		CallerTiers: caller.Tiers,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
	if push != nil {
		cfg := *push
		if err := checkPushConfig(ctx, s.cfg.PushGuard, id, "/configuration/pushNotificationConfig", &cfg); err != nil {
			return nil, nil, err
		}
		rec.PushConfigs = []a2a.PushConfig{cfg}
	}
	a, err := in.askFor(c, id, contextID)
	if err != nil {
		return nil, nil, err
	}
	if a.fn != nil {
		rec.FunctionID, rec.Input = a.fn.ID, a.input
	}
	if err := s.sm.move(rec, onMessage, a.status); err != nil {
		return nil, nil, err
	}
	return rec, a.fn, nil
}

// ask is what a message asks of its task, worked out outside the
// transaction: a call of fn with input (status submitted) or, without
// fn, the status the task takes instead: rejected for a function the
// caller may not call, input-required when the message names none.
type ask struct {
	fn     *functions.Function
	input  json.RawMessage
	status a2a.TaskStatus
}

// askFor works out what c asks of task id (in contextID); a message that
// names no skill calls the default skill, if the caller may see one. It
// asks the policy whether the caller may call c's function, and notes the
// decision in in.out, then checks c's input against its schema (an
// *InputError if it does not match).
func (in *incoming) askFor(c call, id, contextID string) (ask, error) {
	s, caller := in.s, in.caller
	if !c.Named {
		f := s.sk.defaultSkill(caller)
		if f == nil {
			return ask{status: s.sm.status(a2a.StateInputRequired, s.sk.hint(caller, id, contextID))}, nil
		}
		c = call{FunctionID: f.ID, Input: messageInput(in.msg, id, contextID), Named: true}
	}
	f, reason, denial := s.sk.authorize(caller, c.FunctionID)
	in.out.note(c.FunctionID, reason)
	if denial != "" {
		return ask{status: s.sm.status(a2a.StateRejected, agentText(id, contextID, denial))}, nil
	}
	if err := validateInput(f, c.Input); err != nil {
		return ask{}, err
	}
	return ask{fn: f, input: c.Input, status: s.sm.status(a2a.StateSubmitted, nil)}, nil
}

// sendFollowUp takes a message to the task it names (see followUp),
// trying again when the task moved meanwhile.
func (in *incoming) sendFollowUp(ctx context.Context, sc Scope) (*Record, error) {
	s, caller, msg := in.s, in.caller, in.msg
	for attempt := 0; ; attempt++ {
		rec, err := s.store.Get(ctx, caller.ID, msg.TaskID, Head)
		if err != nil {
			return nil, err
		}
		if msg.ContextID != "" && msg.ContextID != rec.Task.ContextID {
			return nil, invalid("/message/contextId", "does not match the task's contextId")
		}
		rec, err = in.followUp(ctx, rec, sc)
		if errors.Is(err, ErrConflict) && attempt < 3 {
			continue
		}
		return rec, err
	}
}

// followUp takes msg into the task snap is the head of, which waited for
// the client, in a transaction that checks the task has not moved since
// snap; ErrConflict if it has. A task that takes no message answers with
// the rule's error (ErrTaskTerminal, ErrTaskBusy), unless msg is a retry
// of one it holds. The task it returns holds what sc asks for.
func (in *incoming) followUp(ctx context.Context, snap *Record, sc Scope) (*Record, error) {
	s, caller, msg, key, push := in.s, in.caller, in.msg, in.key, in.push
	id := snap.Task.ID
	stored := *msg
	stored.TaskID, stored.ContextID = id, snap.Task.ContextID

	// Work out what the message asks for, outside the transaction; the
	// transaction checks that the task has not moved meanwhile.
	if err := transition(snap.State(), a2a.StateSubmitted, onMessage); err != nil {
		return in.refused(ctx, snap, err, sc)
	}
	var (
		c    call
		perr *InputError
	)
	if snap.FunctionID != "" {
		c = call{FunctionID: snap.FunctionID, Named: true}
		c.Input, perr = in.followUpInput(snap)
	} else {
		c, perr = resolveCall(msg)
	}
	if perr != nil {
		return nil, perr
	}
	a, err := in.askFor(c, id, snap.Task.ContextID)
	if err != nil {
		return nil, err
	}
	fn, input, status := a.fn, a.input, a.status
	if fn != nil {
		if err := s.ex.reserve(caller.callKey(), caller.MaxCalls); err != nil {
			return nil, err
		}
	}
	rec, events, dup, err := s.store.Update(ctx, caller.ID, id, &key, sc, func(r *Record) ([]Event, error) {
		if r.Seq != snap.Seq {
			return nil, ErrConflict
		}
		if err := checkHistory(r, caller.MaxHistory); err != nil {
			return nil, err
		}
		r.Task.History = append(r.Task.History, stored)
		if push != nil {
			if err := addPushConfig(r, *push); err != nil {
				return nil, err
			}
		}
		if err := s.sm.move(r, onMessage, status); err != nil {
			return nil, err
		}
		if fn != nil {
			r.FunctionID, r.Input = fn.ID, input
		}
		return []Event{{Status: &status}}, nil
	})
	if err != nil || dup {
		if fn != nil {
			s.ex.unreserve(caller.callKey())
		}
		if dup {
			s.met.IdempotentReplay()
		}
		return rec, err
	}
	s.broker.Publish(id, events)
	if fn != nil {
		newRun(s, rec, callOf(rec, msg.MessageID, 1), fn, caller.Quota).start(ctx, caller.callKey(), nil)
	}
	return rec, nil
}

// refused answers a message to snap's task, which takes none (err, from
// the state machine): a retry of a message the task holds returns the
// task, with what sc asks for; anything else gets err.
func (in *incoming) refused(ctx context.Context, snap *Record, err error, sc Scope) (*Record, error) {
	s, caller, key := in.s, in.caller, in.key
	if !errors.Is(err, ErrTaskTerminal) && !errors.Is(err, ErrTaskBusy) {
		return nil, err
	}
	// A finished task takes no more messages (A2A 1.0 says so; 0.3 does
	// the same here), and a running one none until it asks: only a retry
	// of a message it already holds is fine, and returns it.
	refuse := err
	rec, _, dup, err := s.store.Update(ctx, caller.ID, snap.Task.ID, &key, sc, func(*Record) ([]Event, error) { return nil, refuse })
	if err != nil {
		return nil, err
	}
	if dup {
		s.met.IdempotentReplay()
		return rec, nil
	}
	return nil, refuse
}
