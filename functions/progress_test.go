package functions_test

// Over 600 lines: progress is one contract, tested here for each backend
// (exec, http, builtin) side by side.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2ad/a2ad/functions"
	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"
)

// Recorder records the progress a call reports, with the time each report
// arrived.
type Recorder struct {
	mu      sync.Mutex
	reports []functions.Progress
	times   []time.Time
	// OnReport, if set, is called with the number of reports so far
	// (from 1) after each report is recorded.
	OnReport func(n int, p functions.Progress)
}

// Context returns ctx with r as its ProgressFunc.
func (r *Recorder) Context(ctx context.Context) context.Context {
	return functions.WithProgress(ctx, func(p functions.Progress) {
		r.mu.Lock()
		r.reports = append(r.reports, p)
		r.times = append(r.times, time.Now())
		n := len(r.reports)
		r.mu.Unlock()
		if r.OnReport != nil {
			r.OnReport(n, p)
		}
	})
}

// Reports returns the reports so far and their arrival times.
func (r *Recorder) Reports() ([]functions.Progress, []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]functions.Progress(nil), r.reports...), append([]time.Time(nil), r.times...)
}

// AssertReports checks that r recorded exactly want, in order.
func (r *Recorder) AssertReports(tb testing.TB, want []functions.Progress) {
	tb.Helper()
	got, _ := r.Reports()
	if diff := cmp.Diff(want, got); diff != "" {
		tb.Errorf("progress reports (-want +got):\n%s", diff)
	}
}

// Note is a progress note.
func Note(msg string) functions.Progress { return functions.Progress{Message: msg} }

// TextChunk is a text artifact report.
func TextChunk(a functions.ProgressArtifact, text string) functions.Progress {
	a.Text = &text
	return functions.Progress{Artifact: &a}
}

// DataChunk is a data artifact report.
func DataChunk(a functions.ProgressArtifact, data string) functions.Progress {
	a.Data = json.RawMessage(data)
	return functions.Progress{Artifact: &a}
}

// progressScriptReports are the reports of progress.sh.
var progressScriptReports = []functions.Progress{
	Note("Fetched 1 of 3 pages"),
	Note("Fetched 2 of 3 pages"),
	Note("Fetched 3 of 3 pages"),
	TextChunk(functions.ProgressArtifact{ArtifactID: "report", Name: "Report", Append: true}, "page 1\n"),
	DataChunk(functions.ProgressArtifact{ArtifactID: "rows", LastChunk: true}, `{"rows":[1,2,3]}`),
}

func TestExecBackend_Progress(t *testing.T) {
	// The script prints its result only once the last report has arrived
	// (it waits for the gate file), so the reports arrive while it runs.
	gate := filepath.Join(t.TempDir(), "gate")
	rec := &Recorder{OnReport: func(n int, _ functions.Progress) {
		if n == len(progressScriptReports) {
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Error(err)
			}
		}
	}}
	begin := time.Now()
	res, err := ShBackend(t, "progress.sh", gate).Invoke(rec.Context(context.Background()), json.RawMessage(`{}`))
	returned := time.Now()
	AssertOutput(t, res, err, `{"pages":3,"ok":true}`)
	rec.AssertReports(t, progressScriptReports)

	_, times := rec.Reports()
	if len(times) == 0 {
		t.Fatal("no progress reported")
	}
	// 0.7 s of sleeps follow the first line, and 0.3 s the last progress line.
	if d := returned.Sub(times[0]); d < 500*time.Millisecond {
		t.Errorf("first report arrived %v before Invoke returned (%v after it began), want it while the script ran", d, times[0].Sub(begin))
	}
	if d := returned.Sub(times[len(times)-1]); d < 200*time.Millisecond {
		t.Errorf("last report arrived %v before Invoke returned, want at least 200ms", d)
	}
}

func TestExecBackend_ProgressWithoutFunc(t *testing.T) {
	res, err := ShBackend(t, "progress.sh").Invoke(context.Background(), json.RawMessage(`{}`))
	AssertOutput(t, res, err, `{"pages":3,"ok":true}`)
}

