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

// sendNew creates a task for a message that names none. Sends with the
// same key take turns (see flights).
func (s *Service) sendNew(ctx context.Context, caller Caller, msg *a2a.Message, push *a2a.PushConfig, key IdemKey, id string, window time.Duration) (*Record, error) {
	return s.flights.do(ctx, key, func() (*Record, error) { return s.createTask(ctx, caller, msg, push, key, id, window) })
}

func (s *Service) createTask(ctx context.Context, caller Caller, msg *a2a.Message, push *a2a.PushConfig, key IdemKey, id string, window time.Duration) (*Record, error) {
	c, perr := resolveCall(msg)
	if perr != nil {
		return nil, perr
	}
	now := s.cfg.Now()
	contextID := msg.ContextID
	if contextID == "" {
		contextID = newID()
	}
	stored := *msg
	stored.TaskID, stored.ContextID = id, contextID
	rec := &Record{
		Task:        a2a.Task{ID: id, ContextID: contextID, History: []a2a.Message{stored}},
		Owner:       caller.ID,
		CallerTiers: caller.Tiers,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
	if push != nil {
		cfg := *push
		if err := s.checkPushConfig(ctx, id, "/configuration/pushNotificationConfig", &cfg); err != nil {
			return nil, err
		}
		rec.PushConfigs = []a2a.PushConfig{cfg}
	}
	var fn *functions.Function
	var status a2a.TaskStatus
	switch {
	case !c.Named:
		status = s.status(a2a.StateInputRequired, s.skillsHint(caller, id, contextID))
	default:
		f, denial := s.authorize(ctx, caller, c.FunctionID)
		if denial != "" {
			status = s.status(a2a.StateRejected, agentText(id, contextID, denial))
			break
		}
		if err := validateInput(f, c.Input); err != nil {
			return nil, err
		}
		fn = f
		rec.FunctionID, rec.Input = f.ID, c.Input
		status = s.status(a2a.StateSubmitted, nil)
	}
	if err := s.move(rec, onMessage, status); err != nil {
		return nil, err
	}
	events := []Event{{Status: &status}}
	var held func()
	ck := caller.callKey()
	if fn != nil {
		if err := s.ex.reserve(ck, caller.MaxCalls); err != nil {
			return nil, err
		}
		release, ok := s.ex.acquire(ctx, fn, false)
		if ok && window > 0 && fn.RetrySafe {
			// The call may run before its task is stored, unless this
			// message already has a task.
			switch got, err := s.store.Lookup(ctx, key); {
			case errors.Is(err, ErrNotFound):
				return s.speculate(ctx, ck, key, rec, events, fn, release, window)
			default:
				release()
				s.ex.unreserve(ck)
				return got, err
			}
		}
		// With a slot free now, store the task already working: one
		// commit fewer than submitted, then working.
		if ok {
			working := s.status(a2a.StateWorking, nil)
			if err := s.move(rec, onStart, working); err != nil {
				release()
				s.ex.unreserve(ck)
				return nil, err
			}
			held = release
			events = append(events, Event{Status: &working})
		}
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
		s.start(ck, got, fn, held)
	}
	return got, nil
}

func (s *Service) sendFollowUp(ctx context.Context, caller Caller, msg *a2a.Message, key IdemKey, push *a2a.PushConfig, sc Scope) (*Record, error) {
	for attempt := 0; ; attempt++ {
		rec, err := s.store.Get(ctx, caller.ID, msg.TaskID, Head)
		if err != nil {
			return nil, err
		}
		if msg.ContextID != "" && msg.ContextID != rec.Task.ContextID {
			return nil, invalid("/message/contextId", "does not match the task's contextId")
		}
		rec, err = s.followUp(ctx, caller, msg, key, push, rec, sc)
		if errors.Is(err, ErrConflict) && attempt < 3 {
			continue
		}
		return rec, err
	}
}

// followUp sends msg to the task snap is the head of; the task it
// returns holds what sc asks for.
func (s *Service) followUp(ctx context.Context, caller Caller, msg *a2a.Message, key IdemKey, push *a2a.PushConfig, snap *Record, sc Scope) (*Record, error) {
	id := snap.Task.ID
	stored := *msg
	stored.ContextID = snap.Task.ContextID

	// Work out what the message asks for, outside the transaction; the
	// transaction checks that the task has not moved meanwhile.
	var (
		fn      *functions.Function
		input   json.RawMessage
		status  a2a.TaskStatus
		rejectF string
	)
	switch err := transition(snap.State(), a2a.StateSubmitted, onMessage); {
	case errors.Is(err, ErrTaskTerminal), errors.Is(err, ErrTaskBusy):
		// A finished task takes no more messages (A2A 1.0 says so; 0.3
		// does the same here), and a running one none until it asks: only
		// a retry of a message it already holds is fine, and returns it.
		refuse := err
		rec, _, dup, err := s.store.Update(ctx, caller.ID, id, &key, sc, func(*Record) ([]Event, error) { return nil, refuse })
		if err != nil {
			return nil, err
		}
		if dup {
			s.met.IdempotentReplay()
			return rec, nil
		}
		return nil, refuse
	case err != nil:
		return nil, err
	case snap.FunctionID != "":
		in, perr := followUpInput(msg, snap.FunctionID)
		if perr != nil {
			return nil, perr
		}
		f, denial := s.authorize(ctx, caller, snap.FunctionID)
		if denial != "" {
			rejectF = denial
			break
		}
		if err := validateInput(f, in); err != nil {
			return nil, err
		}
		fn, input = f, in
	default:
		c, perr := resolveCall(msg)
		if perr != nil {
			return nil, perr
		}
		if !c.Named {
			status = s.status(a2a.StateInputRequired, s.skillsHint(caller, id, snap.Task.ContextID))
			break
		}
		f, denial := s.authorize(ctx, caller, c.FunctionID)
		if denial != "" {
			rejectF = denial
			break
		}
		if err := validateInput(f, c.Input); err != nil {
			return nil, err
		}
		fn, input = f, c.Input
	}
	switch {
	case rejectF != "":
		status = s.status(a2a.StateRejected, agentText(id, snap.Task.ContextID, rejectF))
	case fn != nil:
		status = s.status(a2a.StateSubmitted, nil)
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
		if err := s.move(r, onMessage, status); err != nil {
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
		s.start(caller.callKey(), rec, fn, nil)
	}
	return rec, nil
}
