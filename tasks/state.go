package tasks

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/a2ad/a2ad/a2a"
)

// The state machine of a task: which event may move a task from which
// state to which. It does no I/O: every store Update closure that changes
// a status calls advance, and the service decides what to do with its
// refusal. The rules, as the table below spells them:
//
//   - terminal is final: no event leaves completed, canceled, failed or
//     rejected;
//   - cancel wins: a cancel moves any task that is not terminal to
//     canceled, whatever its call is doing;
//   - a result after a cancel is discarded: a call's progress and result
//     apply only while the task is working, so once a cancel (or anything
//     else) moved it on they are refused with errSkip;
//   - input-required continues: a task waiting for the client (input- or
//     auth-required) takes a message, which submits a call, is rejected
//     or asks for input again.

// trigger is what moves a task: a client's message, a step of its call,
// a cancel or the recovery of a restart.
type trigger uint8

const (
	// onMessage: a client message that creates the task or continues an
	// interrupted one. Target: submitted (a call), rejected (a denied
	// skill) or input-required (no skill named).
	onMessage trigger = iota + 1
	// onStart: the call took its slots. submitted → working.
	onStart
	// onProgress: the running call reported a note (working → working)
	// or an output chunk past the task's artifact limit (→ failed).
	onProgress
	// onResult: the call ended. working → completed, failed or
	// input-required.
	onResult
	// onCancel: the client or the operator canceled the task. Any state
	// but a terminal one → canceled.
	onCancel
	// onRecover: a restart found the task submitted or working: it is
	// submitted again (a retry-safe function) or failed.
	onRecover
)

var triggerNames = map[trigger]string{
	onMessage: "message", onStart: "start", onProgress: "progress",
	onResult: "result", onCancel: "cancel", onRecover: "recover",
}

func (t trigger) String() string {
	if n, ok := triggerNames[t]; ok {
		return n
	}
	return fmt.Sprintf("trigger(%d)", uint8(t))
}

// stateNew is the state of a task not stored yet: its first message
// moves it.
const stateNew a2a.TaskState = ""

// transitions is the table of allowed moves: for each trigger, the states
// it may fire in and the states it may lead to. Anything not listed is
// refused.
var transitions = []struct {
	on   trigger
	from []a2a.TaskState
	to   []a2a.TaskState
}{
	{onMessage,
		[]a2a.TaskState{stateNew, a2a.StateInputRequired, a2a.StateAuthRequired},
		[]a2a.TaskState{a2a.StateSubmitted, a2a.StateRejected, a2a.StateInputRequired}},
	{onStart,
		[]a2a.TaskState{a2a.StateSubmitted},
		[]a2a.TaskState{a2a.StateWorking}},
	{onProgress,
		[]a2a.TaskState{a2a.StateWorking},
		[]a2a.TaskState{a2a.StateWorking, a2a.StateFailed}},
	{onResult,
		[]a2a.TaskState{a2a.StateWorking},
		[]a2a.TaskState{a2a.StateCompleted, a2a.StateFailed, a2a.StateInputRequired}},
	{onCancel,
		[]a2a.TaskState{stateNew, a2a.StateSubmitted, a2a.StateWorking, a2a.StateInputRequired, a2a.StateAuthRequired, a2a.StateUnknown},
		[]a2a.TaskState{a2a.StateCanceled}},
	{onRecover,
		[]a2a.TaskState{a2a.StateSubmitted, a2a.StateWorking},
		[]a2a.TaskState{a2a.StateSubmitted, a2a.StateFailed}},
}

// errSkip refuses a step of a call (or of recovery) that the task has
// moved past, such as the result of a call whose task was canceled: the
// step is dropped, and nothing is written.
var errSkip = errors.New("task moved on")