func TestExecBackend_ProgressMalformed(t *testing.T) {
	var logs bytes.Buffer
	rec := &Recorder{}
	ctx := rec.Context(zerolog.New(&logs).WithContext(context.Background()))
	out := "{\"a2a.progress\": \"first\"}\n" +
		"{\"a2a.artifact\": {\"text\": \"payload-s3cret\", \"data\": {\"k\": \"payload-s3cret\"}}}\n" +
		"{\"ok\": true}\n"
	_, err := ShBackend(t, "print.sh", out).Invoke(ctx, json.RawMessage(`{}`))
	ce := AssertReason(t, err, "function wrote a malformed progress line")
	rec.AssertReports(t, []functions.Progress{Note("first")})

	if strings.Contains(ce.Error(), "s3cret") {
		t.Errorf("error %q holds the line", ce.Error())
	}
	var entry struct {
		Level, Message, Error string
		Line                  int `json:"output_line"`
	}
	if err := json.Unmarshal(logs.Bytes(), &entry); err != nil {
		t.Fatalf("log %q: %v", logs.String(), err)
	}
	if entry.Level != "warn" || entry.Message != "function wrote a malformed progress line" || entry.Line != 2 || entry.Error == "" {
		t.Errorf("log entry %+v, want a warning on line 2 with the detail", entry)
	}
	if strings.Contains(logs.String(), "s3cret") {
		t.Errorf("log %q holds the line", logs.String())
	}
}

// ProgressBackend returns a backend whose output is body: the exec backend
// prints it, and the http backend answers with it as application/x-ndjson.
func ProgressBackend(tb testing.TB, kind, body string) functions.Backend {
	tb.Helper()
	if kind == "exec" {
		return ShBackend(tb, "print.sh", body)
	}
	srv := MustServe(tb, Reply(http.StatusOK, "application/x-ndjson; charset=utf-8", body))
	return &functions.HTTPBackend{URL: srv.URL}
}

