package admin_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
)

// fakeInspector is an inspector whose answers the test sets.
type fakeInspector struct {
	overview    func() (*tasks.Overview, error)
	tasks       func(q tasks.TaskQuery, after string, limit int) (*tasks.TaskPage, error)
	task        func(id string) (*tasks.Record, []tasks.Event, error)
	deadLetters func(after uint64, limit int) ([]tasks.DeadLetter, bool, error)
}

var _ tasks.Inspector = (*fakeInspector)(nil)

func (f *fakeInspector) Overview(context.Context) (*tasks.Overview, error) { return f.overview() }
func (f *fakeInspector) Tasks(_ context.Context, q tasks.TaskQuery, after string, limit int) (*tasks.TaskPage, error) {
	return f.tasks(q, after, limit)
}
func (f *fakeInspector) Task(_ context.Context, id string) (*tasks.Record, []tasks.Event, error) {
	return f.task(id)
}
func (f *fakeInspector) DeadLetters(_ context.Context, after uint64, limit int) ([]tasks.DeadLetter, bool, error) {
	return f.deadLetters(after, limit)
}

// fakeOutbox is a push outbox whose depth the test sets.
type fakeOutbox struct {
	depth int
}

func (f *fakeOutbox) OutboxDepth(context.Context) (int, error) { return f.depth, nil }

// testkit.Backup stands in for the store's copies.
var _ admin.BackupSource = testkit.Backup{}

// fakeCanceler is a task service whose cancel the test sets.
type fakeCanceler func(owner tasks.Caller, id string) (*a2a.Task, error)

func (f fakeCanceler) CancelByOperator(_ context.Context, owner tasks.Caller, id string) (*a2a.Task, error) {
	return f(owner, id)
}

// fakeReloader answers a reload with its report and error.
type fakeReloader struct {
	report *admin.ReloadReport
	err    error
}

func (f fakeReloader) Reload() (*admin.ReloadReport, error) { return f.report, f.err }

// testStart is the start time of the servers of these tests.
var testStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newServer builds an admin server on cfg's fakes; fields left zero get
// defaults that fail the test if used (nil interfaces panic).
func newServer(cfg admin.Config) *admin.Server {
	if cfg.NotReady == nil {
		cfg.NotReady = func() string { return "" }
	}
	if cfg.Catalog == nil {
		cfg.Catalog = func() *functions.Catalog { return nil }
	}
	if cfg.Keys == nil {
		cfg.Keys = func() *int { return nil }
	}
	if cfg.Metrics == nil {
		cfg.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "# metrics\n") })
	}
	if cfg.StateCountLimit == 0 {
		cfg.StateCountLimit = 10
	}
	if cfg.StorePath == "" {
		cfg.StorePath = "/var/lib/a2ad/a2ad.db"
	}
	if cfg.Version == "" {
		cfg.Version = "1.2.3"
	}
	if cfg.StartedAt.IsZero() {
		cfg.StartedAt = testStart
		cfg.Now = func() time.Time { return testStart.Add(90*time.Second + 999*time.Millisecond) }
	}
	cfg.Logger = zerolog.Nop()
	return admin.New(cfg)
}

// serve answers one request from a loopback caller to a loopback host,
// as the CLI sends it, and returns the status and the trimmed body.
func serve(tb testing.TB, s *admin.Server, method, path string) (int, string) {
	tb.Helper()
	req := httptest.NewRequest(method, "http://127.0.0.1:8081"+path, nil)
	req.RemoteAddr = "127.0.0.1:4242"
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec.Code, strings.TrimSpace(rec.Body.String())
}
