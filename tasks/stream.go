package tasks

import (
	"context"
	"errors"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
)

// Streaming errors.
var (
	// ErrSlowSubscriber: a watcher fell so far behind the task's events
	// that its buffer overflowed. Its stream ends; it resumes from the
	// last sequence it saw.
	ErrSlowSubscriber = errors.New("subscriber too slow: resume from the last event id")
)

// StreamEvent is one event of a task's stream, with the task's event
// sequence number. Exactly one of Task, Status and Artifact is set.
type StreamEvent struct {
	Seq      uint64
	Task     *a2a.Task
	Message  *a2a.Message // the one event of a reply (see Service.reply)
	Status   *a2a.StatusUpdateEvent
	Artifact *a2a.ArtifactUpdateEvent
}

// Final reports whether the event ends the stream: a status update that
// is terminal or interrupted.
func (e *StreamEvent) Final() bool { return e.Status != nil && e.Status.Final }

// DefaultStreamBuffer is how many events a watcher may fall behind before
// it is cut off.
const DefaultStreamBuffer = 256

// Watch streams caller's task id to emit, in sequence order and without
// duplicates:
//
//   - with after nil, the task as it stands, then its live events; a task
//     that is already settled gets its status as a final event at once;
//   - with after set, the events after that sequence, read from the
//     store's event log (so it works after a restart, and for a task that
//     has finished), then the live ones.
//
// It returns nil after the final event (terminal or interrupted),
// ErrNotFound for an unknown or foreign task (before emitting anything),
// ErrSlowSubscriber if the watcher fell too far behind, ErrClosed when the
// service shuts down, ctx's error when ctx ends, and emit's error.
func (s *Service) Watch(ctx context.Context, caller Caller, id string, after *uint64, emit func(StreamEvent) error) error {
	return s.watch(ctx, caller, id, after, false, emit)
}

// Subscribe is Watch for a subscription (1.0's SubscribeToTask), which
// follows the task to its terminal state: an interrupted task
// (input-required, auth-required) keeps the stream open, its status
// event not final, and the client sees the answer to it through.
//
// The 1.0 spec's two texts differ: §3.1.6 (SubscribeToTask, the
// operation every binding serves) ends the stream when the task is
// terminal; §11.7 (HTTP+JSON) ends it when the task is terminal or
// interrupted. a2ad reads §3.1.6 as binding on every binding and §11.7's
// "interrupted" as about the stream of a message (SendStreamingMessage,
// Watch): there an interaction ends at input-required, and the client
// answers with a new message and a new stream. A subscriber watches the
// task, not one interaction, and a task in input-required is not done.
func (s *Service) Subscribe(ctx context.Context, caller Caller, id string, after *uint64, emit func(StreamEvent) error) error {
	return s.watch(ctx, caller, id, after, true, emit)
}

// watch serves Watch and Subscribe: toEnd, the stream ends at a terminal
// state only; else at an interrupted one too.
func (s *Service) watch(ctx context.Context, caller Caller, id string, after *uint64, toEnd bool, emit func(StreamEvent) error) error {
	// Subscribe first, then read the store: every event is either in
	// what is read or delivered live (or both; duplicates are skipped).
	sub := s.broker.Subscribe(id, s.cfg.streamBuffer())
	defer s.broker.Unsubscribe(sub)
	defer s.relay.follow(id, 0)() // the task may run in another process: before the read, to miss no notice
	s.met.Subscribers(1)
	defer s.met.Subscribers(-1)
	sc := s.ans.scope(nil, true) // the task comes first
	if after != nil {
		sc = Head // the events after after: the task's head is enough
	}
	rec, err := s.store.Get(ctx, caller.ID, id, sc)
	if err != nil {
		return err
	}
	w := watcher{s: s, rec: rec, emit: emit, toEnd: toEnd}
	if after == nil {
		t := rec.Task
		if err := emit(StreamEvent{Seq: rec.Seq, Task: &t}); err != nil {
			return err
		}
		w.last = rec.Seq
		if w.ends(rec.State()) {
			st := rec.Task.Status
			return emit(StreamEvent{Seq: rec.Seq, Status: w.status(&st)})
		}
	} else {
		// An id past the task's last event (one from a store since
		// restored from a backup, say) counts as the last event: the
		// client then gets every event from here on, and a stream of a
		// finished task ends, rather than skipping them all.
		w.last = min(*after, rec.Seq)
		if done, err := w.catchUp(ctx); done || err != nil {
			return err
		}
		if w.last >= rec.Seq && w.ends(rec.State()) {
			return nil // the client has seen everything, the final event included
		}
	}
	for {
		select {
		case e, ok := <-sub.C:
			if !ok {
				s.met.SlowSubscriberDropped()
				return ErrSlowSubscriber
			}
			if e.Seq <= w.last {
				continue
			}
			if e.Seq > w.last+1 {
				// A gap: events published out of order, or missed.
				// The store has them all.
				if done, err := w.catchUp(ctx); done || err != nil {
					return err
				}
				continue
			}
			if done, err := w.send(e); done || err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-s.ctx.Done():
			return ErrClosed
		}
	}
}

