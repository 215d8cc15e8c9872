// Package jsonrpc is a2ad's HTTP face: the agent card, the JSON-RPC 2.0
// endpoint at POST /a2a, and the health check, on Echo.
package jsonrpc

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/audit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport/httpx"
)

// TaskService is what the JSON-RPC methods need of the task service.
type TaskService interface {
	// Send's audit.Outcome (what the policy decided) goes into the audit record.
	Send(ctx context.Context, caller tasks.Caller, p a2a.SendParams) (*a2a.Task, tasks.Outcome, error)
	Get(ctx context.Context, caller tasks.Caller, id string, historyLength *int) (*a2a.Task, error)
	Cancel(ctx context.Context, caller tasks.Caller, id string) (*a2a.Task, error)
}

// DefaultMaxBodyBytes caps a JSON-RPC request body.
const DefaultMaxBodyBytes = 1 << 20

// Config wires a Server.
type Config struct {
	Tasks TaskService
	Card  CardSource
	// Auth authenticates requests to /a2a. Nil serves every request as
	// the caller Caller returns.
	Auth Authenticator
	// Caller identifies who sent a request when Auth is nil; nil means
	// the anonymous caller.
	Caller func(r *http.Request) tasks.Caller
	// Admit applies rate limits and in-flight caps; nil admits all.
	Admit Admitter
	// Bytes limits the bytes of each caller's request bodies; nil does
	// not.
	Bytes ByteMeter
	// TrustedProxies are the peers whose X-Forwarded-For and Forwarded
	// headers name the client (see ClientAddr); empty trusts none.
	TrustedProxies []netip.Prefix
	// CORS is the cross-origin policy: the card is public, /a2a (and
	// every other route) answers the origins it lists. Nil sends no CORS
	// header.
	CORS *httpx.CORS
	// Throttle limits failed authentications per client address; nil
	// does not.
	Throttle AuthThrottle
	// Revoked reports whether a principal's credentials no longer hold
	// (a key revoked, disabled or removed). A stream of such a principal
	// is ended at its start, and by EndRevokedStreams. Nil: never.
	Revoked func(p Principal) bool
	// Audit receives one record per call (see AuditLogger); nil writes
	// none.
	Audit *zerolog.Logger
	// Observe, when set, is called once per call with what its audit
	// record says: the method as the caller sent it (map it to one of
	// Methods before using it as a label), the outcome, the reason and
	// the duration (a stream's lasts until it ends). It runs on the
	// request's goroutine and must be quick.
	Observe func(method string, outcome audit.Outcome, reason audit.Reason, d time.Duration)
	// ExtendedCard returns the card for an authenticated principal, for
	// agent/getAuthenticatedExtendedCard. Nil answers that method with
	// -32004.
	ExtendedCard func(p Principal) Card
	// MaxBodyBytes caps request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// ReadTimeout bounds the time a JSON-RPC request's body may take to
	// arrive, from when its headers are in; 0 means no bound. The
	// http.Server's own ReadTimeout should match: it bounds the other
	// routes (the handler sets the connection's deadlines itself).
	ReadTimeout time.Duration
	// MinBodyRate is the slowest a JSON-RPC request's body may arrive on
	// average, in bytes a second, once BodyGrace has passed; 0 means no
	// floor. A body that is late or too slow is answered with HTTP 408.
	MinBodyRate int64
	// BodyGrace is the time before MinBodyRate applies; 0 means
	// DefaultBodyGrace.
	BodyGrace time.Duration
	// CardMaxAge is the card's Cache-Control max-age; 0 means 5 minutes.
	CardMaxAge time.Duration
	// Streams serves message/stream and tasks/resubscribe; nil answers
	// them with -32004.
	Streams StreamService
	// Push serves the push notification config methods; nil answers them
	// with -32003.
	Push PushService
	// Lister serves tasks/list; nil answers it with -32601.
	Lister Lister
	// KeepAlive is the interval of SSE keep-alive comments; 0 means
	// DefaultKeepAlive, negative none.
	KeepAlive time.Duration
	Logger    zerolog.Logger
}

// Server serves the routes. Build it with New.
type Server struct {
	cfg  Config
	echo *echo.Echo
	log  zerolog.Logger

	streams      context.Context // canceled by CloseStreams
	closeStreams context.CancelFunc

	openMu sync.Mutex
	open   map[*openStream]struct{} // the streams being served
}

