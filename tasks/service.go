package tasks

// The Service is a façade: it takes the requests of the transport and
// hands each part of the work to the collaborator that owns it.
//
//   - state.go, the state machine: which trigger may move a task from
//     which state to which, and its rules (terminal is final, cancel wins,
//     a late result is discarded, input-required continues). Every status
//     change goes through advance, inside a store Update.
//   - send.go (and fast.go): taking a message, new task or follow-up;
//     flights (fast.go) let one send per messageId work at a time, and a
//     short call may run before its task is stored (speculation).
//   - skills.go and resolve.go: which function a message names, whether
//     the caller may call it (the exposure policy), and its input.
//   - executor.go, the executor: the places of calls (in all and per
//     caller), the concurrency slots, the cancel of each running call and
//     their lifetime; Close waits for them.
//   - run.go: what a call does to its task, step by step against the
//     store: start, progress, process group, result.
//   - sweeper.go, the sweeper: recovery at start and retention.
//   - Store (model.go): durability; the Broker (broker.go): committed
//     events to waiters and streams (stream.go); relay.go: on a Shared
//     store, the events other processes commit, to the broker, and
//     their cancels to the executor; push.go: webhooks;
//     quota.go: per-caller and per-task limits; list.go: listing.
//
// This file holds the service's configuration, its life (New, Start,
// Drain, Close) and the requests that read or cancel a task.

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

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
	// SharedPoll is how often, on a Shared store, the tasks of this
	// process's calls, streams and waiters are read again, in case a
	// notice of another process's commit was lost; default
	// DefaultSharedPoll. A store of one process needs none.
	SharedPoll time.Duration
	// Now returns the time; default time.Now.
	Now func() time.Time
	// Metrics receives the service's measurements; nil records none.
	Metrics Metrics
	// Tracer, when set, traces the work of each task under the span of
	// the request that asked for it (see SpanStoreCommit and the others);
	// nil traces nothing, at no cost.
	Tracer trace.Tracer
	// LeaseTTL is how long this replica's lease on the calls it runs
	// lasts without a heartbeat (one goes every third of it): once it
	// lapses, another replica on the store takes them over. Default 15s.
	LeaseTTL time.Duration
	// MaxTaskArtifactBytes caps the size of a task's artifacts (as
	// ArtifactBytes counts it); 0 is unlimited. A call whose output would
	// pass it fails its task, and the output is not stored.
	MaxTaskArtifactBytes int64
	// HistoryReadBytes caps the history one answer carries (a get, a
	// send's answer, a list page's tasks, a stream's first task, a
	// cancel's answer): of the messages historyLength asks for, the
	// newest that fit in it (see Scope.HistoryBytes). 0 is unlimited.
	HistoryReadBytes int64
	// ListPageBytes caps a list page: it ends early, with a token to go
	// on, before the task that would take it past this many bytes (see
	// Scope.ListBytes); its first task is always in it. 0 is unlimited.
	ListPageBytes int64
}

