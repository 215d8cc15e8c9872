package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/internal/jsonw"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/httpx"
)

// transportName names the binding in audit records and metrics.
const transportName = "rest"

// Content types: results are application/a2a+json, as 1.0.1 says they
// SHOULD be; errors are google.rpc.Status objects, not A2A ones, and go
// as application/json (a2a-go v2.2.1's client reads an error body only
// when it is application/json).
const (
	contentA2A   = "application/a2a+json"
	contentError = "application/json"
)

// contentA2AHeader is contentA2A as a header value, shared by the answers
// written while they are made (nothing changes it in place).
var contentA2AHeader = []string{contentA2A}

// Server serves the binding's routes. Build it with Mount.
type Server struct {
	core *transport.Core
	base string
	cors *httpx.CORS
}

// Mount adds the binding's routes to e under base (such as "/a2a/rest"),
// serving every call through core; cors is the listener's policy (nil for
// none), whose origins may POST without a JSON Content-Type.
func Mount(e *echo.Echo, base string, core *transport.Core, cors *httpx.CORS) *Server {
	s := &Server{core: core, base: strings.TrimSuffix(base, "/"), cors: cors}
	e.Any(s.base, s.serve)
	e.Any(s.base+"/*", s.serve)
	return s
}

// serve serves one call as a pipeline: authenticate, route, admit, read,
// then the operation. Each step that refuses the call answers it and
// stops; the call's one audit record is written at the end.
func (s *Server) serve(c echo.Context) error {
	r := c.Request()
	cl, tr, ref := s.core.OpenHTTP(transportName, c.Response(), r)
	defer func() { s.core.End(cl, c.Response().Header().Get(echo.HeaderXRequestID)) }()
	if tr != r {
		r = tr
		c.SetRequest(r)
	}
	if ref != nil {
		return s.refuse(c, ref)
	}
	path := strings.TrimPrefix(r.URL.EscapedPath(), s.base)
	if len(path) > 1 && path[len(path)-1] == '/' {
		// A trailing slash names the same resource ("/tasks/" is
		// "/tasks"), for clients that join paths with one.
		path = path[:len(path)-1]
	}
	t, rerr := route(r.Method, path)
	if rerr == nil {
		cl.SetMethod(ops[t.op].name, a2a.V10, ops[t.op].stateful)
	}
	if !s.typeAccepted(r, rerr == nil && ops[t.op].writes) {
		transport.LeaveBody(c.Response(), r)
		e := &a2a.Error{Code: a2a.CodeInvalidRequest, Message: "Content-Type must be application/a2a+json or application/json"}
		cl.NoteError(e, nil)
		return s.writeError(c, http.StatusUnsupportedMediaType, transport.StatusOf(e), e)
	}
	// Every call is admitted, one that names no operation or a version
	// a2ad does not speak too, as JSON-RPC's unknown methods and
	// versions are: a caller over its limits gets the limit's refusal.
	release, ref := s.core.Admit(cl, r.ContentLength)
	defer release()
	if ref != nil {
		transport.LeaveBody(c.Response(), r)
		return s.refuse(c, ref)
	}
	if rerr != nil {
		transport.LeaveBody(c.Response(), r)
		return s.noRoute(c, cl, path, rerr)
	}
	if e := requestVersion(r); e != nil {
		transport.LeaveBody(c.Response(), r)
		return s.fail(c, cl, e)
	}
	bp := transport.Buffer()
	defer transport.PutBuffer(bp)
	body, ref := s.core.ReadBody(cl, c.Response(), r, (*bp)[:0])
	*bp = body
	if ref != nil {
		return s.refuse(c, ref)
	}
	return s.dispatch(c, cl, t, body)
}

// typeAccepted reports whether r's Content-Type may go on: a body must be
// JSON, and so must a POST without one of an operation that changes a
// task (writes: a cancel), unless it comes from a page of an origin
// --cors-origins lists. A browser sends a POST whose type is not JSON, or
// that has none, from any page without asking the server first (a
// "simple" request): without this rule any page could make its visitor's
// browser cancel tasks on a server without keys. Other verbs need no
// rule: a browser asks first (a preflight) for a cross-origin DELETE,
// which only a listed origin passes, and GET and HEAD change nothing.
func (s *Server) typeAccepted(r *http.Request, writes bool) bool {
	if transport.IsJSON(r.Header.Get(echo.HeaderContentType)) {
		return true
	}
	if r.ContentLength != 0 {
		return false
	}
	return !writes || r.Method != http.MethodPost || s.cors.Allows(r.Header.Get(echo.HeaderOrigin))
}

