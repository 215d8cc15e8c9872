package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2ad/a2ad/functions"
	"github.com/rs/zerolog"
)

// MustCallError returns err as a *functions.CallError, failing the test if
// it is not one.
func MustCallError(tb testing.TB, err error) *functions.CallError {
	tb.Helper()
	var ce *functions.CallError
	if !errors.As(err, &ce) {
		tb.Fatalf("error = %v (%T), want a *functions.CallError", err, err)
	}
	return ce
}

// AssertReason checks that err is a *functions.CallError with the reason.
func AssertReason(tb testing.TB, err error, want string) *functions.CallError {
	tb.Helper()
	if err == nil {
		tb.Fatalf("error = nil, want reason %q", want)
	}
	ce := MustCallError(tb, err)
	if ce.Reason != want {
		tb.Fatalf("Reason = %q, want %q (error: %v)", ce.Reason, want, err)
	}
	return ce
}

// AssertOutput checks that res is the output want and asks for nothing.
func AssertOutput(tb testing.TB, res functions.Result, err error, want string) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("Invoke: %v", err)
	}
	if res.InputRequired != "" {
		tb.Fatalf("InputRequired = %q, want none", res.InputRequired)
	}
	if string(res.Output) != want {
		tb.Fatalf("Output = %s, want %s", res.Output, want)
	}
}

