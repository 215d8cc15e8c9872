package metrics

import (
	"context"
	"fmt"
	"maps"
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

// Outbox is what a scrape reads of the push outbox: a subset of
// tasks.Backend (of its tasks.Gauges).
type Outbox interface {
	// OutboxDepth counts the deliveries waiting.
	OutboxDepth(ctx context.Context) (int, error)
	// DeadLetterCount counts the deliveries given up on.
	DeadLetterCount(ctx context.Context) (int, error)
}

var _ Outbox = tasks.Backend(nil)

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
	own []prometheus.Collector // a2ad's own metrics, for Describe

	methods  map[string]string // a known method → its label
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	reqs     childCache[reqKey, reqChild]

	tasks       map[a2a.TaskState]prometheus.Gauge   // non-terminal states only
	transitions map[a2a.TaskState]prometheus.Counter // every state
	transVec    *prometheus.CounterVec

	running, queued *prometheus.GaugeVec
	fns             childCache[string, fnChild]

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

type reqKey struct{ transport, method, outcome, reason string }

type reqChild struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

type fnChild struct{ running, queued prometheus.Gauge }

var _ tasks.Metrics = (*Metrics)(nil)

// childCache holds the metrics resolved for each label set seen, so that
// a hook resolves its labels once: readers take no lock; a miss resolves
// under mu and publishes a copy of the map with the new entry.
type childCache[K comparable, V any] struct {
	mu sync.Mutex // serialises add
	p  atomic.Pointer[map[K]V]
}

// load returns the entry of k, if there is one.
func (c *childCache[K, V]) load(k K) (V, bool) {
	if p := c.p.Load(); p != nil {
		v, ok := (*p)[k]
		return v, ok
	}
	var zero V
	return zero, false
}

// add returns the entry of k, making it with resolve if there is none.
func (c *childCache[K, V]) add(k K, resolve func() V) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	var old map[K]V
	if p := c.p.Load(); p != nil {
		old = *p
	}
	if v, ok := old[k]; ok {
		return v
	}
	v := resolve()
	next := make(map[K]V, len(old)+1)
	maps.Copy(next, old)
	next[k] = v
	c.p.Store(&next)
	return v
}

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
	build := gaugeVec("a2ad_build_info", "Always 1, labelled with a2ad's version.", "version")
	build.WithLabelValues(opts.Version).Set(1)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.register(build)
	m.register(m.newRequestMetrics()...)
	m.register(m.newTaskMetrics()...)
	m.register(m.newPushMetrics()...)
	m.register(m.newConnMetrics()...)
	// The outbox gauges are registered once the store is open
	// (WatchOutbox); they are described with the others all along.
	m.own = append(m.own, &outboxCollector{})
	return m
}

// register registers cs, a2ad's own metrics.
func (m *Metrics) register(cs ...prometheus.Collector) {
	m.reg.MustRegister(cs...)
	m.own = append(m.own, cs...)
}

// Describe sends the descriptions of a2ad's own metrics (not the Go
// runtime's and the process's), whether or not they have samples yet:
// the reference (docs/reference/metrics.md) is written from them.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.own {
		c.Describe(ch)
	}
}

// The constructors of New's metrics: a name, a help text and labels.

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

func histogram(name, help string, buckets []float64) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

// newRequestMetrics makes the metrics of JSON-RPC calls and of the
// limits that refuse them, and returns them to register.
func (m *Metrics) newRequestMetrics() []prometheus.Collector {
	m.requests = counterVec("a2ad_requests_total",
		"A2A and MCP calls, by binding (transport: jsonrpc, rest, grpc, mcp), method (\"other\" for any method a2ad does not know; the 1.0 method names over rest and grpc, MCP's over mcp), outcome and reason, as the audit trail classifies them.",
		"transport", "method", "outcome", "reason")
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "a2ad_request_duration_seconds",
		Help:    "Duration of A2A calls, by binding (transport), method and outcome; a stream's lasts until it ends.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"transport", "method", "outcome"})
	rejections := counterVec("a2ad_rate_limit_rejections_total",
		"Requests refused by a limit: rate (a caller's token bucket), caller_in_flight, server_in_flight or bytes (a caller's budget of request bytes).",
		"limit")
	for i, l := range []string{"rate", "caller_in_flight", "server_in_flight", "bytes"} {
		m.rejections[i] = rejections.WithLabelValues(l)
	}
	return []prometheus.Collector{m.requests, m.duration, rejections}
}