// New builds the Echo instance with every route.
func New(cfg Config) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.CardMaxAge <= 0 {
		cfg.CardMaxAge = 5 * time.Minute
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
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	s := &Server{cfg: cfg, echo: e, log: cfg.Logger, open: map[*openStream]struct{}{}}
	s.streams, s.closeStreams = context.WithCancel(context.Background())
	e.HTTPErrorHandler = s.httpError
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			s.log.Error().Err(err).Str("req_id", c.Response().Header().Get(echo.HeaderXRequestID)).Msg("handler panicked")
			return err
		},
	}))
	e.Use(middleware.RequestID())
	e.Use(s.accessLog)
	if cfg.CORS != nil {
		// On the Echo, not a group: preflights of every route, those to
		// come included, go through it (see httpx.CORS.Middleware).
		e.Use(cfg.CORS.Middleware(CardPath, LegacyCardPath))
	}

	// Every GET route answers HEAD too (httpx.GET).
	httpx.GET(e, CardPath, s.card)
	httpx.GET(e, LegacyCardPath, s.card)
	httpx.GET(e, "/healthz", func(c echo.Context) error {
		return c.JSONBlob(http.StatusOK, []byte(`{"status":"ok"}`))
	})
	e.POST("/a2a", s.jsonrpc)
	e.Match([]string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodOptions, http.MethodTrace, http.MethodConnect}, "/a2a", func(c echo.Context) error {
		c.Response().Header().Set("Allow", http.MethodPost)
		return echo.NewHTTPError(http.StatusMethodNotAllowed, "use POST for JSON-RPC requests")
	})
	return s
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.echo }

// CloseStreams ends every open stream cleanly (without a final event):
// their clients resume from their last event id, for example after a
// restart. Register it with http.Server.RegisterOnShutdown, which would
// otherwise wait for the streams.
func (s *Server) CloseStreams() { s.closeStreams() }

// Echo returns the Echo instance, for callers that add routes.
func (s *Server) Echo() *echo.Echo { return s.echo }

func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		reqID := c.Response().Header().Get(echo.HeaderXRequestID)
		l := s.log.With().Str("req_id", reqID).Logger()
		c.SetRequest(c.Request().WithContext(l.WithContext(c.Request().Context())))
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		if e := s.log.Debug(); e.Enabled() {
			e.Str("req_id", reqID).Str("client_addr", ClientAddr(c.Request(), s.cfg.TrustedProxies)).
				Str("method", c.Request().Method).Str("path", c.Path()).
				Int("status", c.Response().Status).Dur("latency", time.Since(start)).Msg("request")
		}
		return nil
	}
}