func TestParseResult(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes
	tests := []struct {
		name     string
		body     string
		output   string
		question string
		reason   string
	}{
		{name: "object", body: " {\"a\": [1, 2],\n \"b\": \"x\"}\n", output: `{"a":[1,2],"b":"x"}`},
		{name: "array", body: `[1, 2]`, output: `[1,2]`},
		{name: "string", body: `"hi"`, output: `"hi"`},
		{name: "number", body: "42\n", output: `42`},
		{name: "null", body: `null`, output: `null`},
		{name: "empty", body: ``, reason: "function returned invalid JSON"},
		{name: "space", body: " \n", reason: "function returned invalid JSON"},
		{name: "text", body: `ok`, reason: "function returned invalid JSON"},
		{name: "two values", body: `{} {}`, reason: "function returned invalid JSON"},
		{name: "truncated", body: `{"a":`, reason: "function returned invalid JSON"},
		{name: "input required", body: `{"a2a.input_required": {"question": "Which city?"}}`, question: "Which city?"},
		{name: "input required extra key", body: `{"a2a.input_required": {"question": "Which city?", "hint": "x"}}`, question: "Which city?"},
		{name: "input required empty", body: `{"a2a.input_required": {"question": ""}}`, reason: "function returned a malformed input_required signal"},
		{name: "input required blank", body: `{"a2a.input_required": {"question": " \n"}}`, reason: "function returned a malformed input_required signal"},
		{name: "input required missing", body: `{"a2a.input_required": {}}`, reason: "function returned a malformed input_required signal"},
		{name: "input required number", body: `{"a2a.input_required": {"question": 7}}`, reason: "function returned a malformed input_required signal"},
		{name: "input required string", body: `{"a2a.input_required": "Which city?"}`, reason: "function returned a malformed input_required signal"},
		{name: "input required null", body: `{"a2a.input_required": null}`, reason: "function returned a malformed input_required signal"},
		{name: "input required with output", body: `{"a2a.input_required": {"question": "q"}, "x": 1}`, output: `{"a2a.input_required":{"question":"q"},"x":1}`},
		{name: "error", body: `{"a2a.error": "no such city"}`, reason: "function reported an error: no such city"},
		{name: "error control", body: `{"a2a.error": "bad\u0000 city\n\tline\u001b[31m"}`, reason: "function reported an error: bad city  line[31m"},
		{name: "error long", body: `{"a2a.error": "` + long + `"}`, reason: "function reported an error: " + strings.Repeat("é", 256)},
		{name: "error empty", body: `{"a2a.error": ""}`, reason: "function reported an error"},
		{name: "error not string", body: `{"a2a.error": {"code": 1}}`, reason: "function returned a malformed error signal"},
		{name: "error with output", body: `{"a2a.error": "x", "y": 2}`, output: `{"a2a.error":"x","y":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := functions.ParseResult([]byte(tt.body))
			switch {
			case tt.reason != "":
				AssertReason(t, err, tt.reason)
			case tt.question != "":
				if err != nil {
					t.Fatalf("ParseResult(%q): %v", tt.body, err)
				}
				if res.InputRequired != tt.question || res.Output != nil {
					t.Fatalf("ParseResult(%q) = %+v, want question %q", tt.body, res, tt.question)
				}
			default:
				AssertOutput(t, res, err, tt.output)
			}
		})
	}
}

// MustServe starts an HTTP server on loopback for the test.
func MustServe(tb testing.TB, h http.HandlerFunc) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv
}

// Reply answers every request with status and body.
func Reply(status int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func TestHTTPBackend_Success(t *testing.T) {
	for _, method := range []string{"", http.MethodPut} {
		t.Run("method="+method, func(t *testing.T) {
			type request struct {
				method, contentType, accept, key, host string
				body                                   []byte
			}
			got := make(chan request, 1)
			srv := MustServe(t, func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				got <- request{
					method:      r.Method,
					contentType: r.Header.Get("Content-Type"),
					accept:      r.Header.Get("Accept"),
					key:         r.Header.Get("X-Api-Key"),
					body:        body,
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, "{\"greeting\": \"hello\",\n \"n\": 1}\n")
			})
			b := &functions.HTTPBackend{URL: srv.URL + "/fn", Method: method, Headers: map[string]string{"X-Api-Key": "k-123"}}
			input := json.RawMessage(`{"name":"world"}`)
			res, err := b.Invoke(context.Background(), input)
			AssertOutput(t, res, err, `{"greeting":"hello","n":1}`)

			r := <-got
			wantMethod := method
			if wantMethod == "" {
				wantMethod = http.MethodPost
			}
			if r.method != wantMethod {
				t.Errorf("method = %q, want %q", r.method, wantMethod)
			}
			if r.contentType != "application/json" || r.accept != "application/json" {
				t.Errorf("Content-Type = %q, Accept = %q, want application/json", r.contentType, r.accept)
			}
			if r.key != "k-123" {
				t.Errorf("X-Api-Key = %q, want k-123", r.key)
			}
			if !bytes.Equal(r.body, input) {
				t.Errorf("body = %s, want %s", r.body, input)
			}
		})
	}
}

func TestHTTPBackend_Signals(t *testing.T) {
	t.Run("input required", func(t *testing.T) {
		srv := MustServe(t, Reply(http.StatusOK, "application/json", `{"a2a.input_required":{"question":"Which city?"}}`))
		res, err := (&functions.HTTPBackend{URL: srv.URL}).Invoke(context.Background(), json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if res.InputRequired != "Which city?" || res.Output != nil {
			t.Fatalf("Invoke = %+v, want question %q", res, "Which city?")
		}
	})
	t.Run("error", func(t *testing.T) {
		srv := MustServe(t, Reply(http.StatusOK, "application/json", `{"a2a.error":"no such city"}`))
		_, err := (&functions.HTTPBackend{URL: srv.URL}).Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function reported an error: no such city")
	})
	t.Run("invalid JSON", func(t *testing.T) {
		srv := MustServe(t, Reply(http.StatusOK, "text/html", `<html>oops</html>`))
		_, err := (&functions.HTTPBackend{URL: srv.URL}).Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function returned invalid JSON")
	})
	t.Run("JSON as text", func(t *testing.T) {
		srv := MustServe(t, Reply(http.StatusOK, "text/plain", `{"ok":true}`))
		res, err := (&functions.HTTPBackend{URL: srv.URL}).Invoke(context.Background(), json.RawMessage(`{}`))
		AssertOutput(t, res, err, `{"ok":true}`)
	})
}

func TestHTTPBackend_Status(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusInternalServerError, http.StatusServiceUnavailable} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			srv := MustServe(t, Reply(status, "application/json", `{"ok":true}`))
			url := srv.URL + "/fn?token=s3cret"
			_, err := (&functions.HTTPBackend{URL: url}).Invoke(context.Background(), json.RawMessage(`{}`))
			ce := AssertReason(t, err, fmt.Sprintf("function returned HTTP %d", status))
			if strings.Contains(ce.Error(), "s3cret") || strings.Contains(ce.Error(), srv.URL) {
				t.Errorf("error %q holds the URL", ce.Error())
			}
		})
	}
}

func TestHTTPBackend_RedirectNotFollowed(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/fn", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	})
	hits := make(chan struct{}, 1)
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
		hits <- struct{}{}
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
	srv := MustServe(t, mux.ServeHTTP)
	_, err := (&functions.HTTPBackend{URL: srv.URL + "/fn"}).Invoke(context.Background(), json.RawMessage(`{}`))
	AssertReason(t, err, "function returned HTTP 302")
	select {
	case <-hits:
		t.Fatal("redirect was followed")
	default:
	}
}

func TestHTTPBackend_Oversize(t *testing.T) {
	srv := MustServe(t, Reply(http.StatusOK, "application/json", `{"a":"0123456789"}`)) // 18 bytes
	t.Run("over", func(t *testing.T) {
		_, err := (&functions.HTTPBackend{URL: srv.URL, MaxResponseBytes: 17}).Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function response exceeds 17 bytes")
	})
	t.Run("at limit", func(t *testing.T) {
		res, err := (&functions.HTTPBackend{URL: srv.URL, MaxResponseBytes: 18}).Invoke(context.Background(), json.RawMessage(`{}`))
		AssertOutput(t, res, err, `{"a":"0123456789"}`)
	})
	t.Run("default", func(t *testing.T) {
		big := MustServe(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `"`)
			_, _ = io.Copy(w, io.LimitReader(zeros{}, functions.DefaultMaxResponseBytes))
			_, _ = io.WriteString(w, `"`)
		})
		_, err := (&functions.HTTPBackend{URL: big.URL}).Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function response exceeds 1048576 bytes") // the default cap, 1 MiB
	})
}

