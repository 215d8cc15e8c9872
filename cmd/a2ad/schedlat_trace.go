//go:build a2adtrace

package main

// Built only with -tags a2adtrace (GOFLAGS=-tags=a2adtrace go run
// ./cmd/a2abench ...), for tracing where a request waits: with
// A2AD_SCHED_LATENCIES=FILE the process writes, each 500 ms, the Go
// runtime's histograms of how long runnable goroutines waited to run and
// of the stop-the-world pauses, since the start, to FILE (replaced
// whole). BENCHMARKS.md's traced stream runs read the last one. The
// goroutine lives as long as the process: nothing to stop, since it
// only ever reads the runtime and rewrites one file.

import (
	"fmt"
	"os"
	"runtime/metrics"
	"strings"
	"time"
)

func init() {
	path := os.Getenv("A2AD_SCHED_LATENCIES")
	if path == "" {
		return
	}
	samples := []metrics.Sample{{Name: "/sched/latencies:seconds"}, {Name: "/sched/pauses/total/gc:seconds"}}
	go func() {
		for range time.Tick(500 * time.Millisecond) {
			metrics.Read(samples)
			var b strings.Builder
			for _, s := range samples {
				h := s.Value.Float64Histogram()
				for i, n := range h.Counts {
					if n > 0 {
						fmt.Fprintf(&b, "%s %g %g %d\n", s.Name, h.Buckets[i], h.Buckets[i+1], n)
					}
				}
			}
			_ = os.WriteFile(path+".tmp", []byte(b.String()), 0o600)
			_ = os.Rename(path+".tmp", path)
		}
	}()
}
