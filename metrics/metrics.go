package metrics

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// OtherMethod is the method label of a request whose method is not one
// of Options.Methods (or that was refused before its method was read).
const OtherMethod = "other"

// Outbox is what a scrape reads of the push outbox.
type Outbox interface {
	// OutboxDepth counts the deliveries waiting.
	OutboxDepth(ctx context.Context) (int, error)
	// DeadLetterCount counts the deliveries given up on.
	DeadLetterCount(ctx context.Context) (int, error)
}

// Options configure a Metrics.
type Options struct {
	// Methods are the JSON-RPC methods that get a method label of their
	// own; any other method is counted as OtherMethod.
	Methods []string
	// Version is a2ad's version, for a2ad_build_info.
	Version string
	// Logger logs the errors of a scrape.
	Logger zerolog.Logger
}

// scrapeTimeout bounds the outbox reads of one scrape.
const scrapeTimeout = 5 * time.Second

// Metrics holds a2ad's metrics on a registry of its own (plus the Go and
// process collectors). Its hooks are safe for concurrent use and, once a
// label set has been seen, allocate nothing.
type Metrics struct {
	reg *prometheus.Registry
	log zerolog.Logger

	methods  map[string]string // a known method → its label
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	reqMu    sync.Mutex // serialises additions to reqCache
	reqCache atomic.Pointer[map[reqKey]reqChild]

	tasks       map[a2a.TaskState]prometheus.Gauge   // non-terminal states only
	transitions map[a2a.TaskState]prometheus.Counter // every state
	transVec    *prometheus.CounterVec

	running, queued *prometheus.GaugeVec
	fnMu            sync.Mutex // serialises additions to fnCache
	fnCache         atomic.Pointer[map[string]fnChild]

	commitDuration  prometheus.Histogram
	writesPerCommit prometheus.Histogram

	replays        prometheus.Counter
	subscribers    prometheus.Gauge
	replayedEvents prometheus.Counter
	slowDropped    prometheus.Counter

	pushAttempts  *prometheus.CounterVec
	pushOutcomes  map[string]prometheus.Counter
	pushDuration  prometheus.Histogram
	pushDeadTotal prometheus.Counter

	rejections [4]prometheus.Counter // rate, caller_in_flight, server_in_flight, bytes

	connsOpen    *prometheus.GaugeVec
	connsRefused *prometheus.CounterVec
	acceptPauses *prometheus.CounterVec
}

type reqKey struct{ method, outcome, reason string }

type reqChild struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

type fnChild struct{ running, queued prometheus.Gauge }

var _ tasks.Metrics = (*Metrics)(nil)

// The states a2ad_tasks and a2ad_task_transitions_total have labels for.
var (
	activeStates = []a2a.TaskState{a2a.StateSubmitted, a2a.StateWorking, a2a.StateInputRequired, a2a.StateAuthRequired}
	allStates    = append(append([]a2a.TaskState(nil), activeStates...),
		a2a.StateCompleted, a2a.StateCanceled, a2a.StateFailed, a2a.StateRejected)
)

