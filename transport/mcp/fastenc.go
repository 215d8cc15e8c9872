package mcp

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2ad/a2ad/internal/jsonw"
	"github.com/a2ad/a2ad/transport"
)

// The fast path's own encoder of a tools/call answer, for the shapes
// a2ad's request.call makes of a task's outcome (text content, a data
// part's structured content, the task's id and state in _meta, the
// server's info from 2026-07-28): the bytes the SDK's encoding gives
// them (CallToolResult.MarshalJSON, markedResult, jsonrpc.EncodeMessage),
// written once. That encoding marshals the result and then compacts it
// twice more, each text content and the structured content within it
// too: about a quarter of the fast path's CPU (issue 29, section 6). A
// result of any other shape, or holding what the SDK's encoding would
// escape differently here, is left to writeFast.

// resultTypeField is the index of CallToolResult's unexported
// resultType, which only the SDK sets: a result with one is left to the
// SDK's encoding. -1 if the SDK's type has no such string field (every
// result is left to it then).
var resultTypeField = func() int {
	f, ok := reflect.TypeFor[sdk.CallToolResult]().FieldByName("resultType")
	if !ok || len(f.Index) != 1 || f.Type.Kind() != reflect.String {
		return -1
	}
	return f.Index[0]
}()

// writeCallResult answers the message id with res, a tools/call result,
// as writeFast would, byte for byte, and reports whether it did; false
// leaves w untouched for writeFast.
func (s *Server) writeCallResult(w http.ResponseWriter, id jsonrpc.ID, res sdk.Result, status int) bool {
	var r *sdk.CallToolResult
	marked := false
	switch v := res.(type) {
	case *sdk.CallToolResult:
		r = v
	case markedResult:
		r, _ = v.Result.(*sdk.CallToolResult)
		marked = true
	}
	if r == nil || !plainResult(r) {
		return false
	}
	bp := transport.Buffer()
	defer transport.PutBuffer(bp)
	b, ok := appendID(append((*bp)[:0], `{"jsonrpc":"2.0","id":`...), id)
	if !ok {
		return false
	}
	b = append(b, `,"result":{`...)
	if marked {
		b = append(b, `"resultType":"complete",`...)
	}
	if b, ok = s.appendMeta(b, r.Meta); !ok {
		return false
	}
	if b, ok = appendResultBody(b, r); !ok {
		return false
	}
	*bp = b
	sendFast(w, b, status)
	return true
}

// plainResult reports whether r has nothing the encoder here does not
// write: no input requests, request state or result type, and only text
// content without _meta or annotations.
func plainResult(r *sdk.CallToolResult) bool {
	if resultTypeField < 0 || r.InputRequests != nil || r.RequestState != "" ||
		reflect.ValueOf(r).Elem().Field(resultTypeField).String() != "" {
		return false
	}
	for _, c := range r.Content {
		if t, ok := c.(*sdk.TextContent); !ok || t == nil || len(t.Meta) > 0 || t.Annotations != nil {
			return false
		}
	}
	return true
}

// appendID appends id as EncodeMessage writes it, which does not escape
// HTML (AppendString does: such an id is left to writeFast).
func appendID(b []byte, id jsonrpc.ID) ([]byte, bool) {
	switch v := id.Raw().(type) {
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case string:
		return jsonw.AppendString(b, v), !strings.ContainsAny(v, "<>&")
	}
	return b, false
}

// appendMeta appends a result's _meta member and its comma, as
// encoding/json writes a map (keys sorted): string values, and the
// server's own info; false for any other value.
func (s *Server) appendMeta(b []byte, m sdk.Meta) ([]byte, bool) {
	if len(m) == 0 {
		return b, true
	}
	var arr [4]string
	keys := arr[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, `"_meta":{`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonw.AppendString(b, k), ':')
		switch v := m[k].(type) {
		case string:
			b = jsonw.AppendString(b, v)
		case *sdk.Implementation:
			if v != s.impl || s.implJSON == nil {
				return b, false
			}
			b = append(b, s.implJSON...)
		default:
			return b, false
		}
	}
	return append(b, "},"...), true
}

// appendResultBody appends r's content, structured content and isError,
// and closes the result and the message.
func appendResultBody(b []byte, r *sdk.CallToolResult) ([]byte, bool) {
	if r.Content == nil {
		b = append(b, `"content":null`...)
	} else {
		b = append(b, `"content":[`...)
		for i, c := range r.Content {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(jsonw.AppendString(append(b, `{"type":"text","text":`...), c.(*sdk.TextContent).Text), '}')
		}
		b = append(b, ']')
	}
	if r.StructuredContent != nil {
		raw, ok := r.StructuredContent.(json.RawMessage)
		if !ok || len(raw) == 0 {
			return b, false
		}
		b = append(b, `,"structuredContent":`...)
		n := len(b)
		out, err := jsonw.AppendCompact(b, raw)
		// json.Marshal escapes these for HTML where Compact does not.
		if err != nil || htmlSensitive(out[n:]) {
			return b, false
		}
		b = out
	}
	if r.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, "}}"...), true
}

// htmlSensitive reports whether compact JSON holds what json.Marshal
// writes escaped and json.Compact does not: <, >, &, U+2028, U+2029.
func htmlSensitive(b []byte) bool {
	for i, c := range b {
		switch {
		case c == '<' || c == '>' || c == '&':
			return true
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8:
			return true
		}
	}
	return false
}

// sendFast writes data, a JSON-RPC answer, with the SDK's stateless JSON
// answer's headers and status (0 for 200).
func sendFast(w http.ResponseWriter, data []byte, status int) {
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	if status != 0 {
		w.WriteHeader(status)
	}
	_, _ = w.Write(data)
}