func TestProgressLines(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		reports  []functions.Progress
		output   string
		question string
		reason   string
	}{
		{name: "no progress", body: `{"a": 1}`, output: `{"a":1}`},
		{name: "no progress pretty", body: "{\n  \"a\": 1\n}\n", output: `{"a":1}`},
		{
			name:    "pretty result after progress",
			body:    "{\"a2a.progress\": \"one\"}\n{\n  \"a\": 1\n}\n",
			reports: []functions.Progress{Note("one")},
			output:  `{"a":1}`,
		},
		{
			name:    "interleaved",
			body:    "[1,\n{\"a2a.progress\": {\"message\": \"x\"}}\n2]\n",
			reports: []functions.Progress{Note("x")},
			output:  `[1,2]`,
		},
		{
			name:    "blank messages ignored",
			body:    "{\"a2a.progress\": \"\"}\n{\"a2a.progress\": {\"message\": \" \"}}\n{\"a2a.progress\": {}}\n{\"a2a.progress\": {\"message\": \"m\", \"extra\": 1}}\n1\n",
			reports: []functions.Progress{Note("m")},
			output:  `1`,
		},
		{
			name:    "leading space and CRLF",
			body:    "  {\"a2a.progress\": \"x\"}\r\n1\r\n",
			reports: []functions.Progress{Note("x")},
			output:  `1`,
		},
		{
			name:    "last line without line break",
			body:    "1\n{\"a2a.progress\": \"x\"}",
			reports: []functions.Progress{Note("x")},
			output:  `1`,
		},
		{
			name: "artifacts",
			body: "{\"a2a.artifact\": {\"text\": \"\"}}\n" +
				"{\"a2a.artifact\": {\"artifactId\": \"t\", \"name\": \"T\", \"text\": \"a\\u00e9\", \"append\": false, \"lastChunk\": true}}\n" +
				"{\"a2a.artifact\": {\"data\": { \"b\" : [ 1 , {} ] }, \"append\": true, \"other\": 1}}\n" +
				"{}\n",
			reports: []functions.Progress{
				TextChunk(functions.ProgressArtifact{}, ""),
				TextChunk(functions.ProgressArtifact{ArtifactID: "t", Name: "T", LastChunk: true}, "aé"),
				DataChunk(functions.ProgressArtifact{Append: true}, `{"b":[1,{}]}`),
			},
			output: `{}`,
		},
		{name: "another key too", body: `{"a2a.progress": "x", "n": 1}`, output: `{"a2a.progress":"x","n":1}`},
		{name: "other a2a key", body: `{"a2a.progress2": "x"}`, output: `{"a2a.progress2":"x"}`},
		{name: "space before the key", body: "{ \"a2a.progress\": \"x\"}\n", output: `{"a2a.progress":"x"}`},
		{name: "split over lines", body: "{\"a2a.progress\":\n\"x\"}\n", output: `{"a2a.progress":"x"}`},
		{
			name:    "error after progress",
			body:    "{\"a2a.progress\": \"x\"}\n{\"a2a.error\": \"boom\"}\n",
			reports: []functions.Progress{Note("x")},
			reason:  "function reported an error: boom",
		},
		{
			name:     "pretty input required after progress",
			body:     "{\"a2a.progress\": \"x\"}\n{\"a2a.input_required\": {\n  \"question\": \"Which city?\"\n}}\n",
			reports:  []functions.Progress{Note("x")},
			question: "Which city?",
		},
		{
			name:    "progress only",
			body:    "{\"a2a.progress\": \"x\"}\n",
			reports: []functions.Progress{Note("x")},
			reason:  "function returned invalid JSON",
		},
		{name: "progress not a string", body: `{"a2a.progress": 5}`, reason: "function wrote a malformed progress line"},
		{name: "progress null", body: `{"a2a.progress": null}`, reason: "function wrote a malformed progress line"},
		{name: "message not a string", body: `{"a2a.progress": {"message": ["x"]}}`, reason: "function wrote a malformed progress line"},
		{name: "artifact not an object", body: `{"a2a.artifact": "x"}`, reason: "function wrote a malformed progress line"},
		{name: "artifact empty", body: `{"a2a.artifact": {"name": "n"}}`, reason: "function wrote a malformed progress line"},
		{name: "artifact text and data", body: `{"a2a.artifact": {"text": "a", "data": {}}}`, reason: "function wrote a malformed progress line"},
		{name: "artifact text null", body: `{"a2a.artifact": {"text": null}}`, reason: "function wrote a malformed progress line"},
		{name: "artifact text number", body: `{"a2a.artifact": {"text": 1}}`, reason: "function wrote a malformed progress line"},
		{name: "artifact data array", body: `{"a2a.artifact": {"data": [1]}}`, reason: "function wrote a malformed progress line"},
		{name: "artifact data null", body: `{"a2a.artifact": {"data": null}}`, reason: "function wrote a malformed progress line"},
		{name: "artifact id number", body: `{"a2a.artifact": {"artifactId": 7, "text": "a"}}`, reason: "function wrote a malformed progress line"},
		{name: "artifact name null", body: `{"a2a.artifact": {"name": null, "text": "a"}}`, reason: "function wrote a malformed progress line"},
		{name: "artifact append string", body: `{"a2a.artifact": {"text": "a", "append": "true"}}`, reason: "function wrote a malformed progress line"},
		{name: "artifact lastChunk number", body: `{"a2a.artifact": {"text": "a", "lastChunk": 1}}`, reason: "function wrote a malformed progress line"},
	}
	for _, kind := range []string{"exec", "http"} {
		t.Run(kind, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					rec := &Recorder{}
					res, err := ProgressBackend(t, kind, tt.body).Invoke(rec.Context(context.Background()), json.RawMessage(`{}`))
					switch {
					case tt.reason != "":
						AssertReason(t, err, tt.reason)
					case tt.question != "":
						if err != nil {
							t.Fatal(err)
						}
						if res.InputRequired != tt.question || res.Output != nil {
							t.Fatalf("Invoke = %+v, want question %q", res, tt.question)
						}
					default:
						AssertOutput(t, res, err, tt.output)
					}
					rec.AssertReports(t, tt.reports)
				})
			}
		})
	}
}

// ProgressLines returns n progress lines.
func ProgressLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"a2a.progress\": \"step %03d\"}\n", i) // 29 bytes
	}
	return b.String()
}

