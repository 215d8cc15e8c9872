package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"

	"github.com/a2ad/a2ad/transport"
)

// The fast path answers the common tools/call and tools/list itself,
// before the SDK, with the answer the SDK would give, byte for byte
// (TestFastPathSameAnswers sends a table of requests both ways). The SDK
// serves a stateless request by building a server and a session for it,
// connecting them over a transport and passing the message through
// goroutines and channels: about 400 µs of CPU a call (issue 29, section
// 6), twice a2ad's whole A2A send. What a2ad needs of it for these two
// methods is the JSON-RPC decoding and encoding (used here, from the
// SDK's jsonrpc package) and the params' types; the methods themselves
// are a2ad's (request.call, request.list) either way.
//
// Revision 2026-07-28 (SEP-2575) is answered here too, as the SDK's
// stateless handler answers it (see modern.go): a request that carries
// the per-request _meta triple matching its Mcp-Protocol-Version, and
// the Mcp-Method (and for a call Mcp-Name) headers matching its body; a
// result with the server's info in its _meta (and a tools/list result
// with resultType "complete"); an error answered 400 or 404 for the codes
// the SDK maps so.
//
// Anything unusual goes to the SDK unchanged: a revision after
// 2026-07-28, a request without both media types in Accept or without
// exactly application/json as its Content-Type, a Last-Event-ID, a batch,
// a message the SDK's decoder refuses, params it would refuse, a _meta
// other than a2ad's idempotency key (a progress token, the tasks
// extension) and, from 2026-07-28, the triple, any header or _meta triple
// the SDK would refuse, and every other method.

// fastVersions are the revisions the fast path answers: those the SDK
// speaks up to 2026-07-28.
var fastVersions = slices.DeleteFunc(sdk.SupportedProtocolVersions(), func(v string) bool { return v > modernVersion })

// serveFast answers a tools/call or tools/list message the SDK would
// answer as described above, and reports whether it did; false leaves w
// untouched for the SDK.
func (s *Server) serveFast(w http.ResponseWriter, r *http.Request, cl *transport.Call, env *envelope, body []byte) bool {
	if s.cfg.SDKOnly || (env.Method != "tools/call" && env.Method != "tools/list") || !fastHeaders(r.Header) {
		return false
	}
	id, params, ok := decodeCall(body, env.Method)
	if !ok {
		return false
	}
	modern := r.Header.Get(versionHeader) == modernVersion
	if modern && r.Header.Get(methodHeader) != env.Method {
		return false
	}
	rq := &request{s: s, cl: cl, ctx: r.Context(), id: env.ID}
	var (
		res sdk.Result
		e   error
	)
	if env.Method == "tools/call" {
		p, ok := fastCallParams(params, modern, r.Header)
		if !ok {
			return false
		}
		res, e = rq.call(r.Context(), &sdk.CallToolRequest{Params: p})
	} else {
		p, ok := fastListParams(params, modern)
		if !ok {
			return false
		}
		res, e = rq.list(p.Cursor)
	}
	status := 0
	if modern {
		res, status = s.modernAnswer(res, e)
	}
	if e != nil || !s.writeCallResult(w, id, res, status) {
		writeFast(w, id, res, e, status)
	}
	s.fastAnswers.Add(1)
	return true
}

// fastCallParams decodes a tools/call's params, and reports whether the
// fast path answers it: params the SDK reads alike, with a _meta of
// a2ad's idempotency key alone, and from 2026-07-28 the _meta triple and
// the Mcp-Name header that the SDK accepts.
func fastCallParams(params json.RawMessage, modern bool, h http.Header) (*sdk.CallToolParamsRaw, bool) {
	var p *sdk.CallToolParamsRaw
	if len(params) == 0 || decodeParams(params, &p) != nil || p == nil {
		return nil, false
	}
	if !modern {
		return p, plainMeta(p.Meta, nil)
	}
	n := h.Get(nameHeader)
	return p, n != "" && n == p.Name && modernMeta(p.Meta) && argumentsAlike(params)
}

