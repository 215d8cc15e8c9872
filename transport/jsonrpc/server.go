// Package jsonrpc is a2ad's HTTP face: the agent card, the JSON-RPC 2.0
// endpoint at POST /a2a, and the health check, on Echo.
package jsonrpc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/httpx"
)

// Config wires a Server: the core every binding shares, and what the
// HTTP face adds to it.
type Config struct {
	// Core is the core to serve through, built by whoever wires the
	// bindings and handed to each; nil builds one of Config (a server of
	// this binding alone, as tests build).
	Core *transport.Core
	transport.Config
	Card CardSource
	// CORS is the cross-origin policy: the card is public, /a2a (and
	// every other route) answers the origins it lists. Nil sends no CORS
	// header.
	CORS *httpx.CORS
	// CardMaxAge is the card's Cache-Control max-age; 0 means 5 minutes.
	CardMaxAge time.Duration
	// CardKeys returns the JWKS of the keys that sign the card, served
	// at CardKeysPath; nil returns, or a nil CardKeys, answer 404.
	CardKeys func() []byte
}

// Server serves the routes. Build it with New.
type Server struct {
	cfg  Config
	core *transport.Core
	echo *echo.Echo
	log  zerolog.Logger
}

// New builds the Echo instance with every route.
func New(cfg Config) *Server {
	if cfg.CardMaxAge <= 0 {
		cfg.CardMaxAge = 5 * time.Minute
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	core := cfg.Core
	if core == nil {
		core = transport.New(cfg.Config)
	}
	s := &Server{cfg: cfg, core: core, echo: e, log: core.Logger()}
	e.HTTPErrorHandler = s.httpError
	e.Use(s.front)
	if cfg.CORS != nil {
		// On the Echo, not a group: preflights of every route, those to
		// come included, go through it (see httpx.CORS.Middleware).
		e.Use(cfg.CORS.Middleware(CardPath, LegacyCardPath, CardKeysPath))
	}

	// Every GET route answers HEAD too (httpx.GET).
	httpx.GET(e, CardPath, s.card)
	httpx.GET(e, LegacyCardPath, s.card)
	httpx.GET(e, CardKeysPath, s.cardKeys)
	httpx.GET(e, "/healthz", func(c echo.Context) error {
		return c.JSONBlob(http.StatusOK, []byte(`{"status":"ok"}`))
	})
	// The endpoint with a trailing slash too: clients that join a path
	// to the interface URL (the TCK's posts "/" to it) reach it so.
	for _, p := range []string{"/a2a", "/a2a/"} {
		e.POST(p, s.jsonrpc)
		e.Match([]string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPatch, http.MethodDelete,
			http.MethodOptions, http.MethodTrace, http.MethodConnect}, p, func(c echo.Context) error {
			c.Response().Header().Set("Allow", http.MethodPost)
			return echo.NewHTTPError(http.StatusMethodNotAllowed, "use POST for JSON-RPC requests")
		})
	}
	return s
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.echo }

// Core is the core the server's calls go through, for the other
// bindings to share.
func (s *Server) Core() *transport.Core { return s.core }

// CloseStreams ends every open stream, of every binding, cleanly
// (without a final event): their clients resume from their last event
// id, for example after a restart. Register it with
// http.Server.RegisterOnShutdown, which would otherwise wait for the
// streams.
func (s *Server) CloseStreams() { s.core.CloseStreams() }

// EndRevokedStreams ends the open streams of revoked principals (see
// transport.Core.EndRevokedStreams).
func (s *Server) EndRevokedStreams() int { return s.core.EndRevokedStreams() }

// Echo returns the Echo instance, for callers that add routes.
func (s *Server) Echo() *echo.Echo { return s.echo }

// front is what every request goes through before its route: a panic
// recovered (outermost), the request id given, the access log line
// written. One middleware rather than three, because Echo builds the
// chain anew for each request, a closure a middleware; and the request
// id's logger is built only for the rare line that needs it (see
// transport.Core.Fail), not put in every request's context.
func (s *Server) front(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		defer s.recoverPanic(c)
		start := time.Now()
		reqID := c.Request().Header.Get(echo.HeaderXRequestID)
		if reqID == "" {
			reqID = newRequestID()
		}
		c.Response().Header().Set(echo.HeaderXRequestID, reqID)
		if err := next(c); err != nil {
			c.Error(err)
		}
		if e := s.log.Debug(); e.Enabled() {
			e.Str("req_id", reqID).Str("client_addr", s.core.ClientAddr(c.Request())).
				Str("method", c.Request().Method).Str("path", c.Path()).
				Int("status", c.Response().Status).Dur("latency", time.Since(start)).Msg("request")
		}
		return nil
	}
}

