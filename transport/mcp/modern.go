package mcp

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fast path's share of revision 2026-07-28 (SEP-2575), as the SDK's
// stateless Streamable HTTP handler serves it (go-sdk v1.8.0,
// streamable.go servePOST, streamable_headers.go validateMcpHeaders,
// server.go ServerSession.handle): each request names its revision in
// its _meta, equal to its Mcp-Protocol-Version header, with the client's
// capabilities (and, optionally, its info); Mcp-Method names the method
// and, for tools/call, Mcp-Name the tool; each result names the server
// in its _meta. The fast path takes only the requests the SDK accepts
// and answers them as it does; it leaves every one the SDK refuses (a
// header or a _meta field missing or mismatched, a triple that does not
// decode) to the SDK, which answers its own errors.

// modernVersion is the revision whose requests carry the _meta triple.
const modernVersion = "2026-07-28"

// The headers of a 2026-07-28 request that name its message's method and
// (for tools/call) its tool.
const (
	methodHeader = "Mcp-Method"
	nameHeader   = "Mcp-Name"
)

// tripleKeys are the _meta keys of the per-request triple.
var tripleKeys = []string{sdk.MetaKeyProtocolVersion, sdk.MetaKeyClientInfo, sdk.MetaKeyClientCapabilities}

// clientCapabilities is the SDK's reading of a request's capabilities
// (its unexported clientCapabilitiesV2, field for field; Roots a
// *RootCapabilities, deprecated, of this one field): the fast path takes
// a request only if they read as the SDK reads them.
type clientCapabilities struct {
	sdk.ClientCapabilities
	Roots *struct {
		ListChanged bool `json:"listChanged,omitempty"`
	} `json:"roots,omitempty"`
}

// modernMeta reports whether a 2026-07-28 request's _meta is one the SDK
// accepts and the fast path answers alike: the triple, naming this
// revision, with capabilities and any client info that decode as the SDK
// decodes them, and nothing else but a2ad's idempotency key (no progress
// token, no log level, no tasks extension: the SDK serves those).
func modernMeta(meta sdk.Meta) bool {
	if v, _ := meta[sdk.MetaKeyProtocolVersion].(string); v != modernVersion || !plainMeta(meta, tripleKeys) || declaresTasks(meta) {
		return false
	}
	if raw, ok := meta[sdk.MetaKeyClientInfo]; ok {
		var info *sdk.Implementation
		if !remarshals(raw, &info) {
			return false
		}
	}
	var caps *clientCapabilities
	return remarshals(meta[sdk.MetaKeyClientCapabilities], &caps)
}

// remarshals reports whether raw, a value of a decoded _meta, decodes
// into v as the SDK decodes it (encoded again, then decoded): false for
// null.
func remarshals(raw, v any) bool {
	if raw == nil {
		return false
	}
	if m, ok := raw.(map[string]any); ok && len(m) == 0 {
		return true // {} decodes into any struct
	}
	b, err := json.Marshal(raw)
	return err == nil && decodeParams(b, v) == nil
}

// argumentsAlike reports whether the SDK's check of Mcp-Name reads params
// without error: it decodes them as CallToolParams, which differ from the
// CallToolParamsRaw read already only in their arguments, decoded into
// any (a number beyond float64 fails there, not in a RawMessage). The
// other fields decode into the same types as before.
func argumentsAlike(params json.RawMessage) bool {
	var p struct {
		Arguments any `json:"arguments,omitempty"`
	}
	return decodeParams(params, &p) == nil
}

// modernAnswer is res and e as the SDK answers them in 2026-07-28: a
// result names the server in its _meta and is "complete" (a tools/list
// result in its own field, a tools/call result as complete marks it); an error has the HTTP status the SDK gives its code.
func (s *Server) modernAnswer(res sdk.Result, e error) (sdk.Result, int) {
	if e != nil {
		return res, errorStatus(e)
	}
	if res == nil {
		return res, 0
	}
	if l, ok := res.(*sdk.ListToolsResult); ok {
		l.ResultType = "complete"
	}
	m := res.GetMeta()
	if m == nil {
		m = map[string]any{}
	}
	if _, ok := m[sdk.MetaKeyServerInfo]; !ok {
		m[sdk.MetaKeyServerInfo] = s.impl
		res.SetMeta(m)
	}
	if _, ok := res.(*sdk.CallToolResult); ok {
		res = markedResult{res} // "complete", as complete marks the SDK path's
	}
	return res, 0
}

// errorStatus is the HTTP status of an error answer in 2026-07-28: 404
// for an unknown method, 400 for bad params, an unsupported revision or
// missing capabilities; 0 (200) for any other.
func errorStatus(e error) int {
	var je *jsonrpc.Error
	if !errors.As(e, &je) {
		return 0
	}
	switch je.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, sdk.CodeUnsupportedProtocolVersion, sdk.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}
