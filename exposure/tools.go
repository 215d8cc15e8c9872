package exposure

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxToolName is the longest tool name MCP allows.
const MaxToolName = 128

// ToolName is the MCP tool name of the function id. MCP allows letters,
// digits, "_", "-" and "." in a name, and a2ad's ids use "::" as the
// namespace separator, so "::" becomes "." ("pricing::quote" is the tool
// "pricing.quote") and every other character MCP does not allow becomes
// "_". The mapping is not injective on its own: a catalogue is refused
// when two of its MCP functions map to one name (ToolNames), and within a
// catalogue the name leads back to its id.
func ToolName(id string) string {
	var b strings.Builder
	b.Grow(len(id))
	for i := 0; i < len(id); {
		c, size := utf8.DecodeRuneInString(id[i:])
		switch {
		case strings.HasPrefix(id[i:], "::"):
			b.WriteByte('.')
			size = 2
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
			b.WriteRune(c)
		default:
			b.WriteByte('_') // one for each character, whatever its bytes
		}
		i += size
	}
	return b.String()
}

// ToolNameProblem is why one function cannot be an MCP tool under its
// name.
type ToolNameProblem struct {
	// ID is the function the problem is in; Other, when not empty, the
	// function it collides with (the earlier one).
	ID, Other string
	// Name is the tool name ID maps to.
	Name string
}

func (p ToolNameProblem) String() string {
	if p.Other != "" {
		return fmt.Sprintf("MCP tool name %q is also the name of %q: ids that differ only in characters MCP does not allow in a tool name collide; rename one", p.Name, p.Other)
	}
	return fmt.Sprintf("MCP tool name %q is %d bytes, over MCP's %d", p.Name, len(p.Name), MaxToolName)
}

// ToolNames maps the MCP tool names of ids, in order, back to their ids,
// and lists every id whose name collides with an earlier one's or is
// longer than MCP allows. A catalogue with problems must not load: a name
// that led to two functions could call the wrong one.
func ToolNames(ids []string) (map[string]string, []ToolNameProblem) {
	names := make(map[string]string, len(ids))
	var problems []ToolNameProblem
	for _, id := range ids {
		name := ToolName(id)
		switch other, dup := names[name]; {
		case len(name) > MaxToolName:
			problems = append(problems, ToolNameProblem{ID: id, Name: name})
		case dup:
			problems = append(problems, ToolNameProblem{ID: id, Other: other, Name: name})
		default:
			names[name] = id
		}
	}
	return names, problems
}
