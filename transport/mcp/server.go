package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/httpx"
)

// transportName names the binding in audit records and metrics.
const transportName = "mcp"

// versionHeader is the header that names the MCP revision a request
// speaks, after initialisation.
const versionHeader = "Mcp-Protocol-Version"

// Config wires a Server.
type Config struct {
	// Core serves every call: authentication, limits, body caps, audit.
	Core *transport.Core
	// Catalog is the catalogue in force; nil, or one returning nil,
	// serves no tools.
	Catalog func() *functions.Catalog
	// Policy decides which tools each caller sees, over MCP.
	Policy exposure.Policy
	// Tiers, when set, gives the tiers a caller's credentials have now,
	// for a listen that outlives a reload (a key's tiers may change); nil
	// keeps those the caller came with.
	Tiers func(p transport.Principal) []string
	// CORS is the listener's policy: a request that carries an Origin it
	// does not list is refused with 403 (DNS rebinding). Nil refuses
	// every request with an Origin.
	CORS *httpx.CORS
	// Origin is the server's own origin (its base URL's scheme, host and
	// port), always allowed: a page of a2ad's own origin is not a
	// rebinding, whose Origin names the attacker's host. "" for none.
	Origin string
	// ResourceMetadata is the URL of the endpoint's protected-resource
	// metadata (RFC 9728, see ResourceMetadata), named in the
	// WWW-Authenticate of each 401; "" when tokens come from no
	// authorization server a client could find (API keys alone).
	ResourceMetadata string
	// PageSize is how many tools a tools/list page holds; 0 is
	// DefaultPageSize.
	PageSize int
	// Version is a2ad's version, given as the server's in initialize.
	Version string
	// TaskAfter is how long a call of a client that declares the tasks
	// extension may run before it answers with a task handle; 0 never
	// does (the extension is then not offered).
	TaskAfter time.Duration
	// PollInterval is the tasks/get interval a handle suggests; 0 is
	// DefaultPollInterval.
	PollInterval time.Duration
	// Retention is how long the store keeps a task once it ended, for a
	// handle's ttlMs; 0 says none (null: unlimited).
	Retention time.Duration
	// SDKOnly serves every message through the SDK, the fast path (see
	// serveFast) off: for the tests that compare the two.
	SDKOnly bool
}

// Server serves MCP's Streamable HTTP transport, stateless. Build it with
// New; it is an http.Handler.
type Server struct {
	cfg     Config
	flights flights // the calls a client may cancel
	reloads reloads // the listens that hear reloads wait on it
	sdk     *sdk.StreamableHTTPHandler
	// streamed answers as an SSE stream: a tools/call that asked for
	// progress (a progressToken), whose notifications come before its
	// result.
	streamed *sdk.StreamableHTTPHandler
	// impl names the server: in initialize, and in each result's _meta
	// from 2026-07-28.
	impl *sdk.Implementation
	// implJSON is impl encoded, as a result's _meta holds it (nil if it
	// does not encode: the fast path's encoder then leaves it to the SDK's).
	implJSON []byte
	// fastAnswers counts the messages the fast path answered (for tests).
	fastAnswers atomic.Int64
}

// New builds the server.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg, impl: &sdk.Implementation{Name: "a2ad", Version: cfg.Version}}
	s.implJSON, _ = json.Marshal(s.impl)
	opts := func(json bool) *sdk.StreamableHTTPOptions {
		return &sdk.StreamableHTTPOptions{
			Stateless: true,
			// One JSON answer per POST, or for a call that asked for
			// progress one SSE stream: no stream is open between requests,
			// and the call's audit record is written when it is answered.
			JSONResponse: json,
			// Checked here, against --cors-origins, before authentication; a
			// Host check would refuse a2ad behind a proxy on the same host.
			DisableLocalhostProtection: true,
			// The core read the body, under its cap, timeout and byte rate.
			MaxRequestBodyBytes: -1,
		}
	}
	s.sdk = sdk.NewStreamableHTTPHandler(serverOf, opts(true))
	s.streamed = sdk.NewStreamableHTTPHandler(serverOf, opts(false))
	return s
}

// ServeHTTP serves one request as a pipeline: the Origin and the method,
// authentication, the protocol version, admission, the body; then the SDK
// answers the JSON-RPC message, calling tools/list and tools/call here.
// Each step that refuses the request answers it and stops; the call's one
// audit record is written at the end.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get(echo.HeaderOrigin); origin != "" && origin != s.cfg.Origin && !s.cfg.CORS.Allows(origin) {
		transport.LeaveBody(w, r)
		http.Error(w, "Forbidden: Origin not allowed (see --cors-origins)", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodPost {
		transport.LeaveBody(w, r)
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Method Not Allowed: this MCP endpoint is stateless and opens no SSE stream; POST each JSON-RPC message", http.StatusMethodNotAllowed)
		return
	}
	core := s.cfg.Core
	cl, tr, ref := core.OpenHTTP(transportName, w, r)
	defer func() { core.End(cl, w.Header().Get(echo.HeaderXRequestID)) }()
	r = tr
	cl.SetMethod("", a2a.V03, false) // named once the body is read
	if ref != nil {
		s.refuse(w, ref)
		return
	}
	cl.ServeOver(exposure.MCP)
	if e := versionError(r.Header.Get(versionHeader)); e != nil {
		transport.LeaveBody(w, r)
		cl.NoteError(e, nil)
		writeError(w, http.StatusBadRequest, e)
		return
	}
	release, ref := core.Admit(cl, r.ContentLength)
	defer release()
	if ref != nil {
		transport.LeaveBody(w, r)
		s.refuse(w, ref)
		return
	}
	bp := transport.Buffer()
	defer transport.PutBuffer(bp)
	body, ref := core.ReadBody(cl, w, r, (*bp)[:0])
	*bp = body
	if ref != nil {
		s.refuse(w, ref)
		return
	}
	env := readEnvelope(body)
	method := env.Method
	cl.SetMethod(method, a2a.V03, method == "tools/call")
	if method == "notifications/cancelled" {
		s.cancelCall(r.Context(), cl, env.Params.RequestID)
	}
	if method == "subscriptions/listen" {
		s.listen(r.Context(), w, cl, body)
		return
	}
	if isTaskMethod(method) && s.cfg.TaskAfter > 0 {
		// The SDK knows no tasks/* method: a2ad answers them.
		s.serveTask(r.Context(), w, cl, method, body)
		return
	}
	if s.serveFast(w, r, cl, &env, body) {
		return
	}
	// The SDK reads the body again, from the bytes read here (it copies
	// them: the buffer goes back to the pool once it has answered).
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	rq := &request{s: s, cl: cl, ctx: r.Context(), id: env.ID}
	h := s.sdk
	if env.progress() && method == "tools/call" {
		h = s.streamed
	}
	h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, rq)))
}

