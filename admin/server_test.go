package admin_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
)

// TestAdminRefusals: the probes and /metrics answer anyone; every other
// route, known or not, answers loopback callers addressing a loopback
// host without an Origin only.
func TestAdminRefusals(t *testing.T) {
	s := newServer(admin.Config{Reloader: fakeReloader{report: &admin.ReloadReport{}}})
	const (
		remote  = `{"message":"admin endpoints answer loopback callers only"}`
		host    = `{"message":"admin endpoints answer requests addressed to a loopback host (127.0.0.1, ::1 or localhost) only"}`
		browser = `{"message":"admin endpoints refuse requests from web pages (an Origin header)"}`

		mainListener = `{"message":"this is the admin listener; the A2A endpoint and the agent card are on the main listener, --listen (default 127.0.0.1:8080)"}`
	)
	for _, tt := range []struct {
		name, method, path, remote, host, origin string
		code                                     int
		body                                     string
	}{
		{"healthz from anywhere", "GET", "/healthz", "192.0.2.7:1", "evil.example", "https://evil.example", 200, `{"status":"ok"}`},
		{"readyz from anywhere", "GET", "/readyz", "192.0.2.7:1", "evil.example", "", 200, `{"status":"ready"}`},
		{"metrics from anywhere", "GET", "/metrics", "[2001:db8::1]:1", "a2ad.example", "", 200, "# metrics"},
		{"a remote caller", "GET", "/admin/v1/overview", "192.0.2.7:1", "127.0.0.1:8081", "", 403, remote},
		{"a remote caller, unknown route", "GET", "/admin/nope", "192.0.2.7:1", "127.0.0.1:8081", "", 403, remote},
		{"a remote caller, backup", "GET", admin.BackupPath, "192.0.2.7:1", "127.0.0.1:8081", "", 403, remote},
		{"an IPv4-mapped loopback caller", "POST", "/admin/v1/reload", "[::ffff:127.0.0.1]:1", "[::1]:8081", "", 200, `{"catalog":{"reloaded":false,"changed":false,"version":"","functions":0,"problems":null},"keys":null,"auditLogReopened":null}`},
		{"DNS rebinding", "POST", "/admin/v1/reload", "127.0.0.1:1", "evil.example:8081", "", 403, host},
		{"localhost", "POST", "/admin/v1/reload", "127.0.0.1:1", "LOCALHOST:8081", "", 200, `{"catalog":{"reloaded":false,"changed":false,"version":"","functions":0,"problems":null},"keys":null,"auditLogReopened":null}`},
		{"a web page", "POST", "/admin/v1/reload", "127.0.0.1:1", "127.0.0.1:8081", "null", 403, browser},
		{"unknown route", "GET", "/admin/nope", "127.0.0.1:1", "127.0.0.1:8081", "", 404, `{"message":"Not Found"}`},
		{"the A2A endpoint", "POST", "/a2a", "127.0.0.1:1", "127.0.0.1:8081", "", 404, mainListener},
		{"the card", "GET", "/.well-known/agent-card.json", "127.0.0.1:1", "localhost:8081", "", 404, mainListener},
	} {
		req := httptest.NewRequest(tt.method, tt.path, nil)
		req.RemoteAddr, req.Host = tt.remote, tt.host
		if tt.origin != "" {
			req.Header.Set("Origin", tt.origin)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if got := strings.TrimSpace(rec.Body.String()); rec.Code != tt.code || got != tt.body {
			t.Errorf("%s: HTTP %d %s\nwant HTTP %d %s", tt.name, rec.Code, got, tt.code, tt.body)
		}
	}
}

// TestReadyzAndReload: /readyz gives the reason it is not ready; a reload
// answers 422 with its report when a part failed.
func TestReadyzAndReload(t *testing.T) {
	reason := ""
	ok := true
	rl := &fakeReloader{report: &admin.ReloadReport{
		Catalog: admin.CatalogReload{Version: "v1", Functions: 2, Problems: []string{"functions[0]: id: empty"}},
		Keys:    &admin.KeysReload{Reloaded: true, Entries: 3, Problems: []string{}, StreamsEnded: 1}, AuditLogReopened: &ok,
	}, err: errors.New("catalogue has problems")}
	s := newServer(admin.Config{NotReady: func() string { return reason }, Reloader: rl})
	if code, body := serve(t, s, "GET", "/readyz"); code != 200 || body != `{"status":"ready"}` {
		t.Errorf("ready: HTTP %d %s", code, body)
	}
	reason = "draining"
	if code, body := serve(t, s, "GET", "/readyz"); code != 503 || body != `{"reason":"draining","status":"not_ready"}` {
		t.Errorf("draining: HTTP %d %s", code, body)
	}
	want := `{"catalog":{"reloaded":false,"changed":false,"version":"v1","functions":2,"problems":["functions[0]: id: empty"]},` +
		`"keys":{"reloaded":true,"entries":3,"problems":[],"streamsEnded":1},"auditLogReopened":true}`
	if code, body := serve(t, s, "POST", "/admin/v1/reload"); code != 422 || body != want {
		t.Errorf("failed reload: HTTP %d %s\nwant 422 %s", code, body, want)
	}
	rl.err = nil
	if code, body := serve(t, s, "POST", "/admin/v1/reload"); code != 200 || body != want {
		t.Errorf("reload: HTTP %d %s\nwant 200 %s", code, body, want)
	}
	if code, _ := serve(t, s, "GET", "/admin/v1/reload"); code != 405 {
		t.Errorf("GET reload: HTTP %d, want 405", code)
	}
}

// TestOutboxDeadLetters: GET /admin/push/dead-letters passes after and
// limit on, and refuses bad ones.
func TestOutboxDeadLetters(t *testing.T) {
	var gotAfter uint64
	var gotLimit int
	in := &fakeInspector{deadLetters: func(after uint64, limit int) ([]tasks.DeadLetter, bool, error) {
		gotAfter, gotLimit = after, limit
		return []tasks.DeadLetter{{ID: 7, TaskID: "t1", ConfigID: "c1", URL: "https://hooks.example/x", Attempts: 5,
			LastError: "HTTP 404", CreatedAt: testStart, DeadAt: testStart}}, false, nil
	}}
	s := newServer(admin.Config{Outbox: &fakeOutbox{depth: 4}, Inspector: in})
	want := `{"deadLetters":[{"id":7,"taskId":"t1","configId":"c1","url":"https://hooks.example/x","attempts":5,"lastError":"HTTP 404",` +
		`"createdAt":"2026-01-02T03:04:05Z","deadAt":"2026-01-02T03:04:05Z"}],"outboxDepth":4}`
	if code, body := serve(t, s, "GET", "/admin/push/dead-letters"); code != 200 || body != want || gotAfter != 0 || gotLimit != 100 {
		t.Errorf("HTTP %d %s (after %d, limit %d)\nwant %s", code, body, gotAfter, gotLimit, want)
	}
	if code, _ := serve(t, s, "GET", "/admin/push/dead-letters?after=6&limit=1000"); code != 200 || gotAfter != 6 || gotLimit != 1000 {
		t.Errorf("after=6&limit=1000: HTTP %d, after %d, limit %d", code, gotAfter, gotLimit)
	}
	for q, want := range map[string]string{
		"after=-1": `{"message":"after must be a non-negative integer"}`,
		"limit=0":  `{"message":"limit must be an integer from 1 to 1000"}`,
		"limit=x":  `{"message":"limit must be an integer from 1 to 1000"}`,
	} {
		if code, body := serve(t, s, "GET", "/admin/push/dead-letters?"+q); code != 400 || body != want {
			t.Errorf("%s: HTTP %d %s, want 400 %s", q, code, body, want)
		}
	}
}

// TestBackupEndpoint: the copy comes with its length and headers; a copy
// that fails before it starts is a 500 without detail.
func TestBackupEndpoint(t *testing.T) {
	body := bytes.Repeat([]byte("a2ad"), 1024)
	s := newServer(admin.Config{Backup: testkit.Backup{Size: int64(len(body)), Body: body}})
	req := httptest.NewRequest("GET", "http://127.0.0.1:8081"+admin.BackupPath, nil)
	req.RemoteAddr = "127.0.0.1:1"
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), body) {
		t.Fatalf("backup: HTTP %d, %d bytes", rec.Code, rec.Body.Len())
	}
	for k, v := range map[string]string{
		"Content-Type": "application/octet-stream", "Content-Length": "4096",
		"Content-Disposition": `attachment; filename="a2ad-backup.db"`, "Cache-Control": "no-store",
	} {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	s = newServer(admin.Config{Backup: testkit.Backup{Size: -1, Err: errors.New("disk on fire")}})
	if code, got := serve(t, s, "GET", admin.BackupPath); code != 500 || got != "store backup failed" {
		t.Errorf("failed backup: HTTP %d %q", code, got)
	}
}