// newTaskMetrics makes the metrics of tasks, calls, the store and
// streams, and returns them to register.
func (m *Metrics) newTaskMetrics() []prometheus.Collector {
	taskVec := gaugeVec("a2ad_tasks",
		"Tasks that are not terminal, by state. Terminal tasks are not counted here: see a2ad_task_transitions_total.", "state")
	m.transVec = counterVec("a2ad_task_transitions_total",
		"Tasks that entered each state since a2ad started: every new task enters submitted, whatever state it is first stored in (a quick call's first is completed).", "state")
	m.tasks = make(map[a2a.TaskState]prometheus.Gauge, len(activeStates))
	for _, st := range activeStates {
		m.tasks[st] = taskVec.WithLabelValues(string(st))
	}
	m.transitions = make(map[a2a.TaskState]prometheus.Counter, len(allStates))
	for _, st := range allStates {
		m.transitions[st] = m.transVec.WithLabelValues(string(st))
	}

	m.running = gaugeVec("a2ad_calls_running", "Function calls running, by catalogue function.", "function")
	m.queued = gaugeVec("a2ad_calls_queued", "Function calls waiting for a free slot, by catalogue function.", "function")

	m.commitDuration = histogram("a2ad_store_commit_duration_seconds",
		"Duration of task store commits, fsync included.", prometheus.ExponentialBuckets(0.0001, 2.5, 12))
	m.writesPerCommit = histogram("a2ad_store_writes_per_commit",
		"Writes grouped into one task store commit, which share its one fsync.", prometheus.ExponentialBuckets(1, 2, 9))

	m.replays = counter("a2ad_idempotent_replays_total",
		"Messages answered with the task an earlier message with the same messageId created: nothing ran again.")
	m.subscribers = gauge("a2ad_stream_subscribers", "Streams watching a task now.")
	m.replayedEvents = counter("a2ad_stream_replayed_events_total",
		"Events sent to streams from the store rather than live: resumed streams and catch-ups.")
	m.slowDropped = counter("a2ad_stream_slow_subscribers_dropped_total",
		"Streams cut off because they fell too far behind their task's events.")
	return []prometheus.Collector{taskVec, m.transVec, m.running, m.queued, m.commitDuration, m.writesPerCommit,
		m.replays, m.subscribers, m.replayedEvents, m.slowDropped}
}

// newPushMetrics makes the metrics of push deliveries and returns them to
// register.
func (m *Metrics) newPushMetrics() []prometheus.Collector {
	m.pushAttempts = counterVec("a2ad_push_attempts_total",
		"Push notification delivery attempts, by outcome: delivered, transient_error (retried) or permanent_error.", "outcome")
	m.pushOutcomes = map[string]prometheus.Counter{}
	for _, o := range []string{"delivered", "transient_error", "permanent_error"} {
		m.pushOutcomes[o] = m.pushAttempts.WithLabelValues(o)
	}
	m.pushDuration = histogram("a2ad_push_attempt_duration_seconds",
		"Duration of push notification delivery attempts.", prometheus.DefBuckets)
	m.pushDeadTotal = counter("a2ad_push_dead_lettered_total",
		"Push notification deliveries given up on (dead-lettered) since a2ad started.")
	return []prometheus.Collector{m.pushAttempts, m.pushDuration, m.pushDeadTotal}
}

// newConnMetrics makes the metrics of the listeners' connections, with a
// series for every listener from the start, and returns them to register.
func (m *Metrics) newConnMetrics() []prometheus.Collector {
	m.connsOpen = gaugeVec("a2ad_connections_open",
		"Connections open now, by listener: main (the A2A port) or admin.", "listener")
	m.connsRefused = counterVec("a2ad_connections_refused_total",
		"Connections closed as soon as accepted because their client address had --max-conns-per-ip open, by listener.", "listener")
	m.acceptPauses = counterVec("a2ad_accept_pauses_total",
		"Times a listener stopped accepting for a while, by listener and reason: max_conns (the cap of open connections) or accept_error (out of file descriptors or memory; retried with backoff).",
		"listener", "reason")
	for _, l := range Listeners {
		m.connsOpen.WithLabelValues(l)
		m.connsRefused.WithLabelValues(l)
		for _, r := range []string{"max_conns", "accept_error"} {
			m.acceptPauses.WithLabelValues(l, r)
		}
	}
	return []prometheus.Collector{m.connsOpen, m.connsRefused, m.acceptPauses}
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

// transports are the bindings' names, the transport label's values (any
// other is "other").
var transports = map[string]bool{"jsonrpc": true, "rest": true, "grpc": true, "mcp": true}

// Request counts one A2A call: the binding it came over, method as the
// caller sent it, outcome and reason from the audit trail's fixed sets.
func (m *Metrics) Request(transport, method, outcome, reason string, d time.Duration) {
	label, ok := m.methods[method]
	if !ok {
		label = OtherMethod
	}
	if !transports[transport] {
		transport = OtherMethod
	}
	k := reqKey{transport, label, outcome, reason}
	c, ok := m.reqs.load(k)
	if !ok {
		c = m.reqs.add(k, func() reqChild {
			return reqChild{
				count:    m.requests.WithLabelValues(k.transport, k.method, k.outcome, k.reason),
				duration: m.duration.WithLabelValues(k.transport, k.method, k.outcome),
			}
		})
	}
	c.count.Inc()
	c.duration.Observe(d.Seconds())
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
	c, ok := m.transitions[to]
	if !ok {
		return
	}
	// A task is born submitted (the A2A lifecycle), though a2ad may store
	// it first as working, or done: count its birth there too.
	if from == "" && to != a2a.StateSubmitted {
		m.transitions[a2a.StateSubmitted].Inc()
	}
	c.Inc()
}

// Commit records one store commit of writes grouped writes.
func (m *Metrics) Commit(writes int, d time.Duration) {
	m.commitDuration.Observe(d.Seconds())
	m.writesPerCommit.Observe(float64(writes))
}

func (m *Metrics) fn(id string) fnChild {
	if c, ok := m.fns.load(id); ok {
		return c
	}
	return m.fns.add(id, func() fnChild {
		return fnChild{running: m.running.WithLabelValues(id), queued: m.queued.WithLabelValues(id)}
	})
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
var Listeners = []string{"main", "admin", "grpc"}

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