// New returns a Metrics with every metric registered.
func New(opts Options) *Metrics {
	m := &Metrics{
		reg:     prometheus.NewRegistry(),
		log:     opts.Logger,
		methods: make(map[string]string, len(opts.Methods)),
	}
	for _, name := range opts.Methods {
		m.methods[name] = name
	}
	m.reqCache.Store(&map[reqKey]reqChild{})
	m.fnCache.Store(&map[string]fnChild{})

	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "a2ad_requests_total",
		Help: "JSON-RPC calls to /a2a, by method (\"other\" for any method a2ad does not know), outcome and reason, as the audit trail classifies them.",
	}, []string{"method", "outcome", "reason"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "a2ad_request_duration_seconds",
		Help:    "Duration of JSON-RPC calls to /a2a, by method and outcome; a stream's lasts until it ends.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"method", "outcome"})

	taskVec := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "a2ad_tasks",
		Help: "Tasks that are not terminal, by state. Terminal tasks are not counted here: see a2ad_task_transitions_total.",
	}, []string{"state"})
	m.transVec = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "a2ad_task_transitions_total",
		Help: "Tasks that entered each state (new tasks included), since a2ad started.",
	}, []string{"state"})
	m.tasks = make(map[a2a.TaskState]prometheus.Gauge, len(activeStates))
	for _, st := range activeStates {
		m.tasks[st] = taskVec.WithLabelValues(string(st))
	}
	m.transitions = make(map[a2a.TaskState]prometheus.Counter, len(allStates))
	for _, st := range allStates {
		m.transitions[st] = m.transVec.WithLabelValues(string(st))
	}

	m.running = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "a2ad_calls_running",
		Help: "Function calls running, by catalogue function.",
	}, []string{"function"})
	m.queued = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "a2ad_calls_queued",
		Help: "Function calls waiting for a free slot, by catalogue function.",
	}, []string{"function"})

	m.commitDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "a2ad_store_commit_duration_seconds",
		Help:    "Duration of task store commits, fsync included.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 12),
	})
	m.writesPerCommit = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "a2ad_store_writes_per_commit",
		Help:    "Writes grouped into one task store commit, which share its one fsync.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 9),
	})

	m.replays = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "a2ad_idempotent_replays_total",
		Help: "Messages answered with the task an earlier message with the same messageId created: nothing ran again.",
	})
	m.subscribers = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "a2ad_stream_subscribers",
		Help: "Streams watching a task now.",
	})
	m.replayedEvents = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "a2ad_stream_replayed_events_total",
		Help: "Events sent to streams from the store rather than live: resumed streams and catch-ups.",
	})
	m.slowDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "a2ad_stream_slow_subscribers_dropped_total",
		Help: "Streams cut off because they fell too far behind their task's events.",
	})

	m.pushAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "a2ad_push_attempts_total",
		Help: "Push notification delivery attempts, by outcome: delivered, transient_error (retried) or permanent_error.",
	}, []string{"outcome"})
	m.pushOutcomes = map[string]prometheus.Counter{}
	for _, o := range []string{"delivered", "transient_error", "permanent_error"} {
		m.pushOutcomes[o] = m.pushAttempts.WithLabelValues(o)
	}
	m.pushDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "a2ad_push_attempt_duration_seconds",
		Help:    "Duration of push notification delivery attempts.",
		Buckets: prometheus.DefBuckets,
	})
	m.pushDeadTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "a2ad_push_dead_lettered_total",
		Help: "Push notification deliveries given up on (dead-lettered) since a2ad started.",
	})

	rejections := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "a2ad_rate_limit_rejections_total",
		Help: "Requests refused by a limit: rate (a caller's token bucket), caller_in_flight, server_in_flight or bytes (a caller's budget of request bytes).",
	}, []string{"limit"})
	for i, l := range []string{"rate", "caller_in_flight", "server_in_flight", "bytes"} {
		m.rejections[i] = rejections.WithLabelValues(l)
	}

	m.connsOpen = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "a2ad_connections_open",
		Help: "Connections open now, by listener: main (the A2A port) or admin.",
	}, []string{"listener"})
	m.connsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "a2ad_connections_refused_total",
		Help: "Connections closed as soon as accepted because their client address had --max-conns-per-ip open, by listener.",
	}, []string{"listener"})
	m.acceptPauses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "a2ad_accept_pauses_total",
		Help: "Times a listener stopped accepting for a while, by listener and reason: max_conns (the cap of open connections) or accept_error (out of file descriptors or memory; retried with backoff).",
	}, []string{"listener", "reason"})
	for _, l := range Listeners {
		m.connsOpen.WithLabelValues(l)
		m.connsRefused.WithLabelValues(l)
		for _, r := range []string{"max_conns", "accept_error"} {
			m.acceptPauses.WithLabelValues(l, r)
		}
	}

	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "a2ad_build_info",
		Help: "Always 1, labelled with a2ad's version.",
	}, []string{"version"})
	build.WithLabelValues(opts.Version).Set(1)

	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		build,
		m.requests, m.duration,
		taskVec, m.transVec,
		m.running, m.queued,
		m.commitDuration, m.writesPerCommit,
		m.replays, m.subscribers, m.replayedEvents, m.slowDropped,
		m.pushAttempts, m.pushDuration, m.pushDeadTotal,
		rejections,
		m.connsOpen, m.connsRefused, m.acceptPauses,
	)
	return m
}

