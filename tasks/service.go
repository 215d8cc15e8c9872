package tasks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
)

// Config configures a Service. Store and Catalog are required.
type Config struct {
	Store Store
	// Catalog returns the catalogue in force; a reload swaps what it
	// returns, and calls already running keep the function they started
	// with.
	Catalog func() *functions.Catalog
	Policy  exposure.Policy
	Logger  zerolog.Logger
	// MaxConcurrent caps the calls running at once; default 64.
	MaxConcurrent int
	// MaxQueue caps the calls waiting for a slot; default 1024. A call
	// beyond it gets ErrBusy and nothing is stored.
	MaxQueue int
	// BlockingTimeout caps how long a blocking send waits; default 60s.
	BlockingTimeout time.Duration
	// Retention is how long terminal tasks are kept; default 30 days.
	Retention time.Duration
	// RetentionInterval is how often expired tasks are swept; default 1m.
	RetentionInterval time.Duration
	// RetentionBatch is how many tasks one sweep transaction deletes;
	// default 256.
	RetentionBatch int
	// PushGuard checks webhook URLs; nil turns push notifications off.
	PushGuard URLChecker
	// StreamBuffer is how many events a stream may fall behind before it
	// is cut off (and resumes); default DefaultStreamBuffer.
	StreamBuffer int
	// Now returns the time; default time.Now.
	Now func() time.Time
	// Metrics receives the service's measurements; nil records none.
	Metrics Metrics
	// MaxTaskArtifactBytes caps the size of a task's artifacts (as
	// ArtifactBytes counts it); 0 is unlimited. A call whose output would
	// pass it fails its task, and the output is not stored.
	MaxTaskArtifactBytes int64
}

// Service runs tasks. It is safe for concurrent use.
type Service struct {
	cfg    Config
	store  Store
	broker *Broker
	log    zerolog.Logger
	met    Metrics

	ex      *executor // places, slots and runs of calls
	sw      *sweeper  // recovery at start, retention
	flights flights   // one send at a time per messageId

	ctx    context.Context // the lifetime of waits and streams
	cancel context.CancelCauseFunc
}

// New returns a Service. Call Start before serving, and Close to stop.
func New(cfg Config) *Service {
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 64
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = 1024
	}
	if cfg.BlockingTimeout <= 0 {
		cfg.BlockingTimeout = 60 * time.Second
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 30 * 24 * time.Hour
	}
	if cfg.RetentionInterval <= 0 {
		cfg.RetentionInterval = time.Minute
	}
	if cfg.RetentionBatch <= 0 {
		cfg.RetentionBatch = 256
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &Service{
		cfg:    cfg,
		store:  cfg.Store,
		broker: NewBroker(),
		log:    cfg.Logger,
		met:    cfg.Metrics,
		ex:     newExecutor(cfg.MaxConcurrent, cfg.MaxQueue),
		ctx:    ctx,
		cancel: cancel,
	}
	swCtx, swCancel := context.WithCancel(context.Background())
	s.sw = &sweeper{
		store:     cfg.Store,
		broker:    s.broker,
		log:       cfg.Logger,
		now:       cfg.Now,
		retention: cfg.Retention,
		interval:  cfg.RetentionInterval,
		batch:     cfg.RetentionBatch,
		rerun:     s.rerun,
		resume:    s.resume,
		ctx:       swCtx,
		cancel:    swCancel,
	}
	return s
}

// Broker returns the broker the service publishes committed events to.
func (s *Service) Broker() *Broker { return s.broker }

// Start recovers the tasks a previous process left unfinished and starts
// the retention sweeper.
func (s *Service) Start(ctx context.Context) error {
	if err := s.sw.recover(ctx); err != nil {
		return fmt.Errorf("recover tasks: %w", err)
	}
	s.sw.start()
	return nil
}

// Sweep deletes the terminal tasks older than the retention period, in
// small transactions.
func (s *Service) Sweep(ctx context.Context) error { return s.sw.sweep(ctx) }

// rerun returns the function of rec, a task a restart cut short, if it is
// retry-safe and its owner may still call it; else nil.
func (s *Service) rerun(ctx context.Context, rec *Record) *functions.Function {
	if f, denial := s.authorize(ctx, rec.Caller(), rec.FunctionID); denial == "" && f.RetrySafe {
		return f
	}
	return nil
}

