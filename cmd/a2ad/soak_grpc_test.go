package main

// The soak's gRPC phase (issue 25 item 2): once the HTTP attacks are
// over, mallory attacks the gRPC listener with her key, from 127.0.0.2
// (the resets) and 127.0.0.3 (the rest), while alice makes echo calls
// over gRPC from 127.0.0.1:
//   - streams that never finish: 4 connections of 100 streams each
//     holding one byte of a message;
//   - rapid reset: 4 connections of HEADERS, DATA, RST_STREAM as fast as
//     they go, each redialed once the server closes it (after a pause:
//     refusedPause, see there);
//   - a subscriber that never reads: 8 streams of a 900 KB answer on a
//     connection that grants the server no window.
// alice's p99 must stay within 2× of hers without the attack (for a
// third of the phase's time before it and as long after it).

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc/metadata"
)

// soakGRPCPhase is how long the gRPC attacks last: past the 30 s write
// deadline, so that the never-reading subscriber is cut off within it.
const soakGRPCPhase = 36 * time.Second

// soakWideScript prints one JSON object of about 900 KB, under the output
// cap: a task whose answer is large.
const soakWideScript = `#!/bin/sh
cat >/dev/null
printf '{"s":"'
head -c 900000 /dev/zero | tr '\0' a
printf '"}'
`

// grpcAttackStats counts what mallory's gRPC attacks did.
type grpcAttackStats struct {
	halfOpen, halfOpenEnded        atomic.Int64 // streams held, and ended by the server
	resets, resetConns, resetClose atomic.Int64 // streams reset, connections opened, closed by the server
	neverRead                      atomic.Int64 // never-reading streams opened
	neverReadClosedAfter           atomic.Int64 // ms until their connection was closed; 0: not within the phase
}

func (s *grpcAttackStats) String() string {
	return fmt.Sprintf("half-open streams %d (ended by the server %d); rapid reset: %d streams written on %d connections, %d closed by the server; never-reading streams %d, their connection closed after %d ms",
		s.halfOpen.Load(), s.halfOpenEnded.Load(), s.resets.Load(), s.resetConns.Load(), s.resetClose.Load(), s.neverRead.Load(), s.neverReadClosedAfter.Load())
}

// soakGRPC runs the gRPC phase against the gRPC listener at addr.
func soakGRPC(t *testing.T, addr, alice, mallory string) {
	client := dialGRPC(t, addr)
	echo := func(id string) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-api-key", alice), 10*time.Second)
		defer cancel()
		start := time.Now()
		res, err := client.SendMessage(ctx, grpcSkill(t, id, "soak::echo", map[string]any{"message": "hi"}))
		if err == nil && res.GetTask().GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED {
			err = fmt.Errorf("task %v", res.GetTask().GetStatus())
		}
		return time.Since(start), err
	}
	// alice's calls, two at a time, until ctx is done; failures counted.
	var failures atomic.Int64
	var firstFailure atomic.Value
	run := func(ctx context.Context, when string) []time.Duration {
		var mu sync.Mutex
		var ls []time.Duration
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Go(func() {
				for n := 0; ctx.Err() == nil; n++ {
					d, err := echo(fmt.Sprintf("alice-grpc-%s-%d-%d", when, w, n))
					mu.Lock()
					ls = append(ls, d)
					mu.Unlock()
					if err != nil && failures.Add(1) == 1 {
						firstFailure.Store(err.Error())
					}
					time.Sleep(20 * time.Millisecond)
				}
			})
		}
		wg.Wait()
		return ls
	}
	// Her calls without the attack, as many as the attack's would be
	// fewer: the p99 of a few hundred calls on a shared machine is noise.
	bctx, bstop := context.WithTimeout(context.Background(), soakGRPCPhase/3)
	base := run(bctx, "before")
	bstop()

	ctx, stop := context.WithTimeout(context.Background(), soakGRPCPhase)
	defer stop()
	st := &grpcAttackStats{}
	getTask := grpcFrame(t, &a2apb.GetTaskRequest{Id: "no-such-task"})
	var wide [][]byte
	for n := range 8 {
		wide = append(wide, grpcFrame(t, grpcSkill(t, fmt.Sprintf("never-read-%d", n), "soak::wide", map[string]any{})))
	}
	attacks := "halfopen,reset,neverread"
	if v := os.Getenv("A2AD_SOAK_GRPC_ATTACKS"); v != "" {
		attacks = v // to see what each costs alone
	}
	on := func(name string) bool { return slices.Contains(strings.Split(attacks, ","), name) }
	var wg sync.WaitGroup
	// The resets from an address of their own: the server then closes
	// that address's new connections for a while, which would stop the
	// other attacks too.
	for range 4 {
		if on("halfopen") {
			wg.Go(func() { soakHalfOpen(ctx, addr, mallory, st) })
		}
		if on("reset") {
			wg.Go(func() { soakRapidReset(ctx, addr, mallory, getTask, st) })
		}
	}
	if on("neverread") {
		wg.Go(func() { soakNeverRead(ctx, addr, mallory, wide, st) })
	}

	time.Sleep(2 * time.Second) // let the attacks build up
	during := run(ctx, "during")
	wg.Wait()
	actx, astop := context.WithTimeout(context.Background(), soakGRPCPhase/3)
	base = append(base, run(actx, "after")...)
	astop()

	bp99, dp99 := p99(slices.Sorted(slices.Values(base))), p99(slices.Sorted(slices.Values(during)))
	t.Logf("gRPC phase: mallory: %v", st)
	t.Logf("gRPC phase: alice %d calls, p99 %v against %v without the attack (%.2f×); %v", len(during), dp99, bp99,
		float64(dp99)/float64(bp99), measureDegradation(base, during))
	if n := failures.Load(); n > 0 {
		t.Errorf("gRPC phase: %d of alice's calls failed, first: %v", n, firstFailure.Load())
	}
	if dp99 > 2*bp99 {
		t.Errorf("gRPC phase: mallory took alice's p99 to %v, over 2× her %v without the attack", dp99, bp99)
	}
	if (on("reset") && st.resetClose.Load() == 0) || (on("neverread") && st.neverReadClosedAfter.Load() == 0) {
		t.Errorf("gRPC phase: the server closed no rapid-reset or never-reading connection: %v", st)
	}
}