func TestExecBackend_ProgressCaps(t *testing.T) {
	t.Run("flood", func(t *testing.T) {
		b := ShBackend(t, "progressflood.sh")
		b.MaxOutputBytes = 1000
		rec := &Recorder{}
		begin := time.Now()
		_, err := b.Invoke(rec.Context(context.Background()), json.RawMessage(`{}`))
		AssertReason(t, err, "function output exceeds 4000 bytes")
		if d := time.Since(begin); d > 3*time.Second {
			t.Errorf("Invoke took %v", d)
		}
		// 4000 bytes hold 88 lines of 45 bytes.
		if got, _ := rec.Reports(); len(got) != 88 {
			t.Errorf("%d reports, want 88", len(got))
		}
	})
	t.Run("long progress line", func(t *testing.T) {
		b := ShBackend(t, "print.sh", `{"a2a.progress": "`+strings.Repeat("x", 1000)+`"}`)
		b.MaxOutputBytes = 1000
		_, err := b.Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function output exceeds 1000 bytes")
	})
	t.Run("progress beside the result cap", func(t *testing.T) {
		// 580 bytes of progress and an 18-byte result, under 200 and 800.
		b := ShBackend(t, "print.sh", ProgressLines(20)+`{"a":"0123456789"}`)
		b.MaxOutputBytes = 200
		rec := &Recorder{}
		res, err := b.Invoke(rec.Context(context.Background()), json.RawMessage(`{}`))
		AssertOutput(t, res, err, `{"a":"0123456789"}`)
		if got, _ := rec.Reports(); len(got) != 20 {
			t.Errorf("%d reports, want 20", len(got))
		}
	})
	t.Run("artifact chunks count with the result", func(t *testing.T) {
		// Three artifact lines of 61 bytes: the third takes what is
		// stored over 150 bytes, and is not reported.
		chunk := `{"a2a.artifact": {"artifactId": "r", "text": "0123456789"}}` + "\n"
		b := ShBackend(t, "print.sh", strings.Repeat(chunk, 3)+`{}`)
		b.MaxOutputBytes = 150
		rec := &Recorder{}
		_, err := b.Invoke(rec.Context(context.Background()), json.RawMessage(`{}`))
		AssertReason(t, err, "function output exceeds 150 bytes")
		if got, _ := rec.Reports(); len(got) != 2 {
			t.Errorf("%d reports, want 2", len(got))
		}
		// Two chunks and the result fit.
		b = ShBackend(t, "print.sh", strings.Repeat(chunk, 2)+`{"a":"0123456789"}`)
		b.MaxOutputBytes = 150
		res, err := b.Invoke(context.Background(), json.RawMessage(`{}`))
		AssertOutput(t, res, err, `{"a":"0123456789"}`)
		// Their sum: the result comes after chunks that left it no room.
		b = ShBackend(t, "print.sh", strings.Repeat(chunk, 2)+`{"a":"0123456789012345678901234567890"}`)
		b.MaxOutputBytes = 150
		_, err = b.Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function output exceeds 150 bytes")
	})
	t.Run("result over", func(t *testing.T) {
		b := ShBackend(t, "print.sh", ProgressLines(3)+`{"a":"0123456789"}`)
		b.MaxOutputBytes = 17
		_, err := b.Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function output exceeds 17 bytes")
	})
	t.Run("result split by progress over", func(t *testing.T) {
		b := ShBackend(t, "print.sh", "[\"0123456789\",\n"+ProgressLines(3)+"\"0123456789\"]")
		b.MaxOutputBytes = 20
		_, err := b.Invoke(context.Background(), json.RawMessage(`{}`))
		AssertReason(t, err, "function output exceeds 20 bytes")
	})
}