// noRoute answers a path that names no operation (404) or a verb the
// path does not take (405, with Allow).
func (s *Server) noRoute(c echo.Context, cl *transport.Call, path string, rerr *routeError) error {
	r := c.Request()
	cl.SetMethod(r.Method+" "+path, a2a.V10, false)
	e := &a2a.Error{Code: a2a.CodeMethodNotFound, Message: "No HTTP+JSON operation at " + r.Method + " " + s.base + path}
	if rerr.status == http.StatusMethodNotAllowed {
		c.Response().Header().Set("Allow", rerr.allow)
		e = &a2a.Error{Code: a2a.CodeMethodNotFound, Message: "Method " + r.Method + " not allowed on " + s.base + path + ": use " + rerr.allow}
	}
	cl.NoteError(e, nil)
	st := transport.StatusOf(e)
	if rerr.status == http.StatusMethodNotAllowed {
		st = transport.Status{Code: 12, Name: "UNIMPLEMENTED"}
	}
	return s.writeError(c, rerr.status, st, e)
}

// requestVersion checks the A2A-Version the call asks for (the header,
// else the query parameter): the binding speaks 1.0 only, and a call
// that names no version is read as 1.0 (0.3's REST paths differ).
func requestVersion(r *http.Request) *a2a.Error {
	v := transport.VersionAsked(r)
	if v == "" {
		return nil
	}
	// What the binding speaks, not what a2ad does (0.3 too, over JSON-RPC).
	if ver, e := a2a.ParseVersion(v); e != nil || ver != a2a.V10 {
		return a2a.UnsupportedVersion(v, "1.0")
	}
	return nil
}

// refuse answers a call the core refused before its operation.
func (s *Server) refuse(c echo.Context, ref *transport.Refusal) error {
	ref.SetHeaders(c.Response().Header())
	return s.writeError(c, ref.Status, transport.StatusOfRefusal(ref), transport.RefusalError(ref))
}

// fail answers e, having noted it in the call's record.
func (s *Server) fail(c echo.Context, cl *transport.Call, e *a2a.Error) error {
	cl.NoteError(e, nil)
	st := transport.StatusOf(e)
	if st.HTTP == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", "1")
	}
	return s.writeError(c, st.HTTP, st, e)
}

// writeError writes e as a google.rpc.Status body with HTTP status code.
func (s *Server) writeError(c echo.Context, code int, st transport.Status, e *a2a.Error) error {
	st.HTTP = code
	return c.Blob(code, contentError, appendStatus(nil, st, e))
}

// appendStatus appends e as google.rpc.Status JSON, the error member of
// an error answer: code (the HTTP status), status (the google.rpc.Code
// name), message, and details (the ErrorInfo, and a BadRequest for
// invalid params, as 1.0 JSON-RPC errors carry them in data).
func appendStatus(dst []byte, st transport.Status, e *a2a.Error) []byte {
	dst = append(dst, `{"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(st.HTTP), 10)
	dst = append(dst, `,"status":`...)
	dst = jsonw.AppendString(dst, st.Name)
	dst = append(dst, `,"message":`...)
	dst = jsonw.AppendString(dst, e.Message)
	dst = append(dst, `,"details":`...)
	dst = v1.AppendErrorDetails(dst, e)
	return append(dst, "}}"...)
}

// jsonBody is the body of an operation whose params it holds: a
// malformed body is -32700 with the parse error's reason and where it
// is; an empty one reads as {}. (The 1.0 decoders read each member by its
// JSON name or its proto name, as ProtoJSON parsers do.)
func jsonBody(body []byte) (json.RawMessage, *a2a.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return json.RawMessage("{}"), nil
	}
	var v json.RawMessage
	err := json.Unmarshal(body, &v)
	if err == nil {
		return body, nil
	}
	msg := err.Error()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		msg += " at offset " + strconv.FormatInt(se.Offset, 10)
	}
	return nil, &a2a.Error{Code: a2a.CodeParseError, Message: a2a.ErrParse.Message + ": " + msg}
}
