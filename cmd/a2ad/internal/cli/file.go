package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ApplyFile sets the flags of fs from the YAML file at path, a mapping
// of flag names to values (a list for a comma-separated setting). It
// names every problem by its line, in file order: an unknown or repeated
// key, a value the flag refuses. The key "config" is no setting of a
// file.
func ApplyFile(fs *flag.FlagSet, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	// Walk the nodes, not a decoded map: a problem names the line of its
	// key (a block value starts on a later line), in file order.
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("config file %s: %v", path, err)
	}
	if len(doc.Content) == 0 {
		return nil // an empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("config file %s:%d: must be a mapping of flag names to values", path, root.Line)
	}
	var problems []string
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		kn, n := root.Content[i], root.Content[i+1]
		k := kn.Value
		if first, dup := seen[k]; dup {
			problems = append(problems, fmt.Sprintf("%s:%d: duplicate key %q (first at line %d)", path, kn.Line, k, first))
			continue
		}
		seen[k] = kn.Line
		if kn.Kind != yaml.ScalarNode || k == "config" || fs.Lookup(k) == nil {
			problems = append(problems, fmt.Sprintf("%s:%d: unknown key %q", path, kn.Line, k))
			continue
		}
		val, problem := fileValue(path, k, kn, n)
		if problem != "" {
			problems = append(problems, problem)
			continue
		}
		if err := fs.Set(k, val); err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %s: %v", path, kn.Line, k, err))
		}
	}
	if len(problems) > 0 {
		return errors.New("config file: " + strings.Join(problems, "; "))
	}
	return nil
}

// fileValue is the value of key k (at node kn) as its flag takes it: a
// scalar as it is, a list joined by commas; or the problem that keeps it
// from being set.
func fileValue(path, k string, kn, n *yaml.Node) (string, string) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value, ""
	case yaml.SequenceNode: // a list, for comma-separated settings
		items := make([]string, 0, len(n.Content))
		for _, it := range n.Content {
			if it.Kind != yaml.ScalarNode {
				// "- debug::" is a mapping in YAML: refuse it rather than
				// drop a hidden prefix without a word.
				return "", fmt.Sprintf("%s:%d: %s: each item must be a string; quote one that ends in a colon, e.g. \"debug::\"", path, it.Line, k)
			}
			items = append(items, it.Value)
		}
		return strings.Join(items, ","), ""
	}
	return "", fmt.Sprintf("%s:%d: %s must be a scalar or a list", path, kn.Line, k)
}