// httpError answers transport-level errors as a small JSON object.
func (s *Server) httpError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code := http.StatusInternalServerError
	msg := "internal error"
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code = he.Code
		msg = http.StatusText(code)
		if m, ok := he.Message.(string); ok {
			msg = m
		}
	} else {
		s.log.Error().Err(err).Str("req_id", c.Response().Header().Get(echo.HeaderXRequestID)).Msg("request failed")
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(code)
		return
	}
	_ = c.JSON(code, map[string]string{"error": msg})
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// jsonrpc serves POST /a2a as a pipeline: authenticate, admit, read,
// then serve (parse, look up, serve, encode). Each step that refuses the
// request answers it and stops the pipeline; the call's one audit record
// is written at the end, whatever step it ended in.
func (s *Server) jsonrpc(c echo.Context) error {
	addr := ClientAddr(c.Request(), s.cfg.TrustedProxies)
	ac := &auditCall{start: time.Now(), client: addr}
	defer func() { s.writeAudit(ac, c.Response().Header().Get(echo.HeaderXRequestID)) }()
	p, ok, err := s.authenticate(c, ac, addr)
	if !ok {
		return err
	}
	release, ok, err := s.admit(c, ac, p)
	defer release()
	if !ok {
		return err
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	body, ok, err := s.read(c, ac, p, (*bp)[:0])
	*bp = body
	if !ok {
		return err
	}
	return s.serve(c, ac, p, body)
}

// authenticate finds the request's principal. An address that failed to
// authenticate too often is refused before its credentials are looked
// at, and its refusals are audited in summary. Authentication comes
// before admission: a request that is refused costs no body read. The
// body of a refused request is left unread: its answer has id null and
// the version the A2A-Version header asks for.
func (s *Server) authenticate(c echo.Context, ac *auditCall, addr string) (Principal, bool, error) {
	r := c.Request()
	if s.cfg.Throttle != nil {
		if retry, report, ok := s.cfg.Throttle.Check(addr); !ok {
			d := &Denial{Scope: "auth", RateLimited: true, RetryAfter: retry}
			ac.denial, ac.rpcErr, ac.refused = d, deniedError(d), report
			ver, _ := requestVersion(r)
			leaveBody(c.Response(), r)
			return Principal{}, false, s.denied(c, ver, nil, d)
		}
	}
	p, res := s.principal(r, addr)
	ac.principal = p
	if res != Authenticated {
		if s.cfg.Throttle != nil {
			s.cfg.Throttle.Fail(addr)
		}
		ac.authFail = true
		e, challenge := authError(res)
		ac.rpcErr = e
		ver, _ := requestVersion(r)
		leaveBody(c.Response(), r)
		return p, false, s.unauthorized(c, ver, nil, e, challenge)
	}
	return p, true, nil
}

// admit checks the request's headers, then applies the rate limits and
// in-flight caps, before the body is read: an admitted request holds its
// caller's in-flight slot while its body arrives, so slow bodies run into
// the caller's cap. Every request takes a token, a malformed one too. The
// body is charged as declared before it is read, so that many bodies at
// once cannot all pass a caller's budget (read charges the rest). release
// frees the in-flight slot once the call is answered; it is never nil,
// and is to be called even when ok is false.
func (s *Server) admit(c echo.Context, ac *auditCall, p Principal) (release func(), ok bool, err error) {
	r := c.Request()
	release = func() {}
	if !isJSON(r.Header.Get(echo.HeaderContentType)) {
		ac.rpcErr = a2a.ErrInvalidRequest
		leaveBody(c.Response(), r)
		return release, false, echo.NewHTTPError(http.StatusUnsupportedMediaType, "Content-Type must be application/json")
	}
	if r.ContentLength > s.cfg.MaxBodyBytes {
		ac.rpcErr = a2a.ErrInvalidRequest
		leaveBody(c.Response(), r)
		return release, false, s.tooLarge()
	}
	refuse := func(d *Denial) error {
		ac.denial = d
		ac.rpcErr = deniedError(d)
		leaveBody(c.Response(), r)
		ver, _ := requestVersion(r)
		return s.denied(c, ver, nil, d)
	}
	if s.cfg.Admit != nil {
		rel, d := s.cfg.Admit.Admit(p)
		if d != nil {
			return release, false, refuse(d)
		}
		release = rel
	}
	if s.cfg.Bytes != nil {
		if d := s.cfg.Bytes.TakeBytes(p, max(r.ContentLength, 0)); d != nil {
			return release, false, refuse(d)
		}
	}
	return release, true, nil
}

// read reads the body into buf, within the read timeout and rate floor
// and the size cap, and charges the caller's byte budget with what came
// beyond (or short of) what was declared.
func (s *Server) read(c echo.Context, ac *auditCall, p Principal, buf []byte) ([]byte, bool, error) {
	r := c.Request()
	br := &bodyReader{
		r: r.Body, rc: http.NewResponseController(c.Response()), start: time.Now(),
		grace: s.cfg.BodyGrace, rate: s.cfg.MinBodyRate,
	}
	if s.cfg.ReadTimeout > 0 {
		br.end = br.start.Add(s.cfg.ReadTimeout)
	}
	body, err := readAll(buf, io.LimitReader(br, s.cfg.MaxBodyBytes+1))
	if declared := max(r.ContentLength, 0); s.cfg.Bytes != nil && int64(len(body)) != declared {
		s.cfg.Bytes.ChargeBytes(p, int64(len(body))-declared)
	}
	if err != nil {
		ac.rpcErr = a2a.ErrInvalidRequest
		if errors.Is(err, errBodyTimeout) || errors.Is(err, errBodyTooSlow) {
			ac.bodyLate = true
			return body, false, s.bodyDeadlineError(c.Response(), err)
		}
		return body, false, echo.NewHTTPError(http.StatusBadRequest, "could not read the request body")
	}
	if int64(len(body)) > s.cfg.MaxBodyBytes {
		ac.rpcErr = a2a.ErrInvalidRequest
		return body, false, s.tooLarge()
	}
	return body, true, nil
}

// serve parses the body, looks its method up, serves it and encodes the
// answer in the shapes of the method's version.
func (s *Server) serve(c echo.Context, ac *auditCall, p Principal, body []byte) error {
	r := c.Request()
	req, rpcErr := a2a.ParseRequest(body)
	ac.method = req.Method
	m, known := lookup(req.Method)
	// The method name picks the shapes, errors included; the version a
	// request asks for must be one a2ad speaks.
	wire, verr := requestVersion(r)
	if known {
		wire = m.version
	}
	ctx := context.WithValue(r.Context(), principalKey{}, p)
	r = r.WithContext(ctx)
	c.SetRequest(r)
	if verr != nil {
		rpcErr, wire = verr, a2a.V10 // -32009 exists in 1.0 only
	}
	if rpcErr != nil {
		ac.rpcErr = rpcErr
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, appendErrorFor(nil, wire, req.ID, rpcErr))
	}
	if !known {
		// An unknown method is answered in the 0.3 shapes, whatever
		// version the request asks for.
		return s.answer(c, ac, &req, a2a.V03, nil, a2a.MethodNotFound(req.Method))
	}
	if m.authOnly && s.cfg.ExtendedCard != nil && p.Anonymous {
		ac.authFail = true
		ac.rpcErr = a2a.ErrExtendedCardAuth
		return s.unauthorized(c, wire, req.ID, a2a.ErrExtendedCardAuth, challengeMissing)
	}
	ac.stateful = m.stateful
	if m.streams() {
		if s.cfg.Streams == nil {
			return s.answer(c, ac, &req, m.version, nil, a2a.ErrStreamingNotSupport)
		}
		return s.stream(c, ac, &req, m)
	}
	res, rpcErr := m.serve(s, &call{ctx: ctx, r: r, req: &req, version: m.version, caller: s.callerOf(r), p: p, ac: ac})
	return s.answer(c, ac, &req, m.version, res, rpcErr)
}

