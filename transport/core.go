package transport

import (
	"context"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/audit"
	"github.com/a2ad/a2ad/tasks"
)

// TaskService is what the core needs of the task service.
type TaskService interface {
	// Send's audit.Outcome (what the policy decided) goes into the audit record.
	Send(ctx context.Context, caller tasks.Caller, p a2a.SendParams) (*a2a.Task, tasks.Outcome, error)
	Get(ctx context.Context, caller tasks.Caller, id string, historyLength *int) (*a2a.Task, error)
	Cancel(ctx context.Context, caller tasks.Caller, id string) (*a2a.Task, error)
}

// StreamService is what the streaming methods need of the task service.
type StreamService interface {
	Stream(ctx context.Context, caller tasks.Caller, p a2a.SendParams, after *uint64, emit func(tasks.StreamEvent) error) (tasks.Outcome, error)
	Watch(ctx context.Context, caller tasks.Caller, id string, after *uint64, emit func(tasks.StreamEvent) error) error
	// Subscribe is Watch up to the task's terminal state, through its
	// interruptions (see tasks.Service.Subscribe).
	Subscribe(ctx context.Context, caller tasks.Caller, id string, after *uint64, emit func(tasks.StreamEvent) error) error
}

// PushService is what the push config methods need of the task service.
type PushService interface {
	SetPushConfig(ctx context.Context, caller tasks.Caller, taskID string, cfg a2a.PushConfig) (*a2a.TaskPushConfig, error)
	PushConfig(ctx context.Context, caller tasks.Caller, taskID, configID string) (*a2a.TaskPushConfig, error)
	PushConfigList(ctx context.Context, caller tasks.Caller, taskID string) ([]a2a.TaskPushConfig, error)
	DeletePushConfig(ctx context.Context, caller tasks.Caller, taskID, configID string) error
}

// Lister is what listing needs of the task service.
type Lister interface {
	List(ctx context.Context, caller tasks.Caller, q tasks.ListQuery) (tasks.ListPage, error)
}

// Card is a built agent card, as served: JSON for the well-known path
// and 0.3, V1JSON (a 1.0 AgentCard alone) for the 1.0 bindings' extended
// card.
type Card struct {
	JSON   []byte
	V1JSON []byte
	// ByVersion says that the well-known path answers V1JSON to a
	// request that asks for 1.0 (see VersionAsked), JSON to the others.
	ByVersion bool
	ETag      string
	// Modified is when the card last changed; zero for unknown.
	Modified time.Time
}

// DefaultMaxBodyBytes caps a request body.
const DefaultMaxBodyBytes = 1 << 20

// DefaultKeepAlive is the interval of SSE comment keep-alives.
const DefaultKeepAlive = 15 * time.Second