// Service runs tasks. It is safe for concurrent use.
type Service struct {
	cfg    Config
	store  Store
	broker *Broker
	log    zerolog.Logger
	met    Metrics

	ex      *executor // places, slots and runs of calls
	sw      *sweeper  // leases, recovery, retention
	relay   *relay    // other processes' commits on a shared store; nil if not shared
	flights flights   // one send at a time per messageId
	sm      machine   // the state machine at the service's clock
	ans     answers   // the shape of answers
	sk      skills    // what the catalogue offers a caller

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
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	store := cfg.Store
	if cfg.Tracer != nil {
		store = tracedStore{Store: store, tracer: cfg.Tracer}
	}
	s := &Service{
		cfg:    cfg,
		store:  store,
		broker: NewBroker(),
		log:    cfg.Logger,
		met:    cfg.Metrics,
		ex:     newExecutor(cfg.MaxConcurrent, cfg.MaxQueue),
		ctx:    ctx,
		cancel: cancel,
	}
	if sh, ok := cfg.Store.(Shared); ok {
		stop := func(id string) { s.ex.stop(id, errCanceledByClient) }
		s.relay = newRelay(sh, s.broker, stop, cfg.SharedPoll, cfg.Logger)
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
		// A new id at each start: a replica that comes back is another
		// one, and its predecessor's calls are orphans once its lease
		// lapses.
		lease:  &lease{ttl: cfg.LeaseTTL, id: newID()},
		ttl:    cfg.LeaseTTL,
		rerun:  s.rerun,
		resume: s.resume,
		ctx:    swCtx,
		cancel: swCancel,
	}
	if s.relay != nil {
		s.sw.fenced = func() { s.ex.stopAll(errFenced) }
	}
	s.sm.now, s.sm.lease = cfg.Now, s.sw.lease
	s.sk = skills{catalog: cfg.Catalog, policy: cfg.Policy, log: cfg.Logger}
	s.ans = answers{historyBytes: cfg.HistoryReadBytes, blockingTimeout: cfg.BlockingTimeout, catalog: cfg.Catalog}
	return s
}

// Broker returns the broker the service publishes committed events to.
func (s *Service) Broker() *Broker { return s.broker }

// DefaultLeaseTTL is Config.LeaseTTL's default.
const DefaultLeaseTTL = 15 * time.Second

// Start takes this replica's lease, recovers the tasks that replicas
// whose lease lapsed left unfinished (a previous process of this one
// among them), and starts the sweeper, which goes on doing both and
// deletes expired tasks, and on a Shared store the relay of other
// processes' commits.
func (s *Service) Start(ctx context.Context) error {
	if err := s.sw.heartbeat(ctx); err != nil {
		return err
	}
	s.relay.start()
	if err := s.sw.recover(ctx); err != nil {
		return fmt.Errorf("recover tasks: %w", err)
	}
	s.sw.start()
	return nil
}

// NotReady says why this replica takes no new work, "" while it does:
// its lease may have lapsed, and it has not renewed it yet (see lease).
func (s *Service) NotReady() string {
	if !s.sw.lease.held(time.Now()) {
		return "the replica's lease is not held: renewing it"
	}
	return ""
}

// Sweep deletes the terminal tasks older than the retention period, in
// small transactions.
func (s *Service) Sweep(ctx context.Context) error { return s.sw.sweep(ctx) }

// rerun returns the function of rec, a task a restart cut short, if it is
// retry-safe and its owner may still call it over some protocol (a
// record does not say which one it came over: a call the owner may make
// over either is its own to run again); else nil.
func (s *Service) rerun(ctx context.Context, rec *Record) *functions.Function {
	c := rec.Caller()
	for _, p := range exposure.Protocols {
		c.Protocol = p
		if f, d := s.sk.decide(c, rec.FunctionID); d.Exposed {
			if f.RetrySafe {
				return f
			}
			return nil
		}
	}
	s.sk.authorize(rec.Caller(), rec.FunctionID) // logs the denial
	return nil
}

// resume starts the call of rec, resubmitted by recovery and read with
// its whole history, from which recoveredCall tells the call's key and
// attempt. A recovered call counts for its owner (anonymous ones in a
// group of their own), but is never refused: it was accepted before.
// False if the service is closed.
func (s *Service) resume(rec *Record, fn *functions.Function) bool {
	ck := callKey{owner: rec.Owner}
	if !s.ex.hold(ck) {
		return false
	}
	// Recovered: no request to trace it under, no caller's quota.
	newRun(s, rec, recoveredCall(rec), fn, Quota{}).start(context.Background(), ck, nil)
	return true
}

