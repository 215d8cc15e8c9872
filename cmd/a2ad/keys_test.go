package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestKeysCommandRefuses pins the messages and exit codes of keys create
// and keys revoke on bad input.
func TestKeysCommandRefuses(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	if code, out, errOut := runA2AD(t, nil, "keys", "create", "--keys", keys, "--id", "acme", "--tier", "partner"); code != 0 || !strings.HasPrefix(out, "a2ad_") {
		t.Fatalf("keys create: %d %q %q", code, out, errOut)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"create", "--keys", keys, "--id", "globex"}, 1,
			"a2ad keys create: append key for new caller \"globex\": tiers must list at least one tier\n"},
		{[]string{"create", "--keys", keys, "--id", "acme", "--tier", "internal"}, 1,
			"a2ad keys create: append key for caller \"acme\": its tiers are partner, not internal: a new key takes its caller's tiers (change them in the file)\n"},
		{[]string{"revoke", "--keys", keys}, 2, "a2ad keys revoke: --id is required\n"},
		{[]string{"revoke", "--keys", keys, "--id", "globex"}, 1, "a2ad keys revoke: revoke keys: no caller \"globex\" in " + keys + "\n"},
		{[]string{"revoke", "--keys", keys + ".missing", "--id", "acme"}, 1, "a2ad keys revoke: revoke keys: stat " + keys + ".missing: no such file or directory\n"},
		{[]string{"revoke", "--id", "acme"}, 2, "a2ad keys revoke: no keys file given (--keys or A2AD_KEYS)\n"},
	}
	for _, tt := range tests {
		code, out, errOut := runA2AD(t, nil, append([]string{"keys"}, tt.args...)...)
		if code != tt.code || out != "" || errOut != tt.want {
			t.Errorf("a2ad keys %s = %d, stdout %q, stderr %q; want %d, %q", strings.Join(tt.args, " "), code, out, errOut, tt.code, tt.want)
		}
	}
	// Revoking all of acme's keys, then again: nothing left in force.
	if code, out, _ := runA2AD(t, nil, "keys", "revoke", "--keys", keys, "--id", "acme"); code != 0 || len(strings.TrimSpace(out)) != 8 {
		t.Errorf("keys revoke: %d %q, want 0 and one key id", code, out)
	}
	if code, _, errOut := runA2AD(t, nil, "keys", "revoke", "--keys", keys, "--id", "acme"); code != 1 ||
		errOut != "a2ad keys revoke: revoke keys: caller \"acme\" has no key in force\n" {
		t.Errorf("keys revoke again: %d %q", code, errOut)
	}
}