// resume starts the call of rec, resubmitted by recovery. A recovered
// call counts for its owner (anonymous ones in a group of their own), but
// is never refused: it was accepted before. False if the service is
// closed.
func (s *Service) resume(rec *Record, fn *functions.Function) bool {
	ck := callKey{owner: rec.Owner}
	if !s.ex.hold(ck) {
		return false
	}
	s.start(ck, rec, fn, nil)
	return true
}

// Close stops accepting calls, waits for running calls until ctx is done,
// then cancels the rest. A call cancelled this way leaves its task as it
// was, for recovery at the next start.
func (s *Service) Close(ctx context.Context) error {
	s.ex.Close(ctx)
	s.sw.Close()
	s.cancel(errShuttingDown)
	return nil
}

// Drain refuses new calls (ErrClosed) while running calls go on; blocking
// senders keep waiting for them until Close ends the runs.
func (s *Service) Drain() { s.ex.drain() }

// Send handles message/send for caller: it resolves the function the
// message names, checks exposure and input, stores the task (idempotently
// by messageId), starts the call and, when blocking, waits for the task to
// end or be interrupted. Errors: an *InputError for invalid params,
// ErrNotFound, ErrMessageIDReused, ErrTaskBusy, ErrBusy, ErrCallerBusy
// past caller.MaxCalls, ErrClosed, a
// *QuotaError past caller.Quota and a *TaskLimitError past
// caller.MaxHistory (nothing stored for either). The Outcome says what
// the policy decided, with an error too.
func (s *Service) Send(ctx context.Context, caller Caller, p a2a.SendParams) (*a2a.Task, Outcome, error) {
	blocking := p.Blocking == nil || *p.Blocking
	window := time.Duration(0)
	if blocking {
		window = min(speculationWindow, s.cfg.BlockingTimeout)
	}
	var out Outcome
	task, err := s.send(withOutcome(ctx, &out), caller, p, blocking, window)
	return task, out, err
}

// send is Send; window is how long a retry-safe call may run before its
// task is stored (0: store it first).
func (s *Service) send(ctx context.Context, caller Caller, p a2a.SendParams, blocking bool, window time.Duration) (*a2a.Task, error) {
	msg := p.Message
	key := KeyFor(caller.ID, &msg)
	key.Quota = caller.Quota
	// The answer holds the history the client asked for: reads of a task
	// with a long history leave the rest.
	sc := ScopeOf(p.HistoryLength, true)
	var (
		rec *Record
		err error
	)
	var sub *Subscription
	if msg.TaskID == "" {
		id := newID()
		if blocking {
			// Subscribe before the task exists, so that no event is
			// missed and the final one hands over the record.
			sub = s.broker.Subscribe(id, 8)
			defer s.broker.Unsubscribe(sub)
		}
		rec, err = s.sendNew(ctx, caller, &msg, p.PushConfig, key, id, window)
		if err == nil && rec.Task.ID != id {
			sub = nil // a duplicate: the task is another one
			s.met.IdempotentReplay()
		}
	} else {
		// A webhook sent with a message on an existing task is added to it
		// in the transaction that accepts the message (so it hears of what
		// the message leads to); a refused message changes nothing.
		var push *a2a.PushConfig
		if p.PushConfig != nil {
			cfg := *p.PushConfig
			if err := s.checkPushConfig(ctx, msg.TaskID, "/configuration/pushNotificationConfig", &cfg); err != nil {
				return nil, err
			}
			push = &cfg
		}
		rec, err = s.sendFollowUp(ctx, caller, &msg, key, push, sc)
	}
	if err != nil {
		return nil, err
	}
	if blocking && !settled(rec.State()) {
		rec = s.wait(ctx, rec, sub, sc)
	}
	t := rec.Task.WithHistoryLength(sc.History)
	return &t, nil
}

// settled reports whether a blocking send may return: the task ended or
// waits for the client.
func settled(st a2a.TaskState) bool { return st.Terminal() || st.Interrupted() }

// sendNew creates a task for a message that names none. Sends with the
// same key take turns (see flight).
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