func TestExecBackend_ProgressCancel(t *testing.T) {
	errStop := errors.New("stopped by test")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	first := make(chan struct{})
	rec := &Recorder{OnReport: func(n int, _ functions.Progress) {
		if n == 1 {
			close(first)
		}
	}}
	pidFile := filepath.Join(t.TempDir(), "pids")
	b := ShBackend(t, "progressspawn.sh", pidFile)
	b.KillGrace = 5 * time.Second
	done := make(chan error, 1)
	go func() {
		_, err := b.Invoke(rec.Context(ctx), json.RawMessage(`{}`))
		done <- err
	}()
	select {
	case <-first:
	case <-time.After(5 * time.Second):
		t.Fatal("no progress reported")
	}
	pids := ReadPIDs(t, pidFile)
	begin := time.Now()
	cancel(errStop)
	select {
	case err := <-done:
		AssertReason(t, err, "call canceled")
		if !errors.Is(err, errStop) {
			t.Errorf("error %v does not wrap the cancel cause", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Invoke did not return after cancel")
	}
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("Invoke returned %v after cancel", d)
	}
	AssertGone(t, pids...)
	// Nothing is reported once the call is canceled.
	n, _ := rec.Reports()
	time.Sleep(100 * time.Millisecond)
	if m, _ := rec.Reports(); len(m) != len(n) {
		t.Errorf("%d reports after Invoke returned", len(m)-len(n))
	}
}

// ReadPIDs reads the pids a script wrote, one a line, to path; the file
// must exist already.
func ReadPIDs(tb testing.TB, path string) []int {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return parsePIDs(tb, data)
}

// parsePIDs reads the two pids a script wrote, one a line.
func parsePIDs(tb testing.TB, data []byte) []int {
	tb.Helper()
	var pids []int
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
	return pids
}

func TestHTTPBackend_Progress(t *testing.T) {
	lines := []string{
		`{"a2a.progress": {"message": "Fetched 1 of 2 pages"}}`,
		`{"a2a.progress": "Fetched 2 of 2 pages"}`,
		`{"a2a.artifact": {"artifactId": "report", "text": "page 1", "append": true}}`,
	}
	// The handler writes its result only once the reports have arrived.
	release := make(chan struct{})
	srv := MustServe(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		rc := http.NewResponseController(w)
		for _, line := range lines {
			_, _ = io.WriteString(w, line+"\n")
			if err := rc.Flush(); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		result := "{\n  \"ok\": true\n}\n"
		select {
		case <-release:
		case <-r.Context().Done():
			return
		case <-time.After(5 * time.Second):
			result = `{"a2a.error": "progress not delivered while streaming"}`
		}
		_, _ = io.WriteString(w, result)
	})
	rec := &Recorder{OnReport: func(n int, _ functions.Progress) {
		if n == len(lines) {
			close(release)
		}
	}}
	res, err := (&functions.HTTPBackend{URL: srv.URL}).Invoke(rec.Context(context.Background()), json.RawMessage(`{}`))
	AssertOutput(t, res, err, `{"ok":true}`)
	rec.AssertReports(t, []functions.Progress{
		Note("Fetched 1 of 2 pages"),
		Note("Fetched 2 of 2 pages"),
		TextChunk(functions.ProgressArtifact{ArtifactID: "report", Append: true}, "page 1"),
	})
}

func TestHTTPBackend_ProgressPlainJSON(t *testing.T) {
	// A body of another type is the result as a whole.
	t.Run("progress object", func(t *testing.T) {
		srv := MustServe(t, Reply(http.StatusOK, "application/json", `{"a2a.progress": {"message": "x"}}`))
		rec := &Recorder{}
		res, err := (&functions.HTTPBackend{URL: srv.URL}).Invoke(rec.Context(context.Background()), json.RawMessage(`{}`))
		AssertOutput(t, res, err, `{"a2a.progress":{"message":"x"}}`)
		rec.AssertReports(t, nil)
	})
	t.Run("progress lines", func(t *testing.T) {
		srv := MustServe(t, Reply(http.StatusOK, "application/json", "{\"a2a.progress\": \"x\"}\n{\"ok\": true}\n"))
		rec := &Recorder{}
		_, err := (&functions.HTTPBackend{URL: srv.URL}).Invoke(rec.Context(context.Background()), json.RawMessage(`{}`))
		AssertReason(t, err, "function returned invalid JSON")
		rec.AssertReports(t, nil)
	})
}

func TestHTTPBackend_ProgressCaps(t *testing.T) {
	for _, tt := range []struct {
		name, body, reason string
	}{
		{name: "total", body: ProgressLines(40) + `{}`, reason: "function response exceeds 800 bytes"},
		{name: "line", body: `{"a2a.progress": "` + strings.Repeat("x", 200) + `"}`, reason: "function response exceeds 200 bytes"},
		{name: "result", body: ProgressLines(3) + `"` + strings.Repeat("x", 199) + `"`, reason: "function response exceeds 200 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := MustServe(t, Reply(http.StatusOK, "application/x-ndjson", tt.body))
			_, err := (&functions.HTTPBackend{URL: srv.URL, MaxResponseBytes: 200}).Invoke(context.Background(), json.RawMessage(`{}`))
			AssertReason(t, err, tt.reason)
		})
	}
	t.Run("under", func(t *testing.T) {
		srv := MustServe(t, Reply(http.StatusOK, "application/x-ndjson", ProgressLines(20)+`"`+strings.Repeat("x", 198)+`"`))
		rec := &Recorder{}
		res, err := (&functions.HTTPBackend{URL: srv.URL, MaxResponseBytes: 200}).Invoke(rec.Context(context.Background()), json.RawMessage(`{}`))
		AssertOutput(t, res, err, `"`+strings.Repeat("x", 198)+`"`)
		if got, _ := rec.Reports(); len(got) != 20 {
			t.Errorf("%d reports, want 20", len(got))
		}
	})
}