// TestOperatorCancel: the cancel goes through the task service with the
// task's owner, answers with the task as it then stands, maps the
// service's errors, and writes one audit record each time.
func TestOperatorCancel(t *testing.T) {
	rec := &tasks.Record{Owner: "bob", CallerTiers: []string{"partner"}, FunctionID: "demo::sleep",
		Task: a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.StateWorking}}}
	in := &fakeInspector{task: func(id string) (*tasks.Record, []tasks.Event, error) {
		if id != "t1" {
			return nil, nil, tasks.ErrNotFound
		}
		r := *rec
		return &r, nil, nil
	}}
	var gotOwner tasks.Caller
	cancelErr := error(nil)
	svc := fakeCanceler(func(owner tasks.Caller, id string) (*a2a.Task, error) {
		gotOwner = owner
		if cancelErr == nil {
			rec.Task.Status.State = a2a.StateCanceled
		}
		return nil, cancelErr
	})
	var audit bytes.Buffer
	al := zerolog.New(&audit)
	s := newServer(admin.Config{Inspector: in, Tasks: svc, Audit: &al})

	code, body := serve(t, s, "POST", "/admin/v1/tasks/t1/cancel")
	if code != 200 || !strings.Contains(body, `"state":"canceled"`) || gotOwner.ID != "bob" || len(gotOwner.Tiers) != 1 {
		t.Errorf("cancel: HTTP %d %s, owner %+v", code, body, gotOwner)
	}
	cancelErr = tasks.ErrNotCancelable
	if code, body := serve(t, s, "POST", "/admin/v1/tasks/t1/cancel"); code != 409 ||
		body != `{"message":"task \"t1\" is canceled: only a task that is not terminal can be canceled"}` {
		t.Errorf("terminal: HTTP %d %s", code, body)
	}
	cancelErr = errors.New("disk on fire")
	if code, body := serve(t, s, "POST", "/admin/v1/tasks/t1/cancel"); code != 500 || body != `{"message":"internal error (see the server log)"}` {
		t.Errorf("service error: HTTP %d %s", code, body)
	}
	if code, body := serve(t, s, "POST", "/admin/v1/tasks/t2/cancel"); code != 404 || body != `{"message":"no task has id \"t2\""}` {
		t.Errorf("unknown: HTTP %d %s", code, body)
	}
	var outcomes []string
	for _, line := range strings.Split(strings.TrimSpace(audit.String()), "\n") {
		for _, f := range []string{`"level":"info"`, `"operator":true`, `"action":"tasks/cancel"`, `"remote_addr":"127.0.0.1:4242"`} {
			if !strings.Contains(line, f) {
				t.Errorf("audit record %s lacks %s", line, f)
			}
		}
		i := strings.Index(line, `"reason":"`)
		outcomes = append(outcomes, line[i:i+strings.Index(line[i+10:], `"`)+11])
	}
	want := []string{`"reason":"canceled"`, `"reason":"not_cancelable"`, `"reason":"internal_error"`, `"reason":"not_found"`}
	if strings.Join(outcomes, " ") != strings.Join(want, " ") {
		t.Errorf("audit reasons %v, want %v", outcomes, want)
	}
}