// streamBuffer is the events a stream's subscription buffers.
func (c *Config) streamBuffer() int {
	if c.StreamBuffer > 0 {
		return c.StreamBuffer
	}
	return DefaultStreamBuffer
}

// watcher is one Watch's position in its task's events.
type watcher struct {
	s    *Service
	rec  *Record
	last uint64
	emit func(StreamEvent) error
	// toEnd: the stream ends at a terminal state only (see Subscribe).
	toEnd bool
}

// ends reports whether a task in state st ends the watcher's stream.
func (w *watcher) ends(st a2a.TaskState) bool {
	if w.toEnd {
		return st.Terminal()
	}
	return settled(st)
}

// catchUp emits the stored events after the last one sent. done reports
// that the final event was among them.
func (w *watcher) catchUp(ctx context.Context) (done bool, err error) {
	evs, err := w.s.store.Events(ctx, w.rec.Task.ID, w.last)
	if err != nil {
		return false, err
	}
	sent := 0
	defer func() { w.s.met.ReplayedEvents(sent) }()
	for _, e := range evs {
		done, err := w.send(e)
		if err != nil {
			return false, err
		}
		if e.Status != nil || e.Artifact != nil {
			sent++
		}
		if done {
			return true, nil
		}
	}
	return false, nil
}

func (w *watcher) send(e Event) (done bool, err error) {
	se := StreamEvent{Seq: e.Seq}
	switch {
	case e.Status != nil:
		se.Status = w.status(e.Status)
	case e.Artifact != nil:
		se.Artifact = &a2a.ArtifactUpdateEvent{
			TaskID: w.rec.Task.ID, ContextID: w.rec.Task.ContextID,
			Artifact: *e.Artifact, Append: e.Append, LastChunk: e.LastChunk,
		}
	default:
		w.last = e.Seq
		return false, nil
	}
	if err := w.emit(se); err != nil {
		return false, err
	}
	w.last = e.Seq
	return se.Final(), nil
}

func (w *watcher) status(st *a2a.TaskStatus) *a2a.StatusUpdateEvent {
	return &a2a.StatusUpdateEvent{
		TaskID: w.rec.Task.ID, ContextID: w.rec.Task.ContextID,
		Status: *st, Final: w.ends(st.State),
	}
}

// Stream sends a message as Send does, without waiting, then watches the
// task (see Watch): the task first, then its events up to the final one.
// With after set, it resumes that task's stream after that sequence
// instead: a client that lost a stream sends the same message again with
// the last event id it saw. Errors before the first event are Send's and
// Watch's. The Outcome is Send's.
func (s *Service) Stream(ctx context.Context, caller Caller, p a2a.SendParams, after *uint64, emit func(StreamEvent) error) (Outcome, error) {
	var out Outcome
	rec, err := s.send(ctx, caller, p, false, streamSpeculationWindow, &out)
	if err != nil {
		return out, err
	}
	if after == nil {
		switch s.ans.replyOf(rec) {
		case functions.ReplyMessage:
			// The stream is the message alone, once the call completed
			// (see reply).
			if !settled(rec.State()) {
				rec = s.wait(ctx, rec, nil, s.ans.scope(p.HistoryLength, true))
			}
			if m := s.ans.reply(rec); m != nil {
				return out, emit(StreamEvent{Seq: rec.Seq, Message: m})
			}
		case functions.ReplyEither:
			emit = (&replyHold{emit: emit}).event
		}
	}
	return out, s.Watch(ctx, caller, rec.Task.ID, after, emit)
}