// authorize asks the policy, at call time, whether caller may call id.
// It returns the function, or the text of a denial. Unknown and unexposed
// functions get the same text, so that callers cannot probe what exists.
func (s *Service) authorize(ctx context.Context, caller Caller, id string) (*functions.Function, string) {
	cat := s.cfg.Catalog()
	var fn *functions.Function
	d := s.cfg.Policy.Check(id, caller.Tiers, func(id string) (map[string]any, bool, error) {
		if cat == nil {
			return nil, false, errors.New("no catalogue loaded")
		}
		f, ok := cat.Lookup(id)
		if !ok {
			return nil, false, nil
		}
		fn = f
		return f.Metadata, true, nil
	})
	noteDecision(ctx, id, d.Reason)
	if d.Exposed {
		return fn, ""
	}
	ev := s.log.Info()
	if d.Reason == exposure.CatalogError {
		ev = s.log.Error()
	}
	if d.Reason == exposure.UnknownFunction {
		// Not an id of ours but whatever the caller sent: log its size,
		// never its text.
		ev = ev.Int("function_id_bytes", len(id))
	} else {
		ev = ev.Str("function_id", id)
	}
	ev.Str("caller", caller.ID).Str("reason", string(d.Reason)).Msg("call denied")
	if d.Reason == exposure.HiddenPrefix {
		return nil, fmt.Sprintf("Function '%s' is in a reserved namespace and is never exposed as an A2A skill", id)
	}
	return nil, fmt.Sprintf("Function '%s' is not an available skill", id)
}

// Skills lists the functions caller may call, in catalogue order.
func (s *Service) Skills(caller Caller) []*functions.Function {
	cat := s.cfg.Catalog()
	if cat == nil {
		return nil
	}
	var out []*functions.Function
	for _, f := range cat.Functions {
		if s.cfg.Policy.DecideFor(f.ID, f.Metadata, caller.Tiers).Exposed {
			out = append(out, f)
		}
	}
	return out
}

func validateInput(fn *functions.Function, input json.RawMessage) error {
	if fn.Input == nil {
		return nil
	}
	problems := fn.Input.Validate(input)
	if len(problems) == 0 {
		return nil
	}
	list := make([]a2a.Problem, len(problems))
	for i, p := range problems {
		list[i] = a2a.Problem{Path: p.Path, Message: p.Message}
	}
	return &InputError{Skill: fn.ID, Problems: list}
}

// skillsHint is the status message of a task that waits for a message
// naming a skill.
func (s *Service) skillsHint(caller Caller, taskID, contextID string) *a2a.Message {
	skills := s.Skills(caller)
	ids := make([]string, len(skills))
	list := make([]map[string]any, len(skills))
	for i, f := range skills {
		ids[i] = f.ID
		list[i] = map[string]any{"id": f.ID, "name": f.Name, "description": f.Description}
	}
	example := "<skill id>"
	if len(ids) > 0 {
		example = ids[0]
	}
	text := fmt.Sprintf("No skill named. Send a message with taskId %q and a data part "+
		`{"skill": %q, "input": {...}}, or text that starts with the skill id. Skills you may use: %s.`,
		taskID, example, strings.Join(ids, ", "))
	if len(ids) == 0 {
		text = "No skill named, and no skills are available to you."
	}
	data, _ := json.Marshal(map[string]any{"skills": list})
	m := agentText(taskID, contextID, text)
	m.Parts = append(m.Parts, a2a.DataPart(data))
	return m
}

func agentText(taskID, contextID, text string) *a2a.Message {
	return &a2a.Message{
		MessageID: newID(),
		TaskID:    taskID,
		ContextID: contextID,
		Role:      a2a.RoleAgent,
		Parts:     []a2a.Part{a2a.TextPart(text)},
	}
}

// FailureKey is the status message metadata key that classifies why a
// task failed, so that clients and the audit trail need not parse text.
const FailureKey = "a2ad.failure"

// The failure classes.
const (
	FailureInvoke      = "invoke_error"     // the function reported an error
	FailureTimeout     = "invoke_timeout"   // the call ran past its timeout
	FailureOutput      = "invalid_output"   // the output broke its schema
	FailureInterrupted = "interrupted"      // a restart cut the call short
	FailureTooLarge    = "output_too_large" // the output passed the task's artifact limit
)

// failure is the agent message of a failed task, with its class.
func failure(taskID, contextID, text, class string) *a2a.Message {
	m := agentText(taskID, contextID, text)
	m.Metadata = map[string]any{FailureKey: class}
	return m
}

