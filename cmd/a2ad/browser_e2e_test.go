package main

// A real browser against the real binary: headless Chromium loads a page
// from one loopback origin that reads the card and calls message/send on
// a2ad, another origin. Plain `go test` skips it without Chromium;
// A2AD_BROWSER=1 (set by .ci/run, which installs Chromium) makes its
// absence a failure.

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// chromiumOrSkip is the path of Chromium, or skips the test without it.
func chromiumOrSkip(t *testing.T) string {
	t.Helper()
	skipShort(t, "runs the real binary and a browser")
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("A2AD_BROWSER") == "1" {
			t.Fatal("A2AD_BROWSER=1 but no chromium on PATH (apt-get install chromium)")
		}
		t.Skip("no chromium on PATH: the browser test of CORS is skipped (apt-get install chromium; A2AD_BROWSER=1 makes this a failure)")
	}
	return path
}

// browserPage is the page a browser loads: its script reads the card,
// calls message/send and message/stream with a key and /a2a without one,
// on a2ad at cfg.base; writes what it saw into <pre id="out">, reports it
// to its own origin and only then lets the page finish loading (/done.js
// waits for the report), so that Chromium dumps the DOM with the results
// in.
const browserPage = `<!doctype html>
<html><body><pre id="out">pending</pre>
<script>
const cfg = %s;
const seen = {};
async function step(name, f) {
  try { seen[name] = await f(); } catch (e) { seen[name] = "error: " + e.name; }
}
(async () => {
  await step("card", async () => {
    // A2A-Version is not a safelisted header: the card gets a preflight.
    const r = await fetch(cfg.base + "/.well-known/agent-card.json", {headers: {"A2A-Version": "0.3"}});
    const card = await r.json();
    return r.status + " etag=" + (r.headers.get("ETag") ? "yes" : "no") + " " + card.name;
  });
  await step("send", async () => {
    const r = await fetch(cfg.base + "/a2a", {
      method: "POST",
      // Preflighted with all three; a2ad ignores the extensions.
      headers: {"Authorization": "Bearer " + cfg.key, "Content-Type": "application/json",
                "X-A2A-Extensions": "https://example.com/ext/v1"},
      body: JSON.stringify({jsonrpc: "2.0", id: 1, method: "message/send", params: {message: {
        kind: "message", messageId: cfg.messageId, role: "user",
        parts: [{kind: "data", data: {skill: "demo::echo", input: {from: "browser"}}}]}}}),
    });
    const a = await r.json();
    return r.status + " " + a.result.status.state + " " + JSON.stringify(a.result.artifacts[0].parts[0].data);
  });
  await step("stream", async () => {
    const r = await fetch(cfg.base + "/a2a", {
      method: "POST",
      headers: {"Authorization": "Bearer " + cfg.key, "Content-Type": "application/json", "Accept": "text/event-stream"},
      body: JSON.stringify({jsonrpc: "2.0", id: 2, method: "message/stream", params: {message: {
        kind: "message", messageId: cfg.messageId + "-stream", role: "user",
        parts: [{kind: "data", data: {skill: "demo::echo", input: {}}}]}}}),
    });
    const events = (await r.text()).split("\n").filter(l => l.startsWith("data:")).map(l => JSON.parse(l.slice(5)).result);
    const last = events[events.length - 1];
    return r.status + " " + r.headers.get("Content-Type") + " " + last.kind + " " + last.status.state + " final=" + last.final;
  });
  await step("nokey", async () => {
    const r = await fetch(cfg.base + "/a2a", {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"});
    return r.status + " " + (await r.json()).error.code;
  });
  document.getElementById("out").textContent = JSON.stringify(seen);
  await fetch("/report", {method: "POST", body: JSON.stringify(seen)});
})();
</script>
<script src="/done.js"></script>
</body></html>`

// pageServer serves browserPage, calling a2ad at the base URL stored in
// base with key, on a loopback origin of its own.
func pageServer(t *testing.T, base *atomic.Value, key string) *httptest.Server {
	t.Helper()
	reported := make(chan struct{})
	var once sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("GET /page.html", func(w http.ResponseWriter, _ *http.Request) {
		cfg, _ := json.Marshal(map[string]string{"base": base.Load().(string), "key": key, "messageId": fmt.Sprintf("browser-%d", time.Now().UnixNano())})
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, browserPage, cfg)
	})
	mux.HandleFunc("POST /report", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		once.Do(func() { close(reported) })
	})
	mux.HandleFunc("GET /done.js", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-reported:
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
		w.Header().Set("Content-Type", "text/javascript")
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// loadInChromium loads url in headless Chromium and returns what the
// page wrote into <pre id="out">, decoded.
func loadInChromium(t *testing.T, chromium, url string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-quic", "--no-first-run", "--disable-component-update",
		"--disable-sync", "--disable-dev-shm-usage", "--user-data-dir="+filepath.Join(dir, "profile"), "--dump-dom", url)
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_CACHE_HOME="+dir)
	// Chromium starts helper processes: its own group, so that all of
	// them go when it does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr strings.Builder
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, stderr.String())
	}
	s := string(dom)
	start := strings.Index(s, `<pre id="out">`)
	end := strings.Index(s, "</pre>")
	if start < 0 || end < start {
		t.Fatalf("chromium %s: no results in the DOM:\n%s\n%s", url, s, stderr.String())
	}
	out := map[string]string{}
	text := html.UnescapeString(s[start+len(`<pre id="out">`) : end])
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("chromium %s: the page wrote %q: %v", url, text, err)
	}
	return out
}

// TestBrowserCORS: a page on a listed origin reads the card (its
// preflight included) and calls message/send and message/stream with a
// key, which the browser preflights with Authorization; it reads a 401
// too. A page on
// an origin not listed still reads the card, but the browser keeps every
// answer of /a2a from it.
func TestBrowserCORS(t *testing.T) {
	chromium := chromiumOrSkip(t)
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.yaml")
	key := mustAppendKey(t, keys, "ui", "partner")
	// The pages' servers start first: a2ad must name the listed one's
	// origin. They learn a2ad's address once it runs.
	var base atomic.Value
	listed := pageServer(t, &base, key)
	unlisted := pageServer(t, &base, key)
	p := startBinary(t, exampleCatalog, filepath.Join(dir, "a2ad.db"), "--keys", keys, "--cors-origins", listed.URL)
	base.Store(p.base)

	got := loadInChromium(t, chromium, listed.URL+"/page.html")
	want := map[string]string{
		"card":   "200 etag=yes a2ad",
		"send":   `200 completed {"from":"browser"}`,
		"stream": "200 text/event-stream status-update completed final=true",
		"nokey":  "401 -32054",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("listed origin %s: %s = %q, want %q", listed.URL, k, got[k], w)
		}
	}

	got = loadInChromium(t, chromium, unlisted.URL+"/page.html")
	want = map[string]string{
		"card":   "200 etag=yes a2ad",
		"send":   "error: TypeError",
		"stream": "error: TypeError",
		"nokey":  "error: TypeError",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("origin not listed %s: %s = %q, want %q", unlisted.URL, k, got[k], w)
		}
	}
}