// soakHalfOpen holds 100 streams with one byte of a message on one
// connection until ctx is done.
func soakHalfOpen(ctx context.Context, addr, key string, st *grpcAttackStats) {
	h, err := newH2(addr, "127.0.0.3", 65535)
	if err != nil {
		return
	}
	defer h.conn.Close()
	for n := range 100 {
		id := uint32(2*n + 1)
		if h.open(id, "SendMessage", "x-api-key", key) != nil || h.send(id, []byte{0, 0, 0, 0, 100, 0x0a}, false) != nil {
			return
		}
		st.halfOpen.Add(1)
	}
	<-ctx.Done()
	_, ends := h.snapshot()
	st.halfOpenEnded.Add(int64(len(ends)))
}

// soakRapidReset opens and resets streams as fast as it can, redialing
// when the server closes the connection, until ctx is done.
func soakRapidReset(ctx context.Context, addr, key string, msg []byte, st *grpcAttackStats) {
	for ctx.Err() == nil {
		h, err := newH2(addr, "127.0.0.2", 65535)
		if err != nil {
			time.Sleep(refusedPause)
			continue
		}
		st.resetConns.Add(1)
		// The server's settings first: a connection the server refuses
		// (its address is held off after a flood) gets none, and what
		// the flood would write into it costs the server nothing, only
		// this machine's CPU, which alice shares.
		if !waitFor(time.Second, func() bool { m, _ := h.snapshot(); return m != 0 || h.isClosed() }) || h.isClosed() {
			h.conn.Close()
			time.Sleep(refusedPause)
			continue
		}
		stop := context.AfterFunc(ctx, func() { h.conn.Close() })
		for id := uint32(1); ctx.Err() == nil && id < 1<<31; id += 2 {
			if h.open(id, "GetTask", "x-api-key", key) != nil || h.send(id, msg, true) != nil || h.reset(id) != nil {
				break
			}
			st.resets.Add(1)
		}
		if stop() { // the server closed it, not ctx
			st.resetClose.Add(1)
			h.conn.Close()
			time.Sleep(refusedPause)
		}
	}
}

// soakNeverRead opens a stream of a 900 KB answer for each of msgs on a
// connection that grants the server no window, and notes when the server
// closes it.
func soakNeverRead(ctx context.Context, addr, key string, msgs [][]byte, st *grpcAttackStats) {
	h, err := newH2(addr, "127.0.0.3", 0)
	if err != nil {
		return
	}
	defer h.conn.Close()
	start := time.Now()
	for n, msg := range msgs {
		id := uint32(2*n + 1)
		if h.open(id, "SendStreamingMessage", "x-api-key", key) != nil || h.send(id, msg, true) != nil {
			return
		}
		st.neverRead.Add(1)
	}
	select {
	case <-h.closed:
		st.neverReadClosedAfter.Store(time.Since(start).Milliseconds())
	case <-ctx.Done():
	}
}
