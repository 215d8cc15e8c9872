package main

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestTripProxy: bytes from the client after the server's answer start a
// round trip; bytes sent before any answer (pipelined) do not.
func TestTripProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // the server answers each byte "q" with "a"
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 1)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			if buf[0] == 'q' {
				_, _ = c.Write([]byte("a"))
			}
		}
	}()
	p, err := startTripProxy(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	c, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ask := func(b string, answers int) {
		t.Helper()
		if _, err := c.Write([]byte(b)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, answers)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatal(err)
		}
	}
	ask("q", 1)  // one trip
	ask("xq", 1) // one more: a write, then the question, before an answer
	ask("q", 1)  // a third
	time.Sleep(50 * time.Millisecond)
	if got := p.trips.Load(); got != 3 {
		t.Errorf("round trips = %d, want 3", got)
	}
}

func TestPrintPGCost(t *testing.T) {
	var b bytes.Buffer
	printPGCost(&b, []result{
		{"a2ad", 16, stats{ok: 100}}, // no PostgreSQL: no row
		{"a2ad-pg", 16, stats{ok: 1000, used: usage{cpu: 200 * time.Millisecond, cpuKnown: true,
			pg: pgCost{known: true, xacts: 1000, walBytes: 4_000_000, cpu: 300 * time.Millisecond, cpuKnown: true, trips: 2000, tripsKnown: true}}}},
		{"a2ad-pg-working", 16, stats{ok: 500, used: usage{pg: pgCost{known: true, xacts: 1150, walBytes: 2_750_000}}}},
	})
	out := b.String()
	for _, want := range []string{
		"a2ad-pg          16       300µs       1.00         4000       2.0              200µs",
		"a2ad-pg-working  16       -           2.30         5500       -                -",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("printPGCost: no line %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "a2ad  ") {
		t.Errorf("a run without PostgreSQL printed:\n%s", out)
	}
}
