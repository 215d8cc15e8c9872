package main

import (
	"bytes"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and a parenthesis: fields count from the
	// last ')'. utime 250 and stime 50 ticks: 3 s.
	line := "4242 (a2ad (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 9 0 100 1000000 500\n"
	got, err := parseStatCPU([]byte(line))
	if err != nil || got != 3*time.Second {
		t.Fatalf("parseStatCPU = %v, %v; want 3s", got, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"4242 a2ad S 1", `stat line without a command name: "4242 a2ad S 1"`},
		{"4242 (a2ad) S 1 2 3", "stat line with 4 fields after the command name, want at least 13"},
		{"4242 (a2ad) S 1 4242 4242 0 -1 4194560 1000 0 0 0 x 50", `stat line: CPU time "x" is not a tick count`},
		{"4242 (a2ad) S 1 4242 4242 0 -1 4194560 1000 0 0 0 5 -1", `stat line: CPU time "-1" is not a tick count`},
	} {
		if _, err := parseStatCPU([]byte(tc.in)); err == nil || err.Error() != tc.want {
			t.Errorf("parseStatCPU(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
	if runtime.GOOS != "linux" {
		return
	}
	// This process's own: it grows while it spins.
	c0, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(60 * time.Millisecond); time.Now().Before(end); {
	}
	c1, err := cpuTime(os.Getpid())
	if err != nil || c1 <= c0 {
		t.Fatalf("CPU time %v then %v (%v)", c0, c1, err)
	}
}

func TestPrintSendResults(t *testing.T) {
	o := options{mode: "send", servers: []string{"a2ad", "js", "sdk", "floor"}, clients: []int{16, 64}}
	s := func(ok int, p99 time.Duration, cpu time.Duration, known bool) stats {
		return stats{ok: ok, elapsed: time.Second, p99: p99, cpu: cpu, cpuKnown: known}
	}
	results := []result{
		{"a2ad", 16, s(10000, 4*time.Millisecond, time.Second, true)},
		{"a2ad", 64, s(12000, 9*time.Millisecond, time.Second, true)},
		{"js", 16, s(3000, 8*time.Millisecond, 0, false)},
		{"sdk", 16, s(1000, 30*time.Millisecond, 2*time.Second, true)},
		{"floor", 16, s(30000, 2*time.Millisecond, time.Second, true)},
	}
	var b bytes.Buffer
	printResults(&b, o, results)
	out := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{
		"server clients req/s p50 p99 max errors cpu/req ",
		" a2ad 16 10000 0.00ms 4.00ms 0.00ms 0 100µs ",
		" js 16 3000 0.00ms 8.00ms 0.00ms 0 - ",
		" sdk 16 1000 0.00ms 30.00ms 0.00ms 0 2000µs ",
		" clients a2ad/js a2ad/sdk a2ad/floor 16 3.33x 10.00x 0.33x 64 - - - ",
		" at 16 clients: >= 3x js >= 40% of floor p99 <= 5.00ms at 64 clients: more, no errors met missed met met",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
	// Fewer at 64 and a slow p99; without js, its target is "-".
	results = []result{
		{"a2ad", 16, s(10000, 6*time.Millisecond, time.Second, true)},
		{"a2ad", 64, s(9000, 9*time.Millisecond, time.Second, true)},
		{"floor", 16, s(20000, 2*time.Millisecond, time.Second, true)},
	}
	b.Reset()
	printResults(&b, o, results)
	out = strings.Join(strings.Fields(b.String()), " ")
	if want := "more, no errors - met missed missed"; !strings.HasSuffix(out, want) {
		t.Errorf("output does not end in %q:\n%s", want, b.String())
	}
}