// fastListParams decodes a tools/list's params (nil, none, for an empty
// list), and reports whether the fast path answers it: params the SDK
// reads alike, without a _meta before 2026-07-28, with the triple alone
// from then on.
func fastListParams(params json.RawMessage, modern bool) (*sdk.ListToolsParams, bool) {
	var p *sdk.ListToolsParams
	if len(params) > 0 && decodeParams(params, &p) != nil {
		return nil, false
	}
	if p == nil {
		p = &sdk.ListToolsParams{}
		return p, !modern
	}
	if !modern {
		return p, len(p.Meta) == 0
	}
	return p, modernMeta(p.Meta)
}

// fastHeaders reports whether a request's headers are ones the fast path
// answers as the SDK does.
func fastHeaders(h http.Header) bool {
	if !slices.Contains(fastVersions, h.Get(versionHeader)) || h.Get(echo.HeaderContentType) != echo.MIMEApplicationJSON ||
		len(h.Values("Last-Event-ID")) > 0 {
		return false
	}
	jsonOK, streamOK := accepts(h.Values("Accept"))
	return jsonOK && streamOK
}

// accepts is the SDK's reading of Accept: whether it allows a JSON
// answer and an SSE stream.
func accepts(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

// wireMessage is a JSON-RPC message as the SDK decodes it.
type wireMessage struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// maxDepth is the deepest nesting of arrays and objects the SDK reads.
const maxDepth = 1000

// decodeCall decodes body as the SDK decodes a request of method with an
// id, one message alone; false for any body it might read otherwise or
// refuse (the SDK answers those).
func decodeCall(body []byte, method string) (jsonrpc.ID, json.RawMessage, bool) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	// No batch, and nothing near the SDK's depth bound (a count of every
	// opening bracket, even in strings, is at least the depth).
	if len(trimmed) == 0 || trimmed[0] != '{' || bytes.Count(body, []byte("{"))+bytes.Count(body, []byte("[")) > maxDepth {
		return jsonrpc.ID{}, nil, false
	}
	var m wireMessage
	var name string
	if decodeParams(trimmed, &m) != nil || m.VersionTag != "2.0" || decodeParams(m.Method, &name) != nil || name != method {
		return jsonrpc.ID{}, nil, false
	}
	id, err := jsonrpc.MakeID(m.ID)
	if err != nil || !id.IsValid() {
		return jsonrpc.ID{}, nil, false
	}
	return id, m.Params, true
}

// decodeParams decodes one JSON value, b, as the SDK does: with the JSON
// library it uses, case-sensitively. Bytes after the value are an error
// here (the SDK refuses a message with them, and the fast path leaves
// what it is unsure of to the SDK).
func decodeParams(b []byte, v any) error {
	rest, err := sjson.Parse(b, v, sjson.DontMatchCaseInsensitiveStructFields)
	if err == nil && len(bytes.TrimLeft(rest, " \t\r\n")) > 0 {
		return errTrailing
	}
	return err
}

var errTrailing = errors.New("bytes after the JSON value")

// plainMeta reports whether a call's _meta holds nothing but a2ad's
// idempotency key and the keys in also: no progress token (its
// notifications need the SDK's stream), no tasks extension, nothing of a
// later revision.
func plainMeta(meta sdk.Meta, also []string) bool {
	for k := range meta {
		if k != IdempotencyKey && !slices.Contains(also, k) {
			return false
		}
	}
	return true
}

// writeFast answers the message id with res or e as the SDK's stateless
// JSON answer does: its headers, its encoding (no HTML escaping), status
// (0 for 200).
func writeFast(w http.ResponseWriter, id jsonrpc.ID, res any, e error, status int) {
	resp := &jsonrpc.Response{ID: id, Error: e}
	if e == nil {
		raw, err := encodeResult(res)
		if err != nil {
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: the result does not encode"}
		}
		resp.Result = raw
	}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		data = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}`)
	}
	sendFast(w, data, status)
}

// encodeResult is res as the SDK encodes a result: with an encoder that
// does not escape HTML, which compacts what a MarshalJSON returns. A
// CallToolResult's MarshalJSON returns json.Marshal's output, compact
// already: it is taken as it is, which saves compacting it again.
func encodeResult(res any) (json.RawMessage, error) {
	if r, ok := res.(*sdk.CallToolResult); ok && r != nil {
		return r.MarshalJSON()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