// TestDeadLetterRoutesAnswerTheSame: GET /admin/push/dead-letters, the
// alias kept for a release, answers page by page the letters GET
// /admin/v1/dead-letters does, from the same read, times in UTC for both.
func TestDeadLetterRoutesAnswerTheSame(t *testing.T) {
	east := time.FixedZone("east", 5*3600)
	var all []tasks.DeadLetter
	for i := range 5 {
		all = append(all, tasks.DeadLetter{ID: uint64(3 + 2*i), TaskID: fmt.Sprintf("t%d", i), ConfigID: "c", URL: "https://hooks.example/x",
			Attempts: i + 1, LastError: "HTTP 500", CreatedAt: testStart.In(east), DeadAt: testStart.Add(time.Duration(i) * time.Second).In(east)})
	}
	in := &fakeInspector{deadLetters: func(after uint64, limit int) ([]tasks.DeadLetter, bool, error) {
		var out []tasks.DeadLetter
		for _, d := range all {
			if d.ID > after {
				out = append(out, d)
			}
		}
		more := len(out) > limit
		return out[:min(limit, len(out))], more, nil
	}}
	s := newServer(admin.Config{Outbox: &fakeOutbox{depth: 1}, Inspector: in})
	var v1, alias []admin.DeadLetter
	for tok, pages := "", 0; ; pages++ {
		if pages > 5 {
			t.Fatal("GET /admin/v1/dead-letters does not end")
		}
		path := "/admin/v1/dead-letters?limit=2"
		if tok != "" {
			path += "&page_token=" + url.QueryEscape(tok)
		}
		var page admin.DeadLetterList
		code, body := serve(t, s, "GET", path)
		if err := json.Unmarshal([]byte(body), &page); code != 200 || err != nil {
			t.Fatalf("GET %s: HTTP %d %s (%v)", path, code, body, err)
		}
		v1 = append(v1, page.DeadLetters...)
		if page.NextPageToken == nil {
			break
		}
		tok = *page.NextPageToken
	}
	for after := uint64(0); ; {
		var page admin.OutboxList
		path := fmt.Sprintf("/admin/push/dead-letters?limit=2&after=%d", after)
		code, body := serve(t, s, "GET", path)
		if err := json.Unmarshal([]byte(body), &page); code != 200 || err != nil || page.OutboxDepth != 1 {
			t.Fatalf("GET %s: HTTP %d %s (%v)", path, code, body, err)
		}
		if len(page.DeadLetters) == 0 {
			break
		}
		alias = append(alias, page.DeadLetters...)
		after = page.DeadLetters[len(page.DeadLetters)-1].ID
	}
	if len(v1) != len(all) || !reflect.DeepEqual(v1, alias) {
		t.Errorf("GET /admin/v1/dead-letters: %+v\nGET /admin/push/dead-letters: %+v\nwant the same %d letters", v1, alias, len(all))
	}
	for _, d := range alias {
		if d.CreatedAt.Location() != time.UTC || d.DeadAt.Location() != time.UTC {
			t.Fatalf("alias answers %v, %v: want UTC", d.CreatedAt, d.DeadAt)
		}
	}
}
