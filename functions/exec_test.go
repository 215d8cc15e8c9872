package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/functions"
)

// Script returns the absolute path of a test script in testdata/exec.
func Script(tb testing.TB, name string) string {
	tb.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "exec", name))
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// ShBackend runs the test script name with sh and args.
func ShBackend(tb testing.TB, name string, args ...string) *functions.ExecBackend {
	tb.Helper()
	return &functions.ExecBackend{Argv: append([]string{"/bin/sh", Script(tb, name)}, args...)}
}

func TestExecBackend_Success(t *testing.T) {
	input := json.RawMessage(`{"name": "world",  "n": [1, 2]}`)
	res, err := ShBackend(t, "cat.sh").Invoke(context.Background(), input)
	AssertOutput(t, res, err, `{"name":"world","n":[1,2]}`)
}

func TestExecBackend_Contract(t *testing.T) {
	t.Run("input required", func(t *testing.T) {
		res, err := ShBackend(t, "print.sh", `{"a2a.input_required":{"question":"Which city?"}}`).Invoke(context.Background(), json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if res.InputRequired != "Which city?" || res.Output != nil {
			t.Fatalf("Invoke = %+v, want question %q", res, "Which city?")
		}
	})
	t.Run("error", func(t *testing.T) {
		_, err := ShBackend(t, "print.sh", `{"a2a.error":"no such city"}`).Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function reported an error: no such city")
	})
	t.Run("invalid JSON", func(t *testing.T) {
		_, err := ShBackend(t, "print.sh", `not json`).Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function returned invalid JSON")
	})
	t.Run("no output", func(t *testing.T) {
		_, err := ShBackend(t, "print.sh", ``).Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function returned invalid JSON")
	})
}

func TestExecBackend_ExitStatus(t *testing.T) {
	for _, status := range []int{1, 3, 127} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			_, err := ShBackend(t, "exit.sh", strconv.Itoa(status)).Invoke(context.Background(), json.RawMessage(`{}`))
			ce := AssertReason(t, err, fmt.Sprintf("function exited with status %d", status))
			// The last stderr line is for the log only.
			if !strings.Contains(ce.Error(), "secret-detail") {
				t.Errorf("error %q lacks the last stderr line", ce.Error())
			}
		})
	}
}

func TestExecBackend_Oversize(t *testing.T) {
	t.Run("flood", func(t *testing.T) {
		b := ShBackend(t, "flood.sh")
		b.MaxOutputBytes = 1000
		begin := time.Now()
		_, err := b.Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function output exceeds 1000 bytes")
		if d := time.Since(begin); d > 3*time.Second {
			t.Errorf("Invoke took %v", d)
		}
	})
	t.Run("exits", func(t *testing.T) {
		b := ShBackend(t, "print.sh", `{"a":"0123456789"}`) // 18 bytes
		b.MaxOutputBytes = 17
		_, err := b.Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function output exceeds 17 bytes")
	})
	t.Run("at limit", func(t *testing.T) {
		b := ShBackend(t, "print.sh", `{"a":"0123456789"}`)
		b.MaxOutputBytes = 18
		res, err := b.Invoke(context.Background(), json.RawMessage(`{}`))
		AssertOutput(t, res, err, `{"a":"0123456789"}`)
	})
}

func TestExecBackend_StartFailure(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-exec.sh")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\necho '{}'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, argv := range map[string][]string{
		"missing":        {filepath.Join(dir, "missing")},
		"not on PATH":    {"a2ad-no-such-command"},
		"not executable": {notExec},
		"empty":          nil,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := (&functions.ExecBackend{Argv: argv}).Invoke(context.Background(), json.RawMessage(`{}`))
			AssertReason(t, err, "function could not be started")
		})
	}
}

func TestExecBackend_EnvAndDir(t *testing.T) {
	t.Setenv("A2AD_TEST_LEAK", "leaked")
	dir := t.TempDir()
	b := ShBackend(t, "env.sh")
	b.Dir = dir
	b.Env = []string{"FOO=bar"}
	res, err := b.Invoke(context.Background(), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Foo, Leak, Pwd string
		PathSet        bool `json:"path_set"`
	}
	if err := json.Unmarshal(res.Output, &got); err != nil {
		t.Fatalf("output %s: %v", res.Output, err)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Foo != "bar" || got.Leak != "" || !got.PathSet || (got.Pwd != dir && got.Pwd != realDir) {
		t.Errorf("child saw %+v, want foo=bar, no leak, PATH set, pwd %q", got, dir)
	}
}

func TestExecBackend_LargeInputNotRead(t *testing.T) {
	input := json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)
	begin := time.Now()
	res, err := ShBackend(t, "noread.sh").Invoke(context.Background(), input)
	AssertOutput(t, res, err, `{"ok":true}`)
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("Invoke took %v", d)
	}
}

func TestExecBackend_Stderr(t *testing.T) {
	var buf bytes.Buffer
	ctx := zerolog.New(&buf).WithContext(context.Background())
	res, err := ShBackend(t, "stderr.sh").Invoke(ctx, json.RawMessage(`{"secret":"input-s3cret"}`))
	AssertOutput(t, res, err, `{}`)
	logs := buf.String()
	// Info, not warn: a function's stderr is its author's trace.
	if !strings.Contains(logs, `{"level":"info","function_stderr":"hello from stderr","message":"function stderr"}`) {
		t.Errorf("log %q lacks the stderr line at info level", logs)
	}
	if strings.Contains(logs, "input-s3cret") {
		t.Errorf("log %q holds the input", logs)
	}
}