// transition reports whether on may move a task from from to to. Its
// refusals say why, in the errors the service answers with:
// ErrNotCancelable for a cancel of a terminal task, ErrTaskTerminal for a
// message to a terminal task, ErrTaskBusy for a message to a task whose
// call is pending, errSkip for a step of a call or of recovery that the
// task moved past; a target that on never leads to is a bug of the caller
// (an error naming the move).
func transition(from, to a2a.TaskState, on trigger) error {
	for _, t := range transitions {
		if t.on != on {
			continue
		}
		if !slices.Contains(t.from, from) {
			return refusal(from, on)
		}
		if !slices.Contains(t.to, to) {
			return fmt.Errorf("tasks: no %s leads from %q to %q", on, from, to)
		}
		return nil
	}
	return fmt.Errorf("tasks: unknown %s", on)
}

// refusal is the error of on, fired in from where the table has no move.
func refusal(from a2a.TaskState, on trigger) error {
	switch on {
	case onCancel:
		return ErrNotCancelable
	case onMessage:
		if from.Terminal() {
			return ErrTaskTerminal
		}
		return ErrTaskBusy
	}
	return errSkip
}

// runs refuses (errSkip) a step on of a call that replica runs when r's
// call is now another replica's; other triggers pass.
func runs(r *Record, on trigger, replica string) error {
	switch on {
	case onStart, onProgress, onResult:
		if r.Runner != replica {
			return errSkip
		}
	}
	return nil
}

// advance moves r to st on on, if the table allows it from r's state (see
// transition, whose error it returns, leaving r as it was). A status
// message goes into the history too, so that the conversation reads in
// order, unless it is a working note (transient). now is the time of the
// change, and replica the replica making it: a task it moves to submitted
// or working is its to run (r.Runner); in any other state a task has no
// runner. A step of a call (start, progress, result) is refused with
// errSkip on a replica that is not the task's runner: another took the
// task over when its lease lapsed (see sweeper), and the late step of the
// first run is dropped as a step after a cancel is.
func advance(r *Record, on trigger, st a2a.TaskStatus, now time.Time, replica string) error {
	if err := runs(r, on, replica); err != nil {
		return err
	}
	if err := transition(r.State(), st.State, on); err != nil {
		return err
	}
	r.Runner = ""
	if st.State == a2a.StateSubmitted || st.State == a2a.StateWorking {
		r.Runner = replica
	}
	if st.Message != nil {
		st.Message.TaskID, st.Message.ContextID = r.Task.ID, r.Task.ContextID
		if st.State != a2a.StateWorking {
			r.Task.History = append(r.Task.History, *st.Message)
		}
	}
	r.Task.Status = st
	r.UpdatedAt = now
	return nil
}

// machine moves records through the state machine (see advance) at the
// service's clock, as this replica (its lease), and stamps the statuses
// it moves them to.
type machine struct {
	now    func() time.Time
	lease  *lease // nil where nothing moves (Try)
	stamps stamps // the status timestamp last formatted
}

// status is a status of state st with message m, stamped now.
func (sm *machine) status(st a2a.TaskState, m *a2a.Message) a2a.TaskStatus {
	return a2a.TaskStatus{State: st, Message: m, Timestamp: sm.stamps.format(sm.now())}
}

// noteStatus is the working status of a progress note a call reported.
func (sm *machine) noteStatus(taskID, contextID, note string) a2a.TaskStatus {
	return sm.status(a2a.StateWorking, agentText(taskID, contextID, note))
}

// move is advance at the service's clock: it moves r to st on on, if the
// state machine allows it (see transition for its errors).
func (sm *machine) move(r *Record, on trigger, st a2a.TaskStatus) error {
	return advance(r, on, st, sm.now(), sm.lease.runnerOf(r.Runner, on))
}

// may reports whether on may take r to the state to on this replica, as
// advance would, without moving it (see runs and transition).
func (sm *machine) may(r *Record, to a2a.TaskState, on trigger) error {
	if err := runs(r, on, sm.lease.runnerOf(r.Runner, on)); err != nil {
		return err
	}
	return transition(r.State(), to, on)
}
