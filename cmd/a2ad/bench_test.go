package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
)

// BenchmarkHTTPSendEcho is a blocking message/send of the builtin echo
// through the real server over loopback HTTP, fully durable, with 16
// clients. The load generator shares the process, so profile with
// -cpuprofile and read the server's share. Rate limits are off.
func BenchmarkHTTPSendEcho(b *testing.B) {
	// The load comes from one address: the default per-caller rate
	// would refuse most of it.
	m := startMain(b, func(c *Config) { c.RatePerSecond, c.RateBytes = 0, 0 })
	url := "http://" + m.Addr() + "/a2a"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var n atomic.Int64
	b.SetParallelism(8) // 16 goroutines on 2 cores
	c0, w0 := boltOf(b, m).Counts()
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
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	c1, w1 := boltOf(b, m).Counts()
	b.ReportMetric(float64(c1-c0)/b.Elapsed().Seconds(), "commits/s")
	b.ReportMetric(float64(w1-w0)/float64(max(c1-c0, 1)), "writes/commit")
}
