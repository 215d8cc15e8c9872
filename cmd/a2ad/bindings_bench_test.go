package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// BenchmarkBindingsSend is a blocking send of the builtin echo over each
// binding (JSON-RPC 1.0, HTTP+JSON, gRPC) against one real server over
// loopback, fully durable, with 16 clients, one binding after the other
// in one run (issue 17 §6). It reports req/s and the p99 latency. The
// load generator shares the process, as in BenchmarkHTTPSendEcho; rate
// limits and the task quota are off. On a noisy machine, run it with
// -count: each count runs the three in turn, so they share the noise.
func BenchmarkBindingsSend(b *testing.B) {
	m := startMain(b, func(c *Config) { c.RatePerSecond, c.RateBytes, c.QuotaTasks, c.GRPCListen = 0, 0, 0, "127.0.0.1:0" })
	base := "http://" + m.Addr()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	gc := dialGRPC(b, m.GRPCAddr())
	data, _ := structpb.NewStruct(map[string]any{"skill": "demo::echo", "input": map[string]any{"message": "hello"}})
	const part = `{"data":{"skill":"demo::echo","input":{"message":"hello"}}}`
	var n atomic.Int64
	post := func(url, body string, h ...string) error {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Contains(out, []byte(`"TASK_STATE_COMPLETED"`)) {
			return fmt.Errorf("not completed: %s", out)
		}
		return nil
	}
	bindings := []struct {
		name string
		send func(i int64) error
	}{
		{"jsonrpc", func(i int64) error {
			return post(base+"/a2a", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{"message":{"messageId":"bj-%d","role":"ROLE_USER","parts":[%s]}}}`, i, i, part), "A2A-Version", "1.0")
		}},
		{"rest", func(i int64) error {
			return post(base+"/a2a/rest/message:send", fmt.Sprintf(`{"message":{"messageId":"br-%d","role":"ROLE_USER","parts":[%s]}}`, i, part))
		}},
		{"grpc", func(i int64) error {
			res, err := gc.SendMessage(context.Background(), &a2apb.SendMessageRequest{Message: &a2apb.Message{
				MessageId: fmt.Sprintf("bg-%d", i), Role: a2apb.Role_ROLE_USER,
				Parts: []*a2apb.Part{{Content: &a2apb.Part_Data{Data: structpb.NewStructValue(data)}}},
			}})
			if err == nil && res.GetTask().GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED {
				err = fmt.Errorf("not completed: %v", res)
			}
			return err
		}},
	}
	for _, bd := range bindings {
		b.Run(bd.name, func(b *testing.B) {
			var mu sync.Mutex
			var lat []time.Duration
			b.SetParallelism(8) // 16 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				for pb.Next() {
					start := time.Now()
					if err := bd.send(n.Add(1)); err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(start))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			if len(lat) > 0 {
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			}
		})
	}
}