// recoverPanic answers a request whose handler panicked with HTTP 500 and
// logs the panic, as Echo's Recover middleware does; net/http's
// ErrAbortHandler is panicked on, for net/http to abort the response.
func (s *Server) recoverPanic(c echo.Context) {
	r := recover()
	if r == nil {
		return
	}
	if r == http.ErrAbortHandler {
		panic(r)
	}
	err, ok := r.(error)
	if !ok {
		err = fmt.Errorf("%v", r)
	}
	s.log.Error().Err(err).Str("req_id", c.Response().Header().Get(echo.HeaderXRequestID)).Msg("handler panicked")
	c.Error(err)
}

// requestIDLetters are the letters of a request id, as Echo's request id
// middleware makes them: 32 drawn from the 52 ASCII letters.
const requestIDLetters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newRequestID returns a request id: 32 letters, uniformly drawn (six
// random bits a letter, those of 52 and over drawn again) from the
// runtime's ChaCha8 generator. An id tells requests apart in the logs;
// it is no secret, so it need not cost crypto/rand's reads.
func newRequestID() string {
	var b [32]byte
	for i := 0; i < len(b); {
		r := rand.Uint64()
		for k := 0; k < 10 && i < len(b); k, r = k+1, r>>6 { // ten draws a word
			if n := r & 63; n < uint64(len(requestIDLetters)) {
				b[i] = requestIDLetters[n]
				i++
			}
		}
	}
	return string(b[:])
}

// httpError answers the errors of the transport (a path with no route, a
// verb the endpoint does not take, a body too large, too late or not
// JSON) in the binding's own shape, a JSON-RPC error with id null and
// the HTTP status of the error: -32601 for a path with no route, -32600
// for another client error, -32603 for the server's. It is in the form
// of the version the request asks for (1.0: data the ErrorInfo array),
// so a client that parses JSON-RPC errors reads these too.
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
	e := &a2a.Error{Code: a2a.CodeInvalidRequest, Message: msg}
	switch {
	case errors.Is(err, echo.ErrNotFound):
		e = noRoute(c.Request())
	case code >= http.StatusInternalServerError:
		e.Code = a2a.CodeInternalError
	}
	ver, _ := requestVersion(c.Request())
	_ = c.Blob(code, echo.MIMEApplicationJSON, appendErrorFor(nil, ver, nil, e))
}

// noRoute is the error of a path the listener has no route for: the
// JSON-RPC binding owns the listener (its endpoint and the cards), so a
// client that posted to a wrong URL reads a JSON-RPC error, as on the
// endpoint, not a body of another shape.
func noRoute(r *http.Request) *a2a.Error {
	path := r.URL.EscapedPath()
	if len(path) > 200 {
		path = path[:200] + "..."
	}
	return &a2a.Error{Code: a2a.CodeMethodNotFound, Message: "No A2A endpoint at " + r.Method + " " + path}
}

// jsonrpc serves POST /a2a as a pipeline: authenticate, admit, read,
// then serve (parse, look up, serve, encode). Each step that refuses the
// request answers it and stops the pipeline; the call's one audit record
// is written at the end, whatever step it ended in.
func (s *Server) jsonrpc(c echo.Context) error {
	r := c.Request()
	cl, tr, ref := s.core.OpenHTTP(transportName, c.Response(), r)
	defer func() { s.core.End(cl, c.Response().Header().Get(echo.HeaderXRequestID)) }()
	if tr != r {
		r = tr
		c.SetRequest(r)
	}
	// A refusal before the body is read leaves the body unread: its
	// answer has id null and the version the A2A-Version header asks for.
	if ref != nil {
		return s.refuse(c, ref)
	}
	if !transport.IsJSON(r.Header.Get(echo.HeaderContentType)) {
		cl.NoteError(a2a.ErrInvalidRequest, nil)
		transport.LeaveBody(c.Response(), r)
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, "Content-Type must be application/json")
	}
	release, ref := s.core.Admit(cl, r.ContentLength)
	defer release()
	if ref != nil {
		transport.LeaveBody(c.Response(), r)
		return s.refuse(c, ref)
	}
	bp := transport.Buffer()
	defer transport.PutBuffer(bp)
	body, ref := s.core.ReadBody(cl, c.Response(), r, (*bp)[:0])
	*bp = body
	if ref != nil {
		return s.refuse(c, ref)
	}
	return s.serve(c, cl, body)
}

// transportName names the binding in audit records and metrics.
const transportName = "jsonrpc"