// zeros reads as endless '0's.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

// MustServeBlocking starts a server whose handler reads the request and
// then blocks until the client goes away or the test ends; started
// receives once per request.
func MustServeBlocking(tb testing.TB, started chan<- struct{}) *httptest.Server {
	tb.Helper()
	release := make(chan struct{})
	srv := MustServe(tb, func(w http.ResponseWriter, r *http.Request) {
		// The server notices a closed connection only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		select { // never block here: a blocked handler would hang srv.Close
		case started <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	tb.Cleanup(func() { close(release) }) // runs before srv.Close
	return srv
}

func TestHTTPBackend_Timeout(t *testing.T) {
	started := make(chan struct{}, 1)
	srv := MustServeBlocking(t, started)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err := (&functions.HTTPBackend{URL: srv.URL}).Invoke(ctx, json.RawMessage(`{}`))
	AssertReason(t, err, "call timed out")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("Invoke took %v after a 200ms deadline", d)
	}
}

func TestHTTPBackend_Cancel(t *testing.T) {
	started := make(chan struct{}, 1)
	srv := MustServeBlocking(t, started)
	errStop := errors.New("stopped by test")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		<-started
		cancel(errStop)
	}()
	begin := time.Now()
	_, err := (&functions.HTTPBackend{URL: srv.URL}).Invoke(ctx, json.RawMessage(`{}`))
	AssertReason(t, err, "call canceled")
	if !errors.Is(err, errStop) {
		t.Errorf("error %v does not wrap the cancel cause", err)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("Invoke took %v", d)
	}
}

func TestHTTPBackend_Unavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = (&functions.HTTPBackend{URL: "http://" + addr + "/fn?token=s3cret"}).Invoke(context.Background(), json.RawMessage(`{}`))
	ce := AssertReason(t, err, "function backend unavailable")
	if strings.Contains(ce.Error(), "s3cret") {
		t.Errorf("error %q holds the URL", ce.Error())
	}
}

func TestHTTPBackend_Misconfigured(t *testing.T) {
	_, err := (&functions.HTTPBackend{URL: "http://h/\x7f?token=s3cret"}).Invoke(context.Background(), json.RawMessage(`{}`))
	ce := AssertReason(t, err, "function backend misconfigured")
	if strings.Contains(ce.Error(), "s3cret") {
		t.Errorf("error %q holds the URL", ce.Error())
	}
}

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
	if !strings.Contains(logs, `"function_stderr":"hello from stderr"`) {
		t.Errorf("log %q lacks the stderr line", logs)
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
		data, err := os.ReadFile(pidFile)
		if err == nil {
			for _, f := range strings.Fields(string(data)) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					tb.Fatalf("pid file %q: %v", data, err)
				}
				pids = append(pids, pid)
			}
			if len(pids) != 2 {
				tb.Fatalf("pid file %q, want two pids", data)
			}
			return pids, errc
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