func (s *Service) status(st a2a.TaskState, m *a2a.Message) a2a.TaskStatus {
	return a2a.TaskStatus{State: st, Message: m, Timestamp: a2a.Timestamp(s.cfg.Now())}
}

// move is advance at the service's clock: it moves r to st on on, if the
// state machine allows it (see transition for its errors).
func (s *Service) move(r *Record, on trigger, st a2a.TaskStatus) error {
	return advance(r, on, st, s.cfg.Now())
}

// Get returns caller's task id, with at most historyLength messages of
// history (nil: all). Errors: ErrNotFound.
func (s *Service) Get(ctx context.Context, caller Caller, id string, historyLength *int) (*a2a.Task, error) {
	rec, err := s.store.Get(ctx, caller.ID, id, ScopeOf(historyLength, true))
	if err != nil {
		return nil, err
	}
	t := rec.Task
	return &t, nil
}

// Cancel cancels caller's task id: it stores canceled first, then stops
// the running call. Errors: ErrNotFound, ErrNotCancelable.
func (s *Service) Cancel(ctx context.Context, caller Caller, id string) (*a2a.Task, error) {
	return s.cancelTask(ctx, caller, id, "Canceled by the client")
}

// CancelByOperator is Cancel on behalf of the operator, for the task's
// owner: the task's status says the operator canceled it.
func (s *Service) CancelByOperator(ctx context.Context, owner Caller, id string) (*a2a.Task, error) {
	return s.cancelTask(ctx, owner, id, "Canceled by the operator")
}

func (s *Service) cancelTask(ctx context.Context, caller Caller, id, text string) (*a2a.Task, error) {
	var status a2a.TaskStatus
	rec, events, _, err := s.store.Update(ctx, caller.ID, id, nil, Whole, func(r *Record) ([]Event, error) {
		status = s.status(a2a.StateCanceled, agentText(r.Task.ID, r.Task.ContextID, text))
		if err := s.move(r, onCancel, status); err != nil {
			return nil, err
		}
		return []Event{{Status: &status}}, nil
	})
	if err != nil {
		return nil, err
	}
	s.broker.Publish(id, withRecord(events, rec))
	s.ex.stop(id, errCanceledByClient)
	s.log.Info().Str("task_id", id).Str("caller", caller.ID).Msg("task canceled")
	t := rec.Task
	return &t, nil
}

// wait blocks until rec's task settles, the blocking cap passes or ctx
// ends, and returns the task as it then stands, with at least what sc
// asks for. sub, when not nil, is a subscription to the task made before
// it was stored.
func (s *Service) wait(ctx context.Context, rec *Record, sub *Subscription, sc Scope) *Record {
	id := rec.Task.ID
	timer := time.NewTimer(s.cfg.BlockingTimeout)
	defer timer.Stop()
	for {
		if sub == nil {
			sub = s.broker.Subscribe(id, 8)
			defer s.broker.Unsubscribe(sub)
			cur, err := s.store.Get(ctx, rec.Owner, id, sc)
			if err != nil {
				return rec
			}
			if rec = cur; settled(rec.State()) {
				return rec
			}
		}
		select {
		case e, ok := <-sub.C:
			switch {
			case !ok:
				sub = nil // dropped: read the store and subscribe again
			case e.Final() && e.rec != nil:
				return e.rec
			case e.Final():
				return s.current(ctx, rec, sc)
			}
		case <-timer.C:
			return s.current(ctx, rec, sc)
		case <-ctx.Done():
			return rec
		case <-s.ctx.Done():
			// Shutting down: answer with the task as it stands.
			return s.current(ctx, rec, sc)
		}
	}
}

// current reads rec's task again, with what sc asks for, or returns rec
// if that fails.
func (s *Service) current(ctx context.Context, rec *Record, sc Scope) *Record {
	if cur, err := s.store.Get(context.WithoutCancel(ctx), rec.Owner, rec.Task.ID, sc); err == nil {
		return cur
	}
	return rec
}

// newID returns a time-ordered (version 7) UUID: 48 bits of Unix
// milliseconds, then random bits. Ids created together sort together, so
// the store's B+tree takes new tasks at its right edge and a commit dirties
// few pages.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[6:])
	ms := uint64(time.Now().UnixMilli())
	b[0], b[1], b[2] = byte(ms>>40), byte(ms>>32), byte(ms>>24)
	b[3], b[4], b[5] = byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}
