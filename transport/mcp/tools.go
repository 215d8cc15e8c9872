package mcp

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/tasks"
)

// The catalogue metadata keys of a tool's annotations, beside
// "mcp.expose" and "mcp.tier": JSON booleans, each left out when absent.
// idempotentHint is the function's retry_safe.
const (
	MetaReadOnly    = "mcp.read_only"
	MetaDestructive = "mcp.destructive"
	MetaOpenWorld   = "mcp.open_world"
)

// permissive is the input schema of a tool whose function declares none
// that MCP takes (an object schema): any object. The task service still
// checks the input against the function's own schema.
var permissive = json.RawMessage(`{"type":"object"}`)

// DefaultPageSize is how many tools a tools/list page holds by default.
const DefaultPageSize = 100

// list is the answer to tools/list: the tools the caller may see over
// MCP, in catalogue order, a page at a time. The cursor of the next page
// names the last tool of this one (opaque to the client), so a page
// follows on from where the last ended even when the catalogue changed
// between them; a cursor naming no tool the caller sees is -32602.
func (rq *request) list(cursor string) (*sdk.ListToolsResult, error) {
	res := &sdk.ListToolsResult{Tools: []*sdk.Tool{}}
	// Each caller has its own list: no shared cache may keep it.
	res.CacheScope = "private"
	fns := rq.s.visible(rq.cl.Caller())
	if cursor != "" {
		after, err := base64.RawURLEncoding.DecodeString(cursor)
		i := slices.IndexFunc(fns, func(f *functions.Function) bool { return exposure.ToolName(f.ID) == string(after) })
		if err != nil || i < 0 {
			return nil, rq.fail(invalidParams("cursor", "is not one this server gave, or names a tool no longer listed"))
		}
		fns = fns[i+1:]
	}
	size := rq.s.cfg.PageSize
	if size <= 0 {
		size = DefaultPageSize
	}
	if len(fns) > size {
		fns = fns[:size]
		res.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(exposure.ToolName(fns[size-1].ID)))
	}
	for _, f := range fns {
		res.Tools = append(res.Tools, tool(f))
	}
	return res, nil
}

// visible lists the functions caller may call over MCP, in catalogue
// order.
func (s *Server) visible(caller tasks.Caller) []*functions.Function {
	cat := s.catalog()
	if cat == nil {
		return nil
	}
	var out []*functions.Function
	for _, f := range cat.Functions {
		if s.cfg.Policy.DecideIn(exposure.MCP, f.ID, f.Metadata, caller.Tiers).Exposed {
			out = append(out, f)
		}
	}
	return out
}

func (s *Server) catalog() *functions.Catalog {
	if s.cfg.Catalog == nil {
		return nil
	}
	return s.cfg.Catalog()
}

// find is the function behind the tool name for caller, or why caller
// may not call it: the policy's reason, with the id of the function
// (UnknownFunction, and no id, when no function opted into MCP has the
// name). The catalogue refuses at load two MCP functions of one name.
func (s *Server) find(caller tasks.Caller, name string) (f *functions.Function, id string, reason exposure.Reason) {
	cat := s.catalog()
	if cat == nil {
		return nil, "", exposure.CatalogError
	}
	if len(name) > exposure.MaxToolName {
		return nil, "", exposure.UnknownFunction
	}
	for _, f := range cat.Functions {
		if v, _ := f.Metadata[exposure.MCP.ExposeKey()].(bool); !v || exposure.ToolName(f.ID) != name {
			continue
		}
		d := s.cfg.Policy.DecideIn(exposure.MCP, f.ID, f.Metadata, caller.Tiers)
		if !d.Exposed {
			return nil, f.ID, d.Reason
		}
		return f, f.ID, d.Reason
	}
	return nil, "", exposure.UnknownFunction
}

// tool is f as an MCP tool.
func tool(f *functions.Function) *sdk.Tool {
	t := &sdk.Tool{
		Name:        exposure.ToolName(f.ID),
		Title:       f.Name,
		Description: f.Description,
		InputSchema: permissive,
		Annotations: annotations(f),
	}
	if f.Input != nil && isObjectSchema(f.Input.JSON()) {
		t.InputSchema = f.Input.JSON()
	}
	if f.Output != nil && isObjectSchema(f.Output.JSON()) {
		t.OutputSchema = f.Output.JSON()
	}
	return t
}

// isObjectSchema reports whether schema says "type": "object" at its top,
// as MCP wants of a tool's input and output schemas. One that does not
// (a oneOf of objects, say) is published as the permissive schema, its
// output schema not at all; the function's own still applies.
func isObjectSchema(schema json.RawMessage) bool {
	var s struct {
		Type json.RawMessage `json:"type"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return false
	}
	t, err := strconv.Unquote(strings.TrimSpace(string(s.Type)))
	return err == nil && t == "object"
}

// annotations are f's hints from the catalogue; nil when it gives none.
func annotations(f *functions.Function) *sdk.ToolAnnotations {
	readOnly, hasRO := f.Metadata[MetaReadOnly].(bool)
	destructive, hasD := f.Metadata[MetaDestructive].(bool)
	openWorld, hasOW := f.Metadata[MetaOpenWorld].(bool)
	if !hasRO && !hasD && !hasOW && !f.RetrySafe {
		return nil
	}
	a := &sdk.ToolAnnotations{ReadOnlyHint: readOnly, IdempotentHint: f.RetrySafe}
	if hasD {
		a.DestructiveHint = &destructive
	}
	if hasOW {
		a.OpenWorldHint = &openWorld
	}
	return a
}
