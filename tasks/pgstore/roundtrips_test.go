package pgstore_test

import (
	"context"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/pgstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// tripCounter is a TCP proxy before the test server that counts round
// trips: on each connection, bytes from the client that follow bytes
// from the server (or open the connection) start one.
type tripCounter struct {
	ln    net.Listener
	trips atomic.Int64
	wg    sync.WaitGroup
}

// countTrips starts a tripCounter before the server of dsn and returns it
// with dsn pointed at it; it stops when tb ends.
func countTrips(tb testing.TB, dsn string) (*tripCounter, string) {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &tripCounter{ln: ln}
	target := u.Host
	u.Host = ln.Addr().String()
	var conns sync.Map
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			conns.Store(c, up)
			var answered atomic.Bool
			answered.Store(true)
			p.wg.Add(2)
			go func() { defer p.wg.Done(); p.pipe(up, c, func() { p.starts(&answered) }) }()
			go func() { defer p.wg.Done(); p.pipe(c, up, func() { answered.Store(true) }) }()
		}
	}()
	tb.Cleanup(func() {
		ln.Close()
		conns.Range(func(k, v any) bool { k.(net.Conn).Close(); v.(net.Conn).Close(); return true })
		p.wg.Wait()
	})
	return p, u.String()
}

// starts counts a round trip if the server answered since the client
// last spoke.
func (p *tripCounter) starts(answered *atomic.Bool) {
	if answered.Swap(false) {
		p.trips.Add(1)
	}
}

// pipe copies from src to dst, calling read after each read.
func (p *tripCounter) pipe(dst, src net.Conn, read func()) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			read()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}

// TestUpdateTakesTwoRoundTrips: a change of a task is its read and one
// pipelined write (issue 31): no transaction held open across round
// trips, and, with no other store following the schema, no NOTIFY of its
// own.
func TestUpdateTakesTwoRoundTrips(t *testing.T) {
	p, dsn := countTrips(t, pgtest.Schema(t))
	// One connection: each statement is prepared on it once, by the
	// warm-up, and none is connected during the count.
	s, err := pgstore.Open(ctx, dsn, pgstore.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.WithHooks(t, s, "t1", 0)
	step := func(r *tasks.Record) ([]tasks.Event, error) {
		return []tasks.Event{storetest.StatusEvent(a2a.StateWorking)}, nil
	}
	if _, _, _, err := s.Update(ctx, "o", "t1", nil, tasks.Head, step); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the notices' first look for followers
	const n = 5
	before, start := p.trips.Load(), time.Now()
	for range n {
		if _, _, _, err := s.Update(ctx, "o", "t1", nil, tasks.Head, step); err != nil {
			t.Fatal(err)
		}
	}
	// The looks for followers (once per 100ms while there are none) come
	// on top: one per 100ms that passed, and one more.
	looks := int64(time.Since(start)/(100*time.Millisecond)) + 1
	time.Sleep(100 * time.Millisecond) // a notice would be sent meanwhile
	if got := p.trips.Load() - before; got < 2*n || got > 2*n+looks {
		t.Fatalf("%d updates took %d round trips, want %d (and %d looks for followers at most)", n, got, 2*n, looks)
	}
}

// TestNoNoticeUnlessFollowed: a store sends no notice while no other
// store follows its schema (a bare LISTEN is not a store following), and
// sends them once one does.
func TestNoNoticeUnlessFollowed(t *testing.T) {
	dsn := pgtest.Schema(t)
	a := mustOpen(t, dsn)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{a.Channel()}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	storetest.WithHooks(t, a, "t1", 0)
	if _, _, _, err := a.Update(ctx, "o", "t1", nil, tasks.Head, working); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	n, err := conn.WaitForNotification(wctx)
	cancel()
	if err == nil {
		t.Fatalf("a store alone sent a notice: %q", n.Payload)
	}
	b := mustOpen(t, dsn)
	fb, cb := hear()
	b.Follow(fb)
	if n := next(t, cb); n.id != "" {
		t.Fatalf("b's first notice %+v, want the one of listening", n)
	}
	time.Sleep(150 * time.Millisecond) // a looks for followers again
	if _, _, _, err := a.Update(ctx, "o", "t1", nil, tasks.Head, working); err != nil {
		t.Fatal(err)
	}
	if n := next(t, cb); n != (notice{"t1", 4, 5}) {
		t.Fatalf("b heard %+v, want t1 4..5", n)
	}
	wctx, cancel = context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := conn.WaitForNotification(wctx); err != nil {
		t.Fatalf("the bare listener heard nothing once b followed: %v", err)
	}
}