// WatchOutbox adds the outbox gauges, read from o at each scrape. Call it
// once, when the store is open.
func (m *Metrics) WatchOutbox(o Outbox) {
	m.reg.MustRegister(&outboxCollector{outbox: o})
}

// Registry is the registry the metrics are on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition format. A
// metric that cannot be read (the outbox, while the store is closed) is
// left out and logged; the others are served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:            logAdapter{m.log},
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            m.reg,
		MaxRequestsInFlight: 4,
		Timeout:             2 * scrapeTimeout,
	})
}

type logAdapter struct{ log zerolog.Logger }

func (l logAdapter) Println(v ...any) {
	l.log.Warn().Str("error", fmt.Sprint(v...)).Msg("metrics scrape")
}

// Request counts one JSON-RPC call: method as the caller sent it, outcome
// and reason from the audit trail's fixed sets.
func (m *Metrics) Request(method, outcome, reason string, d time.Duration) {
	label, ok := m.methods[method]
	if !ok {
		label = OtherMethod
	}
	k := reqKey{label, outcome, reason}
	c, ok := (*m.reqCache.Load())[k]
	if !ok {
		c = m.addRequestChild(k)
	}
	c.count.Inc()
	c.duration.Observe(d.Seconds())
}

// addRequestChild resolves k's metrics once; readers of the cache take
// no lock.
func (m *Metrics) addRequestChild(k reqKey) reqChild {
	m.reqMu.Lock()
	defer m.reqMu.Unlock()
	old := *m.reqCache.Load()
	if c, ok := old[k]; ok {
		return c
	}
	c := reqChild{
		count:    m.requests.WithLabelValues(k.method, k.outcome, k.reason),
		duration: m.duration.WithLabelValues(k.method, k.outcome),
	}
	next := make(map[reqKey]reqChild, len(old)+1)
	for key, v := range old {
		next[key] = v
	}
	next[k] = c
	m.reqCache.Store(&next)
	return c
}

// AddTasks adds counts of non-terminal tasks by state, as the store holds
// them at start (boltstore's ActiveStates).
func (m *Metrics) AddTasks(counts map[a2a.TaskState]int) {
	for st, n := range counts {
		if g, ok := m.tasks[st]; ok {
			g.Add(float64(n))
		}
	}
}

// Transition counts a committed change of a task's state; from is "" for
// a new task.
func (m *Metrics) Transition(from, to a2a.TaskState) {
	if g, ok := m.tasks[from]; ok {
		g.Dec()
	}
	if g, ok := m.tasks[to]; ok {
		g.Inc()
	}
	if c, ok := m.transitions[to]; ok {
		c.Inc()
	}
}

// Commit records one store commit of writes grouped writes.
func (m *Metrics) Commit(writes int, d time.Duration) {
	m.commitDuration.Observe(d.Seconds())
	m.writesPerCommit.Observe(float64(writes))
}

func (m *Metrics) fn(id string) fnChild {
	if c, ok := (*m.fnCache.Load())[id]; ok {
		return c
	}
	m.fnMu.Lock()
	defer m.fnMu.Unlock()
	old := *m.fnCache.Load()
	if c, ok := old[id]; ok {
		return c
	}
	c := fnChild{running: m.running.WithLabelValues(id), queued: m.queued.WithLabelValues(id)}
	next := make(map[string]fnChild, len(old)+1)
	for key, v := range old {
		next[key] = v
	}
	next[id] = c
	m.fnCache.Store(&next)
	return c
}

// CallQueued implements tasks.Metrics.
func (m *Metrics) CallQueued(functionID string, delta int) {
	m.fn(functionID).queued.Add(float64(delta))
}

