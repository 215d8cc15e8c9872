package mcp_test

import "strings"

// triple is a 2026-07-28 request's _meta: its revision and capabilities,
// then more (each `"key":value`).
func triple(more ...string) string {
	return `"_meta":{` + strings.Join(append([]string{`"io.modelcontextprotocol/protocolVersion":"2026-07-28"`,
		`"io.modelcontextprotocol/clientCapabilities":{}`}, more...), ",") + `}`
}

// modern26 are the headers of a 2026-07-28 request of method, naming
// name ("" for no Mcp-Name).
func modern26(method, name string) []string {
	h := []string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", method}
	if name != "" {
		h = append(h, "Mcp-Name", name)
	}
	return h
}

// modernToSDK are the 2026-07-28 cases the fast path leaves to the SDK;
// modernEither those either path may answer (as long as the answers are
// the same).
var (
	modernToSDK = map[string]bool{
		"26 no Mcp-Method": true, "26 Mcp-Method mismatch": true, "26 Mcp-Method of a list": true,
		"26 no Mcp-Name": true, "26 Mcp-Name mismatch": true, "26 Mcp-Name in capitals": true, "26 Mcp-Name in Base64": true, "26 empty name": true,
		"26 no _meta": true, "26 no _meta version": true, "26 _meta version mismatch": true, "26 _meta version a number": true,
		"26 no capabilities": true, "26 capabilities null": true, "26 capabilities an array": true,
		"26 capabilities roots a number": true, "26 roots listChanged a string": true, "26 client info a number": true, "26 client info null": true,
		"26 client info name a number": true, "26 tasks extension": true, "26 progress": true, "26 log level": true,
		"26 other meta": true, "26 header 2025 _meta 2026": true, "26 list no params": true, "26 list no _meta": true,
		"26 list progress": true, "26 list no Mcp-Method": true, "26 name a number": true, "26 huge number": true,
	}
	modernEither = map[string]bool{
		"26 duplicate _meta": true, "26 duplicate version": true, "26 duplicate name": true, "26 duplicate arguments": true,
	}
)

