package callers

import (
	"fmt"
	"strconv"
	"time"

	"github.com/a2ad/a2ad/internal/yamlnode"
	yaml "go.yaml.in/yaml/v3"
)

// IdemOff is the idempotency window that turns deduplication by
// messageId off; the window 0 keeps a messageId as long as its task.
const IdemOff time.Duration = -1

// ParseIdemWindow reads an idempotency window as the flag and the keys
// file write it: a positive duration (10m, 24h), 0 for no deduplication
// (IdemOff), or "retention" for as long as the task is kept (0).
func ParseIdemWindow(s string) (time.Duration, error) {
	if s == "retention" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n == 0 {
		return IdemOff, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil || d < 0:
		return 0, fmt.Errorf("must be a duration such as 10m, 0 for no deduplication, or \"retention\", got %q", s)
	case d == 0:
		return IdemOff, nil
	}
	return d, nil
}

// FormatIdemWindow writes w as ParseIdemWindow reads it.
func FormatIdemWindow(w time.Duration) string {
	switch {
	case w == 0:
		return "retention"
	case w < 0:
		return "0"
	}
	return w.String()
}

// idemWindow reads an entry's idempotency_window.
func (l *keyLoader) idemWindow(v *yaml.Node, ptr string) (time.Duration, bool) {
	n := yamlnode.Resolve(v)
	if n.Kind != yaml.ScalarNode {
		l.Add(v, ptr, "idempotency_window must be a duration such as 10m, 0 for no deduplication, or \"retention\", got %s", yamlnode.Kind(n))
		return 0, false
	}
	w, err := ParseIdemWindow(n.Value)
	if err != nil {
		l.Add(v, ptr, "idempotency_window %v", err)
		return 0, false
	}
	return w, true
}
