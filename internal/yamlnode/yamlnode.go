// Package yamlnode holds what a2ad's YAML loaders (the function catalogue,
// the keys file) share to report every problem of a file with its
// position: walking yaml.Node trees, naming a value's kind in messages,
// recording problems as a file is read (Checker), the readers of keys,
// strings and bools, the LoadError both loaders return, and formatting
// problems as "path:line:col: /pointer (subject): message".
package yamlnode

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Resolve follows aliases to the node they name.
func Resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// Lookup returns the first key called key of the mapping n and its value,
// or nils.
func Lookup(n *yaml.Node, key string) (k, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := Resolve(n.Content[i]); k.Kind == yaml.ScalarNode && k.Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// Kind names the kind of a value for messages: "a mapping", "a string".
func Kind(n *yaml.Node) string {
	n = Resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a bool"
		case "!!null":
			return "null"
		case "!!timestamp":
			return "a timestamp"
		}
		return "a value tagged " + n.ShortTag()
	}
	return "nothing"
}

// FormatProblem formats one problem as `12:5: /pointer (subject): message`,
// leaving out the parts that are unknown (0 or ""). subject names what the
// problem is in, e.g. `function "pricing::quote"`.
func FormatProblem(line, column int, pointer, subject, message string) string {
	var b strings.Builder
	if line > 0 {
		b.WriteString(strconv.Itoa(line))
		if column > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(column))
		}
		b.WriteString(": ")
	}
	if pointer != "" || subject != "" {
		b.WriteString(pointer)
		if subject != "" {
			if pointer != "" {
				b.WriteByte(' ')
			}
			b.WriteString("(" + subject + ")")
		}
		b.WriteString(": ")
	}
	b.WriteString(message)
	return b.String()
}

// JoinProblems writes one line per problem, each prefixed with "path:".
func JoinProblems[P fmt.Stringer](path string, problems []P) string {
	var b strings.Builder
	for i, p := range problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		if path != "" {
			b.WriteString(path)
			b.WriteByte(':')
		}
		b.WriteString(p.String())
	}
	return b.String()
}

var syntaxLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserProblems are the messages of the YAML parser (as opposed to its
// scanner). For these the yaml package reports the line where the
// enclosing construct starts, counted from 0, so SyntaxError adds one.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// SyntaxError splits a YAML syntax error into its 1-based line (0 when
// the parser gave none) and its message, as "not valid YAML: ...".
func SyntaxError(err error) (line int, message string) {
	msg := err.Error()
	if m := syntaxLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if parserProblems[msg] {
			line++
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return line, "not valid YAML: " + msg
}