// modernCases are TestFastPathSameAnswers's requests of revision
// 2026-07-28.
func modernCases() []sameCase {
	call := func(params string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + params + `}`
	}
	echo := func(args string, meta ...string) string {
		return call(`{"name":"demo.echo","arguments":` + args + `,` + triple(meta...) + `}`)
	}
	list := func(params string) string {
		return `{"jsonrpc":"2.0","id":"l","method":"tools/list","params":` + params + `}`
	}
	h, hl := modern26("tools/call", "demo.echo"), modern26("tools/list", "")
	return []sameCase{
		{"26 echo", "partner-key", echo(`{"message":"hi"}`), h},
		{"26 client info", "partner-key", echo(`{"message":"hi"}`, `"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}`), h},
		{"26 capabilities", "partner-key", call(`{"name":"demo.echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{}},"extensions":{"x":{}}}}}`), h},
		{"26 html text", "partner-key", echo(`{"message":"html"}`), h},
		{"26 image and data", "partner-key", echo(`{"message":"file"}`), h},
		{"26 function failed", "partner-key", echo(`{"message":"fail"}`), h},
		{"26 input required", "partner-key", echo(`{"message":"wait"}`), h},
		{"26 caller busy", "partner-key", echo(`{"message":"busy"}`), h},
		{"26 schema", "partner-key", echo(`{"message":1}`), h},
		{"26 array arguments", "partner-key", echo(`[1]`), h},
		{"26 null arguments", "partner-key", echo(`null`), h},
		{"26 hidden tool", "partner-key", call(`{"name":"pricing.quote","arguments":{},` + triple() + `}`), modern26("tools/call", "pricing.quote")},
		{"26 unknown tool", "partner-key", call(`{"name":"no.such",` + triple() + `}`), modern26("tools/call", "no.such")},
		{"26 key", "partner-key", echo(`{}`, `"io.a2ad/idempotency-key":"k26"`), h},
		{"26 key reused", "partner-key", echo(`{}`, `"io.a2ad/idempotency-key":"reused"`), h},
		{"26 bad key", "partner-key", echo(`{}`, `"io.a2ad/idempotency-key":7`), h},
		{"26 no Mcp-Method", "partner-key", echo(`{}`), modern26("", "demo.echo")},
		{"26 Mcp-Method mismatch", "partner-key", echo(`{}`), modern26("tools/Call", "demo.echo")},
		{"26 Mcp-Method of a list", "partner-key", echo(`{}`), modern26("tools/list", "demo.echo")},
		{"26 no Mcp-Name", "partner-key", echo(`{}`), modern26("tools/call", "")},
		{"26 Mcp-Name mismatch", "partner-key", echo(`{}`), modern26("tools/call", "pricing.quote")},
		{"26 Mcp-Name in capitals", "partner-key", echo(`{}`), modern26("tools/call", "Demo.echo")},
		// The spec has the server decode it; the SDK refuses it (400).
		{"26 Mcp-Name in Base64", "partner-key", echo(`{}`), modern26("tools/call", "=?base64?ZGVtby5lY2hv?=")},
		{"26 empty name", "partner-key", call(`{"name":"",` + triple() + `}`), modern26("tools/call", "")},
		{"26 name a number", "partner-key", call(`{"name":7,` + triple() + `}`), modern26("tools/call", "7")},
		{"26 huge number", "partner-key", echo(`{"message":1.0e400}`), h},
		{"26 no _meta", "partner-key", call(`{"name":"demo.echo"}`), h},
		{"26 no _meta version", "partner-key", call(`{"name":"demo.echo","_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`), h},
		{"26 _meta version mismatch", "partner-key", call(`{"name":"demo.echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25",` +
			`"io.modelcontextprotocol/clientCapabilities":{}}}`), h},
		{"26 _meta version a number", "partner-key", call(`{"name":"demo.echo","_meta":{"io.modelcontextprotocol/protocolVersion":2026,` +
			`"io.modelcontextprotocol/clientCapabilities":{}}}`), h},
		{"26 no capabilities", "partner-key", call(`{"name":"demo.echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`), h},
		{"26 capabilities null", "partner-key", call(`{"name":"demo.echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":null}}`), h},
		{"26 capabilities an array", "partner-key", call(`{"name":"demo.echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":[]}}`), h},
		{"26 capabilities roots a number", "partner-key", call(`{"name":"demo.echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{"roots":1}}}`), h},
		{"26 roots listChanged a string", "partner-key", call(`{"name":"demo.echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":"x"}}}}`), h},
		{"26 roots null", "partner-key", call(`{"name":"demo.echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{"roots":null,"sampling":{"tools":{}}}}}`), h},
		{"26 client info a number", "partner-key", echo(`{}`, `"io.modelcontextprotocol/clientInfo":7`), h},
		{"26 client info null", "partner-key", echo(`{}`, `"io.modelcontextprotocol/clientInfo":null`), h},
		{"26 client info name a number", "partner-key", echo(`{}`, `"io.modelcontextprotocol/clientInfo":{"name":7}`), h},
		{"26 tasks extension", "partner-key", call(`{"name":"demo.echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}`), h},
		{"26 progress", "partner-key", echo(`{}`, `"progressToken":"p"`), h},
		{"26 log level", "partner-key", echo(`{}`, `"io.modelcontextprotocol/logLevel":"debug"`), h},
		{"26 other meta", "partner-key", echo(`{}`, `"x":1`), h},
		{"26 header 2025 _meta 2026", "partner-key", echo(`{}`), []string{"Mcp-Protocol-Version", "2025-11-25", "Mcp-Method", "tools/call", "Mcp-Name", "demo.echo"}},
		{"26 duplicate _meta", "partner-key", call(`{"name":"demo.echo",` + triple() + `,"_meta":{}}`), h},
		{"26 duplicate version", "partner-key", echo(`{}`, `"io.modelcontextprotocol/protocolVersion":"2025-11-25"`), h},
		{"26 duplicate name", "partner-key", call(`{"name":"demo.echo",` + triple() + `,"name":"no.such"}`), h},
		{"26 duplicate arguments", "partner-key", call(`{"name":"demo.echo","arguments":{"message":1e400},"arguments":{},` + triple() + `}`), h},
		{"26 list", "partner-key", list(`{` + triple() + `}`), hl},
		{"26 list internal", "internal-key", list(`{` + triple() + `}`), hl},
		{"26 list with Mcp-Name", "partner-key", list(`{` + triple() + `}`), modern26("tools/list", "demo.echo")},
		{"26 list cursor", "partner-key", list(`{"cursor":"ZGVtby5lY2hv",` + triple() + `}`), hl},
		{"26 list bad cursor", "partner-key", list(`{"cursor":"nope",` + triple() + `}`), hl},
		{"26 list no params", "partner-key", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, hl},
		{"26 list no _meta", "partner-key", list(`{}`), hl},
		{"26 list progress", "partner-key", list(`{` + triple(`"progressToken":1`) + `}`), hl},
		{"26 list no Mcp-Method", "partner-key", list(`{` + triple() + `}`), hl[:2]},
	}
}