// Methods returns the names of the MCP methods a2ad serves, for the
// metrics' method label (a method the caller names is "other" unless it
// is one of these).
func Methods() []string {
	return []string{"initialize", "notifications/initialized", "ping", "server/discover", "tools/list", "tools/call",
		"resources/list", "resources/templates/list", "resources/read", "tasks/get", "tasks/update", "tasks/cancel", "subscriptions/listen"}
}

// versionError is the error of a request that names an MCP revision the
// SDK does not speak; nil for a known one, or none (the initialize
// request names its version in its params).
func versionError(v string) *a2a.Error {
	if v == "" || slices.Contains(supportedVersions, v) {
		return nil
	}
	if len(v) > 32 {
		v = strings.ToValidUTF8(v[:32], "") + "…"
	}
	return &a2a.Error{Code: a2a.CodeInvalidRequest,
		Message: "Unsupported " + versionHeader + " " + strconv.Quote(v) + ": supported are " + strings.Join(supportedVersions, ", ")}
}

// supportedVersions are the revisions the SDK speaks (its function
// copies them on each call).
var supportedVersions = sdk.SupportedProtocolVersions()

// envelope is what a2ad reads of a JSON-RPC message before the SDK
// does: its method (for the audit record, cut to a bounded length by the
// record), its id, whether its params' _meta holds a progress token, and
// the request a cancel notification names.
type envelope struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params struct {
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// progress reports whether the message asks for progress.
func (e *envelope) progress() bool {
	t := e.Params.Meta.ProgressToken
	return len(t) > 0 && string(t) != "null"
}

// refuse answers a request the core refused before its message.
func (s *Server) refuse(w http.ResponseWriter, ref *transport.Refusal) {
	h := w.Header()
	ref.SetHeaders(h)
	if ref.Challenge != "" {
		h.Set("WWW-Authenticate", withResourceMetadata(ref.Challenge, s.cfg.ResourceMetadata))
	}
	writeError(w, ref.Status, transport.RefusalError(ref))
}

// writeError answers e as a JSON-RPC error without an id (the request's
// is unknown: its body is not read) with HTTP status.
func writeError(w http.ResponseWriter, status int, e *a2a.Error) {
	b, err := json.Marshal(struct {
		JSONRPC string     `json:"jsonrpc"`
		ID      *int       `json:"id"`
		Error   *a2a.Error `json:"error"`
	}{"2.0", nil, e})
	if err != nil {
		b = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}`)
	}
	w.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// requestKey is the context key of a request's *request.
type requestKey struct{}

// request is one request's passage through the SDK, or the fast path:
// its call in the core and the SDK server built for it (none on the fast
// path).
type request struct {
	s  *Server
	cl *transport.Call
	// ctx is the request's (its trace span, its client's cancel), kept
	// for the calls the SDK makes back: the context it gives them is not
	// the request's before revision 2026-07-28.
	ctx context.Context
	srv *sdk.Server
	// id is the message's JSON-RPC id, which a cancel names.
	id json.RawMessage
}

// serverOf is the SDK server of the request r carries (the SDK asks for
// it more than once, on the request's goroutine): nil, which the SDK
// answers 400, for a request that did not come through ServeHTTP.
func serverOf(r *http.Request) *sdk.Server {
	rq, _ := r.Context().Value(requestKey{}).(*request)
	if rq == nil {
		return nil
	}
	if rq.srv == nil {
		caps := capabilities(r.Header.Get(versionHeader))
		if rq.s.cfg.TaskAfter > 0 {
			caps.AddExtension(TasksExtension, map[string]any{})
		}
		rq.srv = sdk.NewServer(rq.s.impl, &sdk.ServerOptions{Capabilities: caps})
		rq.srv.AddReceivingMiddleware(rq.tools)
	}
	return rq.srv
}

// tools serves tools/list, tools/call and the resources/* methods (a
// caller's tasks); every other method is the SDK's.
func (rq *request) tools(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "tools/list":
			var cursor string
			if l, ok := req.(*sdk.ListToolsRequest); ok && l.Params != nil {
				cursor = l.Params.Cursor
			}
			return rq.list(cursor)
		case "tools/call":
			if call, ok := req.(*sdk.CallToolRequest); ok {
				res, err := rq.call(ctx, call)
				return complete(call.Session, res, err)
			}
		}
		if res, ok, err := rq.resources(method, req); ok {
			ss, _ := req.GetSession().(*sdk.ServerSession)
			return complete(ss, res, err)
		}
		return next(ctx, method, req)
	}
}
