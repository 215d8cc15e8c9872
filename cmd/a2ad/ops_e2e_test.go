package main

import (
	"io"
	"net/http"
	"testing"
	"time"
)

func getStatus(tb testing.TB, url string) (int, string) {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestReadiness: /readyz answers on both listeners while a2ad takes work,
// and fails as soon as shutdown begins, while running calls finish.
func TestReadiness(t *testing.T) {
	m := startMain(t, func(c *Config) { c.ShutdownGrace = 5 * time.Second })
	base, admin := "http://"+m.Addr(), "http://"+m.AdminAddr()
	for _, u := range []string{base + "/readyz", admin + "/readyz"} {
		if code, body := getStatus(t, u); code != http.StatusOK || body != `{"status":"ready"}` {
			t.Fatalf("%s: %d %s", u, code, body)
		}
	}
	if code, body := getStatus(t, admin+"/healthz"); code != http.StatusOK || body != `{"status":"ok"}` {
		t.Fatalf("admin /healthz: %d %s", code, body)
	}
	// A blocking call keeps the shutdown in its grace period.
	done := make(chan struct{})
	go func() {
		defer close(done)
		rpc(t, base, "message/send", sendParams("r-1", "demo::sleep", map[string]any{"seconds": 1}, true))
	}()
	time.Sleep(100 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	eventually(t, 2*time.Second, "readyz to fail", func() bool {
		code, body := getStatus(t, admin+"/readyz")
		return code == http.StatusServiceUnavailable && body == `{"reason":"draining","status":"not_ready"}`+"\n"
	})
	<-done
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}
