package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/a2ad/a2ad/internal/pgtest"
)

// BenchmarkHTTPSendEcho is a blocking message/send of the builtin echo
// through the real server over loopback HTTP, fully durable, with 16
// clients. The load generator shares the process, so profile with
// -cpuprofile and read the server's share. Rate limits are off.
func BenchmarkHTTPSendEcho(b *testing.B) {
	// The load comes from one address: the default per-caller rate
	// would refuse most of it.
	// A run may store more tasks than the default per-caller quota.
	m := startMain(b, func(c *Config) { c.RatePerSecond, c.RateBytes, c.QuotaTasks, c.QuotaBytes = 0, 0, 0, 0 })
	c0, w0 := boltOf(b, m).Counts()
	sendEchoes(b, m)
	c1, w1 := boltOf(b, m).Counts()
	b.ReportMetric(float64(c1-c0)/b.Elapsed().Seconds(), "commits/s")
	b.ReportMetric(float64(w1-w0)/float64(max(c1-c0, 1)), "writes/commit")
}

// BenchmarkHTTPSendEchoPostgres is BenchmarkHTTPSendEcho on a PostgreSQL
// store (a schema of the test server), with the per-caller limits off as
// a2abench runs it: with the quota off, and with the default quota,
// which each new task checks.
func BenchmarkHTTPSendEchoPostgres(b *testing.B) {
	for _, quota := range []bool{false, true} {
		b.Run(fmt.Sprintf("quota=%v", quota), func(b *testing.B) {
			m := startMain(b, func(c *Config) {
				c.Store = pgtest.Schema(b)
				c.RatePerSecond, c.RateBytes, c.MaxInFlightPerCaller, c.MaxCallsPerCaller = 0, 0, 0, 0
				if !quota {
					c.QuotaTasks, c.QuotaBytes = 0, 0
				}
			})
			sendEchoes(b, m)
		})
	}
}

// BenchmarkHTTPSendQuickPostgres is BenchmarkHTTPSendEchoPostgres (quota
// off) of a retry-safe HTTP function whose backend (httptest) answers at
// once: on a shared store its task is stored working before the call
// and completed after it (two commits), so that a message makes one call
// whichever replica its sends reach (issue 26).
func BenchmarkHTTPSendQuickPostgres(b *testing.B) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	b.Cleanup(backend.Close)
	catalog := filepath.Join(b.TempDir(), "catalog.yaml")
	putFile(b, catalog, `functions:
  - id: demo::echo
    metadata: {"a2a.expose": true}
    retry_safe: true
    http: {url: `+backend.URL+`}
`)
	m := startMain(b, func(c *Config) {
		c.Catalog, c.Store = catalog, pgtest.Schema(b)
		c.RatePerSecond, c.RateBytes, c.MaxInFlightPerCaller, c.MaxCallsPerCaller = 0, 0, 0, 0
		c.QuotaTasks, c.QuotaBytes = 0, 0
	})
	sendEchoes(b, m)
}

// sendEchoes sends b.N blocking sends of demo::echo to m from 16
// clients and reports the rate.
func sendEchoes(b *testing.B, m *Main) {
	url := "http://" + m.Addr() + "/a2a"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var n atomic.Int64
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0))) // 16 goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"message/send","params":{"message":{"kind":"message","messageId":"bench-%d","role":"user","parts":[{"kind":"data","data":{"skill":"demo::echo","input":{"message":"hello"}}}]}}}`, i, i)
			resp, err := client.Post(url, "application/json", bytes.NewBufferString(body))
			if err != nil {
				b.Error(err)
				return
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !bytes.Contains(out, []byte(`"state":"completed"`)) {
				b.Errorf("not completed: %s", out)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}