func TestExecBackend_StderrCapped(t *testing.T) {
	var buf bytes.Buffer
	ctx := zerolog.New(&buf).WithContext(context.Background())
	res, err := ShBackend(t, "stderrflood.sh").Invoke(ctx, json.RawMessage(`{}`))
	AssertOutput(t, res, err, `{}`)

	var lines, truncated int
	dec := json.NewDecoder(&buf)
	for {
		var entry map[string]any
		if err := dec.Decode(&entry); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if s, ok := entry["function_stderr"].(string); ok {
			lines++
			if lines == 1 && s != strings.Repeat("abcdefghij", 102)+"abcd" {
				t.Errorf("first line has %d bytes, want it cut to 1024", len(s))
			}
			if lines == 100 && s != "line 99" {
				t.Errorf("line 100 = %q, want %q", s, "line 99")
			}
		} else if entry["message"] == "function stderr truncated" {
			truncated++
		}
	}
	if lines != 100 || truncated != 1 {
		t.Errorf("logged %d stderr lines and %d truncation notes, want 100 and 1", lines, truncated)
	}
}

// StartSpawn runs spawn.sh in mode, with the kill grace, in a goroutine,
// waits until it has written its pids, and returns them with a channel
// that receives Invoke's error.
func StartSpawn(tb testing.TB, ctx context.Context, mode string, grace time.Duration) (pids []int, done <-chan error) {
	tb.Helper()
	pidFile := filepath.Join(tb.TempDir(), "pids")
	b := ShBackend(tb, "spawn.sh", pidFile, mode)
	b.KillGrace = grace
	errc := make(chan error, 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		_, err := b.Invoke(ctx, json.RawMessage(`{}`))
		errc <- err
	}()
	tb.Cleanup(func() {
		// Invoke must have returned, whatever the test did.
		select {
		case <-returned:
		case <-time.After(10 * time.Second):
			tb.Error("Invoke did not return")
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		if data, err := os.ReadFile(pidFile); err == nil {
			return parsePIDs(tb, data), errc
		}
		if time.Now().After(deadline) {
			tb.Fatal("spawn.sh wrote no pids")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// AssertGone checks that the processes are gone (or zombies waiting for
// their new parent to reap them), polling for a short while.
func AssertGone(tb testing.TB, pids ...int) {
	tb.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for _, pid := range pids {
		for !gone(pid) {
			if time.Now().After(deadline) {
				tb.Errorf("process %d still runs", pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return os.IsNotExist(err)
	}
	// The state follows the parenthesised command name.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] == 'Z' || stat[i+2] == 'X'
	}
	return false
}

func TestExecBackend_Cancel(t *testing.T) {
	errStop := errors.New("stopped by test")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	pids, done := StartSpawn(t, ctx, "plain", 5*time.Second)
	begin := time.Now()
	cancel(errStop)
	err := <-done
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("Invoke returned %v after cancel", d)
	}
	AssertReason(t, err, "call canceled")
	if !errors.Is(err, errStop) {
		t.Errorf("error %v does not wrap the cancel cause", err)
	}
	AssertGone(t, pids...)
}

func TestExecBackend_Timeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	pids, done := StartSpawn(t, ctx, "plain", 5*time.Second)
	select {
	case err := <-done:
		AssertReason(t, err, "call timed out")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Invoke did not return after its deadline")
	}
	AssertGone(t, pids...)
}

func TestExecBackend_KillAfterGrace(t *testing.T) {
	const grace = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pids, done := StartSpawn(t, ctx, "stubborn", grace)
	begin := time.Now()
	cancel()
	err := <-done
	d := time.Since(begin)
	AssertReason(t, err, "call canceled")
	if d < grace || d > grace+3*time.Second {
		t.Errorf("Invoke returned %v after cancel, want a little over %v", d, grace)
	}
	AssertGone(t, pids...)
}

func TestExecBackend_GrandchildIgnoresTerm(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pids, done := StartSpawn(t, ctx, "orphan", 5*time.Second)
	begin := time.Now()
	cancel()
	err := <-done
	AssertReason(t, err, "call canceled")
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("Invoke returned %v after cancel, want well before the grace", d)
	}
	AssertGone(t, pids...)
}

func TestExecBackend_LeftoverKilled(t *testing.T) {
	begin := time.Now()
	pids, done := StartSpawn(t, context.Background(), "leave", 5*time.Second)
	if err := <-done; err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("Invoke took %v", d)
	}
	AssertGone(t, pids...)
}

func TestExecBackend_NoGoroutineLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	_, _ = ShBackend(t, "cat.sh").Invoke(context.Background(), json.RawMessage(`{}`))
	flood := ShBackend(t, "flood.sh")
	flood.MaxOutputBytes = 10
	_, _ = flood.Invoke(context.Background(), json.RawMessage(`{}`))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _ = ShBackend(t, "spawn.sh", filepath.Join(t.TempDir(), "pids"), "plain").Invoke(ctx, json.RawMessage(`{}`))
	// Goroutines of earlier tests may still be ending; none may be added.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Invoke, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestExecBackend_CanceledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ShBackend(t, "cat.sh").Invoke(ctx, json.RawMessage(`{}`))
	AssertReason(t, err, "call canceled")
}