// Close stops accepting calls, waits for running calls until ctx is done,
// then cancels the rest. A call cancelled this way leaves its task as it
// was, and the replica's lease ends: another replica recovers it at once,
// or this one at its next start. It reports the calls it cut as a
// *CutError, nil when every call ended within ctx.
func (s *Service) Close(ctx context.Context) error {
	cut := s.ex.Close(ctx)
	s.relay.close() // after the calls: a cancel elsewhere stops them until then
	s.sw.Close()
	s.sw.release()
	s.cancel(errShuttingDown)
	if cut != nil {
		return &CutError{Calls: cut}
	}
	return nil
}

// Drain refuses new calls (ErrClosed) while running calls go on, and
// waits until they have ended or ctx is done (then it returns ctx's
// error; Close ends the runs). At once and then every second, it logs how
// many calls it waits for, per function.
func (s *Service) Drain(ctx context.Context) error {
	idle := s.ex.drain()
	t := time.NewTicker(drainLogEvery)
	defer t.Stop()
	for {
		select {
		case <-idle:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		s.ex.logDrain(ctx, s.log)
		select {
		case <-idle:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

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
	blocking, window := s.ans.window(p)
	var out Outcome
	rec, err := s.send(ctx, caller, p, blocking, window, &out)
	if err != nil {
		return nil, out, err
	}
	t := s.ans.task(rec, p.HistoryLength)
	return &t, out, nil
}

// send is Send; window is how long a retry-safe call may run before its
// task is stored (0: store it first); the policy's decision goes to out.
// The record it returns holds what Send answers with.
func (s *Service) send(ctx context.Context, caller Caller, p a2a.SendParams, blocking bool, window time.Duration, out *Outcome) (*Record, error) {
	// A replica that may have lost its lease takes no work until it
	// holds one again: another replica could adopt the call at once.
	if err := s.sw.ensure(ctx); err != nil {
		return nil, err
	}
	msg := p.Message
	in := &incoming{s: s, caller: caller, msg: &msg, out: out}
	key, err := in.windowed(ctx, caller.IdemWindow, KeyFor(caller.ID, &msg))
	if err != nil {
		return nil, err
	}
	key.Quota = caller.Quota
	in.key = key
	// The answer holds the history the client asked for: reads of a task
	// with a long history leave the rest.
	sc := s.ans.scope(p.HistoryLength, true)
	var rec *Record
	var sub *Subscription
	if msg.TaskID == "" {
		id := newID()
		// Subscribed before the task is stored (see watch), so that no
		// event is missed and the final one hands over the record.
		in.wait = blocking
		defer func() {
			if in.sub != nil {
				s.broker.Unsubscribe(in.sub)
			}
		}()
		in.push = p.PushConfig
		rec, err = in.sendNew(ctx, id, window)
		sub = in.sub
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
			if err := checkPushConfig(ctx, s.cfg.PushGuard, msg.TaskID, "/configuration/pushNotificationConfig", &cfg); err != nil {
				return nil, err
			}
			push = &cfg
		}
		in.push = push
		rec, err = in.sendFollowUp(ctx, sc)
	}
	if err != nil {
		return nil, err
	}
	if blocking && !settled(rec.State()) {
		rec = s.wait(ctx, rec, sub, sc)
	}
	return rec, nil
}

// settled reports whether a blocking send may return: the task ended or
// waits for the client.
func settled(st a2a.TaskState) bool { return st.Terminal() || st.Interrupted() }

// Get returns caller's task id, with at most historyLength messages of
// history (nil: all). Errors: ErrNotFound.
func (s *Service) Get(ctx context.Context, caller Caller, id string, historyLength *int) (*a2a.Task, error) {
	rec, err := s.store.Get(ctx, caller.ID, id, s.ans.scope(historyLength, true))
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
	rec, events, _, err := s.store.Update(ctx, caller.ID, id, nil, s.ans.scope(nil, true), func(r *Record) ([]Event, error) {
		status = s.sm.status(a2a.StateCanceled, agentText(r.Task.ID, r.Task.ContextID, text))
		if err := s.sm.move(r, onCancel, status); err != nil {
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
	// The call may run in another process (a duplicate sent here).
	defer s.relay.follow(id, rec.Seq)()
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
