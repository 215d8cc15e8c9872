package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdminOnTheMainListener: an admin route asked of the main listener
// is a 404 that says where the admin listener is, in the JSON-RPC
// listener's one error shape, and the operator CLI, pointed at the main
// listener, prints that.
func TestAdminOnTheMainListener(t *testing.T) {
	m := startMain(t, nil)
	const want = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"this is the main listener; the admin listener is --admin-listen (default 127.0.0.1:8081)"}}`
	for _, path := range []string{"/admin/v1/overview", "/admin/push/dead-letters", "/admin/store/backup"} {
		resp, body := httpGet(t, m.BaseURL()+path)
		if resp.StatusCode != 404 || strings.TrimSpace(string(body)) != want {
			t.Errorf("GET %s on the main listener = %d %s, want 404 %s", path, resp.StatusCode, body, want)
		}
	}
	out := filepath.Join(t.TempDir(), "b.db")
	for _, tc := range []struct {
		args       []string
		wantStderr string
	}{
		{[]string{"tasks", "list", "--server", m.BaseURL()},
			"a2ad: tasks list: this is the main listener; the admin listener is --admin-listen (default 127.0.0.1:8081) (HTTP 404)\n"},
		{[]string{"reload", "--server", m.BaseURL()},
			"a2ad: reload: this is the main listener; the admin listener is --admin-listen (default 127.0.0.1:8081) (HTTP 404)\n"},
		{[]string{"store", "backup", "--server", m.BaseURL(), "--out", out},
			"a2ad: store backup from the a2ad at " + m.BaseURL() + ": the server answered 404 Not Found: this is the main listener; " +
				"the admin listener is --admin-listen (default 127.0.0.1:8081); " + out + " was not written\n"},
	} {
		code, _, errOut := runA2AD(t, nil, tc.args...)
		if code != 1 || errOut != tc.wantStderr {
			t.Errorf("a2ad %s = %d, stderr %q; want 1, %q", strings.Join(tc.args[:2], " "), code, errOut, tc.wantStderr)
		}
	}
}

// TestReloadCommand: a2ad reload puts a changed keys file in force and
// says so; a keys file with a problem is reported, keeps what is in
// force, and exits 1.
func TestReloadCommand(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	acme := mustAppendKey(t, keys, "acme", "partner")
	m := startMain(t, func(c *Config) { c.Keys = keys })
	admin := "http://" + m.AdminAddr()
	card := rpcBody("agent/getAuthenticatedExtendedCard", nil)
	status := func(key string) int {
		t.Helper()
		resp, _ := postURL(t, nil, m.BaseURL()+"/a2a", card, map[string][]string{"Content-Type": {"application/json"}, "X-Api-Key": {key}})
		return resp.StatusCode
	}
	if got := status(acme); got != 200 {
		t.Fatalf("acme before the reload: HTTP %d, want 200", got)
	}

	data, err := os.ReadFile(keys)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keys, []byte(strings.Replace(string(data), "- id: acme\n", "- id: acme\n    enabled: false\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runA2AD(t, map[string]string{"A2AD_ADMIN_URL": admin}, "reload")
	wantOut := "keys       reloaded: 1 caller, 0 streams ended\naudit log  no file of its own\n"
	if code != 0 || !strings.HasPrefix(out, "catalog    reloaded: version ") || !strings.HasSuffix(out, wantOut) || errOut != "" {
		t.Errorf("a2ad reload = %d\n%s(stderr %q)\nwant 0 and ...%s", code, out, errOut, wantOut)
	}
	if got := status(acme); got != 401 {
		t.Errorf("acme after the reload that disabled it: HTTP %d, want 401", got)
	}

	if err := os.WriteFile(keys, []byte("keys: [{id: acme}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runA2AD(t, nil, "reload", "--server", admin)
	if code != 1 || !strings.Contains(out, "keys       not reloaded: the keys of 1 caller stay in force\n  ") ||
		errOut != "a2ad: reload: a part has problems and kept what was in force\n" {
		t.Errorf("a2ad reload of a broken keys file = %d\n%s(stderr %q)", code, out, errOut)
	}
	code, _, errOut = runA2AD(t, nil, "reload", "extra")
	if code != 2 || errOut != "a2ad: reload: unexpected argument \"extra\"\n" {
		t.Errorf("a2ad reload extra = %d, %q; want 2 and the argument named", code, errOut)
	}
}
