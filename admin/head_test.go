package admin_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a2ad/a2ad/admin"
)

// TestProbesAnswerHead: uptime checkers send HEAD; the probes answer it
// with GET's status and length and no body, a 503 too; other routes do
// not.
func TestProbesAnswerHead(t *testing.T) {
	reason := ""
	ts := httptest.NewServer(newServer(admin.Config{NotReady: func() string { return reason }}).Handler())
	t.Cleanup(ts.Close)
	head := func(path string) (int, string, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodHead, ts.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Length"), b
	}
	for _, tt := range []struct {
		path, reason string
		code         int
		length       string
	}{
		{"/healthz", "", 200, "15"},        // {"status":"ok"}
		{"/readyz", "", 200, "18"},         // {"status":"ready"}
		{"/readyz", "draining", 503, "43"}, // {"reason":"draining","status":"not_ready"}\n
		{"/admin/v1/overview", "", 405, ""},
	} {
		reason = tt.reason
		code, length, body := head(tt.path)
		if code != tt.code || length != tt.length || len(body) != 0 {
			t.Errorf("HEAD %s (not ready: %q): %d Content-Length %q body %q, want %d %q and no body", tt.path, tt.reason, code, length, body, tt.code, tt.length)
		}
	}
}