// refuse answers a call the core refused before its method: an A2A error
// in the shapes of the version the request asks for (id null, the body
// being unread), or a plain HTTP error.
func (s *Server) refuse(c echo.Context, ref *transport.Refusal) error {
	ref.SetHeaders(c.Response().Header())
	if ref.Err == nil {
		return echo.NewHTTPError(ref.Status, ref.Message)
	}
	ver, _ := requestVersion(c.Request())
	return s.refuseCall(c, ref, ver, nil)
}

// refuseCall answers a refused call with its A2A error in the shapes of
// wire, with the request's id.
func (s *Server) refuseCall(c echo.Context, ref *transport.Refusal, wire a2a.Version, id []byte) error {
	if ref.Challenge != "" {
		c.Response().Header().Set("WWW-Authenticate", ref.Challenge)
	}
	return blobJSON(c, ref.Status, appendErrorFor(nil, wire, id, ref.Err))
}

// serve parses the body, looks its method up, serves it and encodes the
// answer in the shapes of the method's version.
func (s *Server) serve(c echo.Context, cl *transport.Call, body []byte) error {
	r := c.Request()
	req, rpcErr := a2a.ParseRequest(body)
	m, known := lookup(req.Method)
	if known {
		cl.SetMethod(req.Method, m.version, m.stateful)
	} else {
		cl.SetMethod(req.Method, a2a.V03, false)
	}
	// The method name picks the shapes, errors included; the version a
	// request asks for must be one a2ad speaks.
	wire, verr := requestVersion(r)
	if known {
		wire = m.version
	}
	if verr != nil {
		rpcErr, wire = verr, a2a.V10 // -32009 exists in 1.0 only
	}
	if rpcErr != nil {
		cl.NoteError(rpcErr, nil)
		return blobJSON(c, http.StatusOK, appendErrorFor(nil, wire, req.ID, rpcErr))
	}
	if !known {
		// An unknown method is answered in the 0.3 shapes, whatever
		// version the request asks for.
		return s.answer(c, cl, &req, a2a.V03, nil, a2a.MethodNotFound(req.Method))
	}
	if m.authOnly {
		if ref := s.core.NeedsAuth(cl, m.version); ref != nil {
			return s.refuseCall(c, ref, wire, req.ID)
		}
	}
	ctx := r.Context()
	if m.streams() {
		if e := s.core.StreamsRefused(); e != nil {
			return s.answer(c, cl, &req, m.version, nil, e)
		}
		return s.stream(c, cl, &req, m)
	}
	res, rpcErr := m.serve(s, &call{ctx: ctx, r: r, req: &req, cl: cl})
	return s.answer(c, cl, &req, m.version, res, rpcErr)
}

// answer encodes a call's result, or rpcErr, in the shapes of version v.
// The result is written straight into the response buffer; one carrying
// tasks is written out while it is made once it passes
// transport.SpillBytes.
func (s *Server) answer(c echo.Context, cl *transport.Call, req *a2a.Request, v a2a.Version, res result, rpcErr *a2a.Error) error {
	op := transport.Buffer()
	defer transport.PutBuffer(op)
	out := (*op)[:0]
	if rpcErr == nil {
		var b []byte
		var err error
		if sr, ok := res.(spilling); ok {
			sp := transport.Spiller{W: c.Response(), ContentType: jsonType}
			b, err = sr.appendSpilling(a2a.AppendResultStart(out, req.ID), sp.Spill)
			if sp.Started() {
				if err == nil {
					b = append(b, '}')
				}
				if b != nil {
					*op = b
				}
				return sp.Finish(b, err)
			}
		} else {
			b, err = res.appendJSON(a2a.AppendResultStart(out, req.ID))
		}
		if err == nil {
			out = append(b, '}')
		} else {
			rpcErr = s.core.Fail(c.Request().Context(), cl, err)
		}
	}
	if rpcErr != nil {
		cl.NoteError(rpcErr, nil)
		out = appendErrorFor(out[:0], v, req.ID, rpcErr)
	}
	*op = out
	return blobJSON(c, httpStatus(c, rpcErr), out)
}

// jsonType is the Content-Type of the answers, one slice for all: the
// header map is copied when the answer is written (http.Header.Clone),
// and nothing changes a value in place, so it can be shared rather
// than made for each answer as Header.Set does.
var jsonType = []string{echo.MIMEApplicationJSON}

// blobJSON is c.Blob with the Content-Type application/json, unless one
// is set.
func blobJSON(c echo.Context, code int, b []byte) error {
	if h := c.Response().Header(); h.Get(echo.HeaderContentType) == "" {
		h[echo.HeaderContentType] = jsonType
	}
	c.Response().WriteHeader(code)
	_, err := c.Response().Write(b)
	return err
}
