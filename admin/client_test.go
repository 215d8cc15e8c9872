package admin_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
)

// newClient runs s on a loopback port and returns a client of it.
func newClient(tb testing.TB, s *admin.Server) (*admin.Client, string) {
	tb.Helper()
	hs := httptest.NewServer(s.Handler())
	tb.Cleanup(hs.Close)
	c, err := admin.NewClient(hs.URL + "/")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c, hs.URL
}

func TestNewClientRefusesBadURLs(t *testing.T) {
	for _, u := range []string{"127.0.0.1:8081", "ftp://x", "http://", "://x", ""} {
		if c, err := admin.NewClient(u); err == nil {
			t.Errorf("NewClient(%q) = %v, want an error", u, c)
		}
	}
}

// TestClientTasks: the client sends the filter's fields that are set,
// decodes the answers, and returns the server's errors as *StatusError.
func TestClientTasks(t *testing.T) {
	var gotQuery tasks.TaskQuery
	var gotAfter string
	var gotLimit int
	rec := &tasks.Record{Owner: "bob", FunctionID: "demo::sleep",
		Task: a2a.Task{ID: "a/b", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.StateWorking}}}
	in := &fakeInspector{
		tasks: func(q tasks.TaskQuery, after string, limit int) (*tasks.TaskPage, error) {
			gotQuery, gotAfter, gotLimit = q, after, limit
			return &tasks.TaskPage{Tasks: []*tasks.Record{rec}, Scanned: 1}, nil
		},
		task: func(id string) (*tasks.Record, []tasks.Event, error) {
			if id != "a/b" {
				return nil, nil, tasks.ErrNotFound
			}
			return rec, nil, nil
		},
	}
	svc := fakeCanceler(func(tasks.Caller, string) (*a2a.Task, error) {
		rec.Task.Status.State = a2a.StateCanceled
		return nil, nil
	})
	c, _ := newClient(t, newServer(admin.Config{Inspector: in, Tasks: svc}))
	ctx := context.Background()

	anon, limit := "", 5
	list, raw, err := c.Tasks(ctx, admin.TaskFilter{Caller: &anon, Limit: &limit})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != "a/b" || *list.Tasks[0].Caller != "bob" || !bytes.HasPrefix(raw, []byte(`{"tasks":[{"id":"a/b",`)) {
		t.Fatalf("Tasks = %+v, %s, %v", list, raw, err)
	}
	if gotQuery.Owner == nil || *gotQuery.Owner != "" || gotQuery.State != "" || gotQuery.FunctionID != "" || gotAfter != "" || gotLimit != 5 {
		t.Errorf("the server saw %+v, after %q, limit %d", gotQuery, gotAfter, gotLimit)
	}
	bad := "done"
	_, _, err = c.Tasks(ctx, admin.TaskFilter{State: &bad})
	var se *admin.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusBadRequest || se.Status != "400 Bad Request" ||
		!strings.HasPrefix(se.Message, `state: "done" is not a task state (`) {
		t.Errorf("a bad state: %#v", err)
	}

	v, raw, err := c.Task(ctx, "a/b")
	if err != nil || v.Task.ID != "a/b" || v.Task.State != a2a.StateWorking || !bytes.HasPrefix(raw, []byte(`{"task":{"id":"a/b",`)) {
		t.Fatalf("Task = %+v, %s, %v", v, raw, err)
	}
	_, _, err = c.Task(ctx, "nope")
	if !errors.As(err, &se) || se.Code != 404 || se.Message != `no task has id "nope"` ||
		err.Error() != `the server answered 404 Not Found: no task has id "nope"` {
		t.Errorf("an unknown task: %v", err)
	}
	v, err = c.Cancel(ctx, "a/b")
	if err != nil || v.Task.State != a2a.StateCanceled {
		t.Errorf("Cancel = %+v, %v", v, err)
	}
}

// TestClientBackup: the whole copy, or an error that says what went wrong.
func TestClientBackup(t *testing.T) {
	body := bytes.Repeat([]byte("a2ad"), 2048)
	for _, tt := range []struct {
		name string
		src  testkit.Backup
		want string // the error; "" for none
	}{
		{"whole", testkit.Backup{Size: 8192, Body: body}, ""},
		{"fails before it starts", testkit.Backup{Size: -1, Err: errors.New("disk on fire")}, "the server answered 500 Internal Server Error: store backup failed"},
		{"fails half way", testkit.Backup{Size: 8192, Body: body[:4096], Err: errors.New("disk on fire")}, "the download ended after 4096 bytes: unexpected EOF"},
	} {
		c, _ := newClient(t, newServer(admin.Config{Backup: tt.src}))
		var got bytes.Buffer
		n, err := c.Backup(context.Background(), &got)
		switch {
		case tt.want == "" && (err != nil || n != 8192 || !bytes.Equal(got.Bytes(), body)):
			t.Errorf("%s: %d bytes, %v", tt.name, n, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want):
			t.Errorf("%s: %v, want %s", tt.name, err, tt.want)
		}
	}
}

// TestClientUnreachable: a listener that is not there is named.
func TestClientUnreachable(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	base := hs.URL
	hs.Close()
	c, err := admin.NewClient(base)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Tasks(context.Background(), admin.TaskFilter{})
	if err == nil || !strings.HasPrefix(err.Error(), "cannot reach the admin listener at "+base+": ") {
		t.Errorf("Tasks on a closed port: %v", err)
	}
}

// TestClientTextErrors: a refusal in plain text says what is wrong (its
// first line), not a bare status; a plain-HTTP call to a TLS admin
// listener says to use https.
func TestClientTextErrors(t *testing.T) {
	pg := httptest.NewServer(newServer(admin.Config{}).Handler())
	t.Cleanup(pg.Close)
	c, err := admin.NewClient(pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Backup(context.Background(), &bytes.Buffer{})
	var se *admin.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusNotImplemented || !strings.Contains(se.Message, "back it up with pg_dump") {
		t.Errorf("a backup of a PostgreSQL store: %#v, want 501 saying to use pg_dump", err)
	}

	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(tlsSrv.Close)
	c2, err := admin.NewClient(strings.Replace(tlsSrv.URL, "https://", "http://", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_, _, err = c2.Tasks(context.Background(), admin.TaskFilter{})
	if !errors.As(err, &se) || se.Message != "the admin listener speaks TLS (--tls-cert): give the URL as https://..." {
		t.Errorf("plain HTTP to a TLS listener: %v, want the advice to use https", err)
	}
}