// CallRunning implements tasks.Metrics.
func (m *Metrics) CallRunning(functionID string, delta int) {
	m.fn(functionID).running.Add(float64(delta))
}

// IdempotentReplay implements tasks.Metrics.
func (m *Metrics) IdempotentReplay() { m.replays.Inc() }

// Subscribers implements tasks.Metrics.
func (m *Metrics) Subscribers(delta int) { m.subscribers.Add(float64(delta)) }

// ReplayedEvents implements tasks.Metrics.
func (m *Metrics) ReplayedEvents(n int) {
	if n > 0 {
		m.replayedEvents.Add(float64(n))
	}
}

// SlowSubscriberDropped implements tasks.Metrics.
func (m *Metrics) SlowSubscriberDropped() { m.slowDropped.Inc() }

// PushAttempt counts one push delivery attempt: outcome is one of push's
// Attempt constants, dead tells that it dead-lettered the delivery.
func (m *Metrics) PushAttempt(outcome string, dead bool, d time.Duration) {
	c, ok := m.pushOutcomes[outcome]
	if !ok {
		c = m.pushOutcomes["permanent_error"] // the fixed set has no other
	}
	c.Inc()
	m.pushDuration.Observe(d.Seconds())
	if dead {
		m.pushDeadTotal.Inc()
	}
}

// Rejected counts a request refused by a limit: a caller's rate, else its
// in-flight cap, or the server's when serverWide.
func (m *Metrics) Rejected(rateLimited, serverWide bool) {
	switch {
	case rateLimited:
		m.rejections[0].Inc()
	case serverWide:
		m.rejections[2].Inc()
	default:
		m.rejections[1].Inc()
	}
}

// RejectedBytes counts a request refused by its caller's budget of
// request bytes.
func (m *Metrics) RejectedBytes() { m.rejections[3].Inc() }

// Listeners are the values of the listener label.
var Listeners = []string{"main", "admin"}

// ListenerHooks feed one listener's connection metrics.
type ListenerHooks struct {
	// Open counts a connection opened (+1) or closed (-1).
	Open func(delta int)
	// Refused counts a connection closed at once for its address's cap.
	Refused func()
	// Paused counts a pause in accepting: at the cap of open connections
	// when maxConns, else after an accept error.
	Paused func(maxConns bool)
}

// Listener returns the hooks of the listener called name, one of
// Listeners. It panics on another name: label values come from a fixed
// set.
func (m *Metrics) Listener(name string) ListenerHooks {
	known := false
	for _, l := range Listeners {
		known = known || l == name
	}
	if !known {
		panic("metrics: unknown listener " + name)
	}
	open := m.connsOpen.WithLabelValues(name)
	refused := m.connsRefused.WithLabelValues(name)
	atMax := m.acceptPauses.WithLabelValues(name, "max_conns")
	onError := m.acceptPauses.WithLabelValues(name, "accept_error")
	return ListenerHooks{
		Open:    func(delta int) { open.Add(float64(delta)) },
		Refused: refused.Inc,
		Paused: func(maxConns bool) {
			if maxConns {
				atMax.Inc()
			} else {
				onError.Inc()
			}
		},
	}
}

// outboxCollector reads the outbox's gauges at scrape time: two bucket
// counts, which walk pages rather than decode values.
type outboxCollector struct{ outbox Outbox }

var (
	outboxDepthDesc = prometheus.NewDesc("a2ad_push_outbox_depth",
		"Push notification deliveries waiting in the outbox (due now or later).", nil, nil)
	deadLettersDesc = prometheus.NewDesc("a2ad_push_dead_letters",
		"Push notification deliveries given up on and kept for the operator (GET /admin/push/dead-letters).", nil, nil)
)

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- outboxDepthDesc
	ch <- deadLettersDesc
}

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	for _, g := range []struct {
		desc *prometheus.Desc
		read func(context.Context) (int, error)
	}{
		{outboxDepthDesc, c.outbox.OutboxDepth},
		{deadLettersDesc, c.outbox.DeadLetterCount},
	} {
		n, err := g.read(ctx)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(g.desc, err)
			continue
		}
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(n))
	}
}