func TestHTTPBackend_ProgressCancel(t *testing.T) {
	srv := MustServe(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		rc := http.NewResponseController(w)
		stop := time.After(10 * time.Second) // never hang srv.Close
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "{\"a2a.progress\": \"tick %d\"}\n", i); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			select {
			case <-r.Context().Done():
				return
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	errStop := errors.New("stopped by test")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var canceled time.Time
	rec := &Recorder{OnReport: func(n int, _ functions.Progress) {
		if n == 1 {
			canceled = time.Now()
			cancel(errStop)
		}
	}}
	_, err := (&functions.HTTPBackend{URL: srv.URL}).Invoke(rec.Context(ctx), json.RawMessage(`{}`))
	AssertReason(t, err, "call canceled")
	if !errors.Is(err, errStop) {
		t.Errorf("error %v does not wrap the cancel cause", err)
	}
	if d := time.Since(canceled); d > 2*time.Second {
		t.Errorf("Invoke returned %v after cancel", d)
	}
	rec.AssertReports(t, []functions.Progress{Note("tick 0")})
}

func TestBuiltinSleep_Progress(t *testing.T) {
	t.Parallel()
	rec := &Recorder{}
	begin := time.Now()
	res, err := MustBuiltin(t, "sleep").Invoke(rec.Context(context.Background()), json.RawMessage(`{"seconds": 2.2}`))
	d := time.Since(begin)
	AssertOutput(t, res, err, `{"slept":2.2}`)
	rec.AssertReports(t, []functions.Progress{Note("slept 1 of 2.2 seconds"), Note("slept 2 of 2.2 seconds")})
	if d < 2200*time.Millisecond {
		t.Errorf("slept %v, want 2.2s", d)
	}
	_, times := rec.Reports()
	for i, at := range times {
		if want := time.Duration(i+1) * time.Second; at.Sub(begin) < want {
			t.Errorf("report %d arrived %v after the start, want %v", i+1, at.Sub(begin), want)
		}
	}
}

func TestBuiltinSleep_ProgressCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var canceled time.Time
	rec := &Recorder{OnReport: func(int, functions.Progress) {
		canceled = time.Now()
		cancel()
	}}
	_, err := MustBuiltin(t, "sleep").Invoke(rec.Context(ctx), json.RawMessage(`{"seconds": 2.5}`))
	AssertReason(t, err, "call canceled")
	if d := time.Since(canceled); d > 200*time.Millisecond {
		t.Errorf("Invoke returned %v after cancel", d)
	}
	rec.AssertReports(t, []functions.Progress{Note("slept 1 of 2.5 seconds")})
}

func TestExecBackend_SlowProgressAfterExit(t *testing.T) {
	// The child exits while its first report is being stored; the rest of
	// its output must still be read, however long storing takes.
	rec := &Recorder{OnReport: func(n int, _ functions.Progress) {
		if n == 1 {
			time.Sleep(1500 * time.Millisecond)
		}
	}}
	res, err := ShBackend(t, "progressexit.sh").Invoke(rec.Context(context.Background()), json.RawMessage(`{}`))
	AssertOutput(t, res, err, `{"ok":true}`)
	rec.AssertReports(t, []functions.Progress{Note("one"), Note("two")})
}

func TestExecBackend_EscapedWriterBounded(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Cleanup(func() {
		if data, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	rec := &Recorder{}
	begin := time.Now()
	res, err := ShBackend(t, "escape.sh", pidFile).Invoke(rec.Context(context.Background()), json.RawMessage(`{}`))
	AssertOutput(t, res, err, `{"ok":true}`)
	// Once the child has exited, a process that left its group gets about a
	// second of waiting for output, not until it stops writing.
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("Invoke took %v", d)
	}
}
