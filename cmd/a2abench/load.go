package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// requestTimeout bounds one request.
const requestTimeout = 30 * time.Second

// stats are the results of one measured run. In send mode the samples
// are request latencies and each request is one event; in stream mode
// they are times to first event, and events counts the events of the
// successful streams.
type stats struct {
	ok, errors    int
	events        int
	elapsed       time.Duration
	p50, p99, max time.Duration
	firstErr      string
	// used is what the server used in the measured window.
	used usage
	// profile is where the window's time went (-perf's summary).
	profile string
}

// allocsPerOp is a2ad's heap allocations per successful request, "-"
// when unknown.
func (s stats) allocsPerOp() string {
	if !s.used.storeKnown || s.ok == 0 {
		return "-"
	}
	return strconv.FormatFloat(s.used.mallocs/float64(s.ok), 'f', 0, 64)
}

// writesPerCommit is a2ad's store writes per commit, "-" when unknown.
func (s stats) writesPerCommit() string {
	if !s.used.storeKnown || s.used.commits == 0 {
		return "-"
	}
	return strconv.FormatFloat(s.used.writes/s.used.commits, 'f', 1, 64)
}

// cpuPerOp is the server's CPU time per successful request (or stream),
// "-" when unknown.
func (s stats) cpuPerOp() string {
	if !s.used.cpuKnown || s.ok == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(s.used.cpu)/float64(s.ok)/float64(time.Microsecond), 'f', 0, 64) + "µs"
}

// rps is the successful requests (or streams) per second.
func (s stats) rps() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.ok) / s.elapsed.Seconds()
}

// eps is the events of successful requests (or streams) per second.
func (s stats) eps() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.events) / s.elapsed.Seconds()
}

// perStream is the mean number of events of a successful stream.
func (s stats) perStream() float64 {
	if s.ok == 0 {
		return 0
	}
	return float64(s.events) / float64(s.ok)
}

// op is one measured operation of one client: a request or a stream,
// numbered n (its JSON-RPC id). It returns the sample the run reports
// percentiles of and the number of events it received. An op is used by
// one goroutine only.
type op func(ctx context.Context, client *http.Client, n int64) (sample time.Duration, events int, err error)

// newOp makes one client's op against rpcURL.
type newOp func(rpcURL string) op

// sendOp is a blocking send (message/send, or SendMessage in A2A 1.0);
// its sample is the request's latency.
func sendOp(p *protocol) newOp {
	return func(rpcURL string) op {
		var body bytes.Buffer
		return func(ctx context.Context, client *http.Client, n int64) (time.Duration, int, error) {
			start := time.Now()
			err := sendOnce(ctx, client, rpcURL, p, &body, n)
			return time.Since(start), 1, err
		}
	}
}

// newClient returns the client a run shares among its clients: keep-alive,
// enough idle connections for every client, loopback only.
func newClient(clients int) (*http.Client, *http.Transport) {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if !isLoopback(addr) {
				return nil, fmt.Errorf("a2abench talks to loopback only, not %s", addr)
			}
			return d.DialContext(ctx, network, addr)
		},
		MaxIdleConns:        2 * clients,
		MaxIdleConnsPerHost: 2 * clients,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &http.Client{Transport: tr, Timeout: requestTimeout}, tr
}