// MustBuiltin returns the builtin called name.
func MustBuiltin(tb testing.TB, name string) *functions.BuiltinBackend {
	tb.Helper()
	b, err := functions.NewBuiltin(name)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestBuiltinNames(t *testing.T) {
	if got, want := strings.Join(functions.BuiltinNames(), ","), "ask,echo,fail,sleep"; got != want {
		t.Errorf("BuiltinNames() = %s, want %s", got, want)
	}
	if _, err := functions.NewBuiltin("nope"); err == nil {
		t.Error("NewBuiltin(nope) succeeded")
	}
}

func TestBuiltinEcho(t *testing.T) {
	input := json.RawMessage(`{"a": 1}`)
	res, err := MustBuiltin(t, "echo").Invoke(context.Background(), input)
	AssertOutput(t, res, err, `{"a": 1}`)
}

func TestBuiltinSleep(t *testing.T) {
	b := MustBuiltin(t, "sleep")
	t.Run("short", func(t *testing.T) {
		begin := time.Now()
		res, err := b.Invoke(context.Background(), json.RawMessage(`{"seconds": 0.05}`))
		AssertOutput(t, res, err, `{"slept":0.05}`)
		if d := time.Since(begin); d < 50*time.Millisecond {
			t.Errorf("slept %v, want 50ms", d)
		}
	})
	t.Run("missing", func(t *testing.T) {
		res, err := b.Invoke(context.Background(), json.RawMessage(`{}`))
		AssertOutput(t, res, err, `{"slept":0}`)
	})
	for _, input := range []string{`{"seconds": -1}`, `{"seconds": "1"}`, `{"seconds": null}`, `{"seconds": [1]}`} {
		t.Run(input, func(t *testing.T) {
			_, err := b.Invoke(context.Background(), json.RawMessage(input))
			AssertReason(t, err, "seconds must be a non-negative number")
		})
	}
	t.Run("not an object", func(t *testing.T) {
		_, err := b.Invoke(context.Background(), json.RawMessage(`[1]`))
		AssertReason(t, err, "input must be a JSON object")
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		begin := time.Now()
		_, err := b.Invoke(ctx, json.RawMessage(`{"seconds": 60}`))
		AssertReason(t, err, "call canceled")
		if d := time.Since(begin); d > 2*time.Second {
			t.Errorf("returned %v after start", d)
		}
	})
	t.Run("timed out", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := b.Invoke(ctx, json.RawMessage(`{"seconds": 1e300}`))
		AssertReason(t, err, "call timed out")
	})
}

func TestBuiltinFail(t *testing.T) {
	b := MustBuiltin(t, "fail")
	for input, want := range map[string]string{
		`{}`:                      "function reported an error: failed on purpose",
		`{"message": "oh no"}`:    "function reported an error: oh no",
		`{"message": "a\nb"}`:     "function reported an error: a b",
		`{"message": 7}`:          "function reported an error: failed on purpose",
		`{"message": "", "x": 1}`: "function reported an error: failed on purpose",
	} {
		_, err := b.Invoke(context.Background(), json.RawMessage(input))
		AssertReason(t, err, want)
	}
}

func TestBuiltinAsk(t *testing.T) {
	b := MustBuiltin(t, "ask")
	t.Run("answer", func(t *testing.T) {
		res, err := b.Invoke(context.Background(), json.RawMessage(`{"answer": "42"}`))
		AssertOutput(t, res, err, `{"answer":"42"}`)
	})
	for input, want := range map[string]string{
		`{}`:                               "What is the answer?",
		`{"answer": ""}`:                   "What is the answer?",
		`{"answer": 42}`:                   "What is the answer?",
		`{"question": "Your name?"}`:       "Your name?",
		`{"answer": "", "question": "Q?"}`: "Q?",
	} {
		t.Run(input, func(t *testing.T) {
			res, err := b.Invoke(context.Background(), json.RawMessage(input))
			if err != nil {
				t.Fatal(err)
			}
			if res.InputRequired != want || res.Output != nil {
				t.Fatalf("Invoke(%s) = %+v, want question %q", input, res, want)
			}
		})
	}
}