// Config wires a Core.
type Config struct {
	Tasks TaskService
	// Auth authenticates calls. Nil serves every call as the caller
	// Caller returns.
	Auth Authenticator
	// Caller identifies who sent a request when Auth is nil; nil means
	// the anonymous caller.
	Caller func(r *http.Request) tasks.Caller
	// Admit applies rate limits and in-flight caps; nil admits all.
	Admit Admitter
	// Answers bounds the bytes of each caller's answers to reads in
	// flight (get, list: a send or cancel, which change a task, is never
	// refused after the change); nil does not.
	Answers AnswerAdmitter
	// AnswerReserve is the room a get or list holds among its caller's
	// answers in flight while it reads (the largest history it may
	// return); 0 holds none until the answer is read.
	AnswerReserve int64
	// Bytes limits the bytes of each caller's request bodies; nil does
	// not.
	Bytes ByteMeter
	// TrustedProxies are the peers whose X-Forwarded-For and Forwarded
	// headers name the client (see ClientAddr); empty trusts none.
	TrustedProxies []netip.Prefix
	// Throttle limits failed authentications per client address; nil
	// does not.
	Throttle AuthThrottle
	// Revoked reports whether a principal's credentials no longer hold
	// (a key revoked, disabled or removed). A stream of such a principal
	// is ended at its start, and by EndRevokedStreams. Nil: never.
	Revoked func(p Principal) bool
	// Audit receives one record per call (see End); nil writes none.
	Audit *zerolog.Logger
	// Refusals summarises the audit records of refusals a caller can
	// repeat at will (its rate and in-flight limits, the server's cap,
	// its bytes, the calls gRPC ends before a handler): Refused counts
	// one of key's and says how many a record written now stands for, 0
	// when none is due. Nil audits every refusal in full.
	Refusals RefusalReports
	// Observe, when set, is called once per call with what its audit
	// record says: the binding ("jsonrpc", "rest", "grpc"), the method
	// as the caller named it (map it to a known name before using it as
	// a label), the outcome, the reason and the duration (a stream's
	// lasts until it ends). It runs on the call's goroutine and must be
	// quick.
	Observe func(transport, method string, outcome audit.Outcome, reason audit.Reason, d time.Duration)
	// ExtendedCard returns the card of a principal: its own view for an
	// authenticated one, the public card for an anonymous one (see
	// NeedsAuth). Nil answers the extended card methods with -32004.
	ExtendedCard func(p Principal) Card
	// MaxBodyBytes caps request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// ReadTimeout bounds the time a request's body may take to arrive,
	// from when its headers are in; 0 means no bound. The http.Server's
	// own ReadTimeout should match: it bounds the other routes (the
	// handlers set the connection's deadlines themselves).
	ReadTimeout time.Duration
	// MinBodyRate is the slowest a request's body may arrive on average,
	// in bytes a second, once BodyGrace has passed; 0 means no floor. A
	// body that is late or too slow is answered with HTTP 408.
	MinBodyRate int64
	// BodyGrace is the time before MinBodyRate applies; 0 means
	// DefaultBodyGrace.
	BodyGrace time.Duration
	// Streams serves the streaming methods; nil answers them with
	// -32004.
	Streams StreamService
	// Push serves the push notification config methods; nil answers them
	// with -32003.
	Push PushService
	// Lister serves listing; nil answers it with -32601.
	Lister Lister
	// KeepAlive is the interval of SSE keep-alive comments; 0 means
	// DefaultKeepAlive, negative none.
	KeepAlive time.Duration
	// Tracer, when set, traces each call in a span (see Trace); nil
	// traces nothing.
	Tracer trace.Tracer
	Logger zerolog.Logger
}

// Core serves the calls of every binding. Build it with New.
type Core struct {
	cfg Config
	log zerolog.Logger

	streams      context.Context // canceled by CloseStreams
	closeStreams context.CancelFunc

	openMu sync.Mutex
	open   map[*openStream]struct{} // the streams being served
}

// New builds the core, with cfg's defaults filled in.
func New(cfg Config) *Core {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Caller == nil {
		cfg.Caller = func(*http.Request) tasks.Caller { return tasks.Caller{} }
	}
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.BodyGrace <= 0 {
		cfg.BodyGrace = DefaultBodyGrace
	}
	c := &Core{cfg: cfg, log: cfg.Logger, open: map[*openStream]struct{}{}}
	c.streams, c.closeStreams = context.WithCancel(context.Background())
	return c
}

// ClientAddr is the address of the client that sent r (see ClientAddr).
func (c *Core) ClientAddr(r *http.Request) string { return ClientAddr(r, c.cfg.TrustedProxies) }

// KeepAlive is the interval of SSE keep-alives; 0 or less: none.
func (c *Core) KeepAlive() time.Duration { return c.cfg.KeepAlive }

// CloseStreams ends every open stream cleanly (without a final event):
// their clients resume from their last event id, for example after a
// restart. Register it with http.Server.RegisterOnShutdown, which would
// otherwise wait for the streams.
func (c *Core) CloseStreams() { c.closeStreams() }

// Logger is the core's logger, for a binding to give its calls' contexts
// (zerolog.Ctx), as the gRPC binding does; an HTTP call's lines take its
// request id from the call (see OpenHTTP).
func (c *Core) Logger() zerolog.Logger { return c.log }