// load drives rpcURLs with clients concurrent clients, client i on
// rpcURLs[i%len(rpcURLs)] (replicas share the load evenly), each running
// its op (mk) in a loop: warmup unmeasured, then duration measured. An op
// counts in the measurement when it ends inside the measured window.
// probe, if not nil, is read as the window opens and as it closes: what
// the server used in the window. edge, if not nil, is called with true
// just before the first read and with false just after the second (-perf
// records between the two).
func load(ctx context.Context, rpcURLs []string, clients int, warmup, duration time.Duration, mk newOp,
	probe func() usage, edge func(open bool)) (stats, error) {
	client, tr := newClient(clients)
	defer tr.CloseIdleConnections()
	t0 := time.Now()
	from, to := t0.Add(warmup), t0.Add(warmup+duration)
	ctx, cancel := context.WithDeadline(ctx, to.Add(requestTimeout))
	defer cancel()
	used := measure(ctx, from, to, probe, edge)
	type worker struct {
		lat      []time.Duration
		events   int
		errors   int
		firstErr string
	}
	workers := make([]worker, clients)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func(w *worker, rpcURL string) {
			defer wg.Done()
			do := mk(rpcURL)
			var n int64
			for ctx.Err() == nil {
				if !time.Now().Before(to) {
					return
				}
				n++
				sample, events, err := do(ctx, client, n)
				end := time.Now()
				if end.Before(from) || !end.Before(to) {
					continue // warm-up, or past the window
				}
				if err != nil {
					w.errors++
					if w.firstErr == "" {
						w.firstErr = err.Error()
					}
					continue
				}
				w.lat = append(w.lat, sample)
				w.events += events
			}
		}(&workers[i], rpcURLs[i%len(rpcURLs)])
	}
	wg.Wait()
	var st stats
	st.used = used()
	if err := ctx.Err(); err != nil && time.Now().Before(to) {
		return stats{}, err // interrupted
	}
	var lat []time.Duration
	for _, w := range workers {
		lat = append(lat, w.lat...)
		st.events += w.events
		st.errors += w.errors
		if st.firstErr == "" {
			st.firstErr = w.firstErr
		}
	}
	st.ok = len(lat)
	st.elapsed = duration
	if len(lat) > 0 {
		slices.Sort(lat)
		st.p50 = lat[len(lat)/2]
		st.p99 = lat[min(len(lat)-1, len(lat)*99/100)]
		st.max = lat[len(lat)-1]
	}
	return st, nil
}

// measure reads probe (if not nil) at from and at to, on a goroutine of
// its own, calling edge (if not nil) with true before the first read and
// with false after the second; the function it returns waits for it and
// gives what was used between the two reads.
func measure(ctx context.Context, from, to time.Time, probe func() usage, edge func(open bool)) func() usage {
	if probe == nil && edge == nil {
		return func() usage { return usage{} }
	}
	read := func() usage {
		if probe == nil {
			return usage{}
		}
		return probe()
	}
	var used usage
	done := make(chan struct{})
	go func() {
		defer close(done)
		if !sleepUntil(ctx, from) {
			return
		}
		if edge != nil {
			edge(true)
		}
		u0 := read()
		if !sleepUntil(ctx, to) {
			return
		}
		used = read().minus(u0)
		if edge != nil {
			edge(false)
		}
	}()
	return func() usage {
		<-done
		return used
	}
}

// sleepUntil waits until t; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// smoke runs one op (a request or a stream) and reports what is wrong
// with its answer.
func smoke(ctx context.Context, rpcURL string, mk newOp) error {
	client, tr := newClient(1)
	defer tr.CloseIdleConnections()
	_, _, err := mk(rpcURL)(ctx, client, 1)
	return err
}

// sendOnce sends one blocking send with a fresh messageId and checks
// that the answer is a JSON-RPC result holding a completed task.
func sendOnce(ctx context.Context, client *http.Client, rpcURL string, p *protocol, body *bytes.Buffer, id int64) error {
	p.writeRequest(body, id, false)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rpcURL, bytes.NewReader(body.Bytes()))
	if err != nil {
		return err
	}
	p.setHeaders(req)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, b)
	}
	return p.checkSent(b, id)
}

// checkSent checks the answer b to send id: a completed task.
func (p *protocol) checkSent(b []byte, id int64) error {
	if p.mcp {
		return checkCalled(b, id)
	}
	ev, err := p.decode(b, id, "response")
	if err != nil {
		return err
	}
	if ev.kind != "task" || ev.state != "completed" {
		return fmt.Errorf("result is a %q in state %q, want a completed task", ev.kind, ev.state)
	}
	return nil
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
