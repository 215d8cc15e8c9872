package mcp

import (
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// newRevision is the first MCP revision whose results must say their
// resultType.
const newRevision = "2026-07-28"

// complete marks res, a result a2ad answers in place of the SDK's own
// handler (tools/call, resources/read), with "resultType": "complete" for
// a request of revision 2026-07-28 or later, as the SDK marks the results
// of its handlers: the TypeScript SDK's clients refuse a result without
// it. A result of an earlier revision, one that carries its resultType
// already (a handle, an input request) and an error pass as they are.
func complete(ss *sdk.ServerSession, res sdk.Result, err error) (sdk.Result, error) {
	switch res.(type) {
	case *sdk.CallToolResult, *sdk.ReadResourceResult:
		if err == nil && newProtocol(ss) {
			return markedResult{res}, nil
		}
	}
	return res, err
}

// newProtocol reports whether the request of session ss speaks revision
// 2026-07-28 or later, as the SDK tells it: a request of an earlier
// revision has initialize params (sent, or made up from its version
// header); a new one has none.
func newProtocol(ss *sdk.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip == nil || ip.ProtocolVersion >= newRevision
}

// markedResult is a result marked complete.
type markedResult struct{ sdk.Result }

func (r markedResult) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.Result)
	if err != nil || len(b) < 2 || b[0] != '{' {
		return b, err
	}
	out := []byte(`{"resultType":"complete"`)
	if len(b) > 2 {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}
