package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// soakReads is what the soak's reader phase saw (issue 25 item 4).
type soakReads struct {
	sent    atomic.Int64 // messages of 900 KB mallory's task took
	largest atomic.Int64 // the largest history one answer held, in messages
	peakRSS atomic.Int64 // the server's largest resident set in the phase, in bytes
}

func (r *soakReads) String() string {
	return fmt.Sprintf("a task sent %d messages of 900 KB, gets of at most %d messages (its status message included), server RSS peak %d MB in the phase",
		r.sent.Load(), r.largest.Load(), r.peakRSS.Load()>>20)
}

// soakReaders runs the reader phase: from the start, mallory makes a task
// whose history is large (answers of 900 KB; retried while its limits
// refuse them), then, in its phase, reads it whole with 8 connections,
// by tasks/get and by tasks/list asking for every message, as fast as
// they answer. Before the fix each read returned the whole history (a
// task of 48 such messages took RSS to 4.6 GB and alice's p99 ×28).
func soakReaders(ctx context.Context, wg *sync.WaitGroup, base, key string, pid int, ms *soakStats,
	phase func(from, to float64) (context.Context, context.CancelFunc)) *soakReads {
	r := &soakReads{}
	wg.Go(func() {
		c := newSoakClient(base, key, "127.0.0.2", 8)
		big := strings.Repeat("r", 900<<10)
		var id string
		for n := 0; n <= 12 && ctx.Err() == nil; {
			msg := soakMessage(fmt.Sprintf("reads-%d", n), id, "soak::ask", map[string]any{"question": big})
			st, out, err := c.post(ctx, rpcBody("message/send", map[string]any{"message": msg}))
			if o := outcome(st, out, err); o != "ok" {
				ms.note("reads-setup", o)
				time.Sleep(200 * time.Millisecond) // mallory's own limits: try again
				continue
			}
			if n == 0 {
				id, _ = out["result"].(map[string]any)["id"].(string)
			}
			n++
			r.sent.Store(int64(n))
		}
		ctx, cancel := phase(0.8, 1)
		defer cancel()
		var readers sync.WaitGroup
		for w := range 8 {
			readers.Go(func() {
				for n := 0; ctx.Err() == nil; n++ {
					method, params := "tasks/get", map[string]any{"id": id}
					if w%2 == 1 {
						method, params = "tasks/list", map[string]any{"history_length": 100, "page_size": 100}
					}
					// The answer is read whole but not decoded: the test runs
					// on the server's cores, and decoding megabytes of JSON
					// per read would slow alice down by itself.
					st, body, err := c.postRaw(ctx, rpcBody(method, params))
					o := "ok"
					switch {
					case err != nil || st != http.StatusOK:
						o = outcome(st, nil, err)
						if err == nil {
							o = "http:" + strconv.Itoa(st)
						}
					case bytes.HasPrefix(body, []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":`)):
						o = "code:" + string(body[len(`{"jsonrpc":"2.0","id":1,"error":{"code":`):][:6])
					default:
						// Every message of a 0.3 answer has its "kind"; the
						// task's status message is one more.
						if method == "tasks/get" {
							r.note(int64(bytes.Count(body, []byte(`"kind":"message"`))))
						}
					}
					ms.note("reads-"+method, o)
				}
			})
		}
		for ctx.Err() == nil {
			if rss := residentBytes(pid); rss > r.peakRSS.Load() {
				r.peakRSS.Store(rss)
			}
			time.Sleep(100 * time.Millisecond)
		}
		readers.Wait()
	})
	return r
}

// note records n, the messages one answer held (at most).
func (r *soakReads) note(n int64) {
	if n > r.largest.Load() {
		r.largest.Store(n)
	}
}

// postRaw sends body and returns the HTTP status and the answer's bytes.
func (c *soakClient) postRaw(ctx context.Context, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/a2a", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// residentBytes is process pid's resident set (VmRSS), 0 if unknown.
func residentBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