// answer encodes a call's result, or rpcErr, in the shapes of version v.
// The result is written straight into the response buffer.
func (s *Server) answer(c echo.Context, ac *auditCall, req *a2a.Request, v a2a.Version, res result, rpcErr *a2a.Error) error {
	op := bufPool.Get().(*[]byte)
	defer bufPool.Put(op)
	out := (*op)[:0]
	if rpcErr == nil {
		b, err := res.appendJSON(a2a.AppendResultStart(out, req.ID))
		if err == nil {
			out = append(b, '}')
		} else {
			rpcErr = s.rpcError(c.Request().Context(), ac, req.Method, v, err)
		}
	}
	if rpcErr != nil {
		ac.rpcErr = rpcErr
		out = appendErrorFor(out[:0], v, req.ID, rpcErr)
	}
	*op = out
	return c.Blob(httpStatus(c, rpcErr), echo.MIMEApplicationJSON, out)
}

func (s *Server) tooLarge() error {
	return echo.NewHTTPError(http.StatusRequestEntityTooLarge,
		"request body exceeds "+strconv.FormatInt(s.cfg.MaxBodyBytes, 10)+" bytes")
}

func readAll(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// isJSON accepts application/json and any application/*+json type, with
// parameters such as charset.
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// fail converts the service error err of cl for the wire (see rpcError).
func (s *Server) fail(cl *call, err error) *a2a.Error {
	return s.rpcError(cl.ctx, cl.ac, cl.req.Method, cl.version, err)
}

// rpcError converts err for the wire, in version v (a 1.0 call's problems
// are located with 1.0's names), and notes it in the call's audit
// record. Anything unexpected is logged once
// and answered with a bare "Internal error".
func (s *Server) rpcError(ctx context.Context, ac *auditCall, method string, v a2a.Version, err error) *a2a.Error {
	if v == a2a.V10 {
		err = problemsIn10(err)
	}
	if e := wireError(err); e != nil {
		ac.noteError(e, err)
		return e
	}
	ac.noteError(a2a.ErrInternal, err)
	zerolog.Ctx(ctx).Error().Err(err).Str("rpc_method", method).Msg("internal error")
	return a2a.ErrInternal
}
