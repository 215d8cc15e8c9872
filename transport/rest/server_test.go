package rest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/audit"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/jsonrpc"
	"github.com/a2ad/a2ad/transport/rest"
)

// Service is a fake of the task service's parts the binding calls. A
// method whose function is unset fails the test that calls it.
type Service struct {
	tb       testing.TB
	SendFn   func(p a2a.SendParams) (*a2a.Task, error)
	GetFn    func(id string, historyLength *int) (*a2a.Task, error)
	CancelFn func(id string) (*a2a.Task, error)
	ListFn   func(q tasks.ListQuery) (tasks.ListPage, error)
	WatchFn  func(id string, after *uint64, emit func(tasks.StreamEvent) error) error
	SetFn    func(taskID string, cfg a2a.PushConfig) (*a2a.TaskPushConfig, error)
}

var (
	_ transport.TaskService   = (*Service)(nil)
	_ transport.Lister        = (*Service)(nil)
	_ transport.StreamService = (*Service)(nil)
	_ transport.PushService   = (*Service)(nil)
)

var errUnexpected = errors.New("fake: unexpected call")

func (s *Service) unexpected(what string) error {
	s.tb.Errorf("unexpected call to %s", what)
	return errUnexpected
}

func (s *Service) Send(_ context.Context, _ tasks.Caller, p a2a.SendParams) (*a2a.Task, tasks.Outcome, error) {
	if s.SendFn == nil {
		return nil, tasks.Outcome{}, s.unexpected("Send")
	}
	t, err := s.SendFn(p)
	return t, tasks.Outcome{}, err
}

func (s *Service) Get(_ context.Context, _ tasks.Caller, id string, h *int) (*a2a.Task, error) {
	if s.GetFn == nil {
		return nil, s.unexpected("Get")
	}
	return s.GetFn(id, h)
}

func (s *Service) Cancel(_ context.Context, _ tasks.Caller, id string) (*a2a.Task, error) {
	if s.CancelFn == nil {
		return nil, s.unexpected("Cancel")
	}
	return s.CancelFn(id)
}

func (s *Service) List(_ context.Context, _ tasks.Caller, q tasks.ListQuery) (tasks.ListPage, error) {
	if s.ListFn == nil {
		return tasks.ListPage{}, s.unexpected("List")
	}
	return s.ListFn(q)
}

func (s *Service) Stream(context.Context, tasks.Caller, a2a.SendParams, *uint64, func(tasks.StreamEvent) error) (tasks.Outcome, error) {
	return tasks.Outcome{}, s.unexpected("Stream")
}

func (s *Service) Watch(_ context.Context, _ tasks.Caller, id string, after *uint64, emit func(tasks.StreamEvent) error) error {
	if s.WatchFn == nil {
		return s.unexpected("Watch")
	}
	return s.WatchFn(id, after, emit)
}

func (s *Service) SetPushConfig(_ context.Context, _ tasks.Caller, taskID string, cfg a2a.PushConfig) (*a2a.TaskPushConfig, error) {
	if s.SetFn == nil {
		return nil, s.unexpected("SetPushConfig")
	}
	return s.SetFn(taskID, cfg)
}

func (s *Service) PushConfig(context.Context, tasks.Caller, string, string) (*a2a.TaskPushConfig, error) {
	return nil, tasks.ErrPushConfigNotFound
}

func (s *Service) PushConfigList(context.Context, tasks.Caller, string) ([]a2a.TaskPushConfig, error) {
	return nil, nil
}

func (s *Service) DeletePushConfig(context.Context, tasks.Caller, string, string) error { return nil }

const testMaxBody = 1024

// serve starts the main listener's handler with the binding at /a2a/rest
// and fake as the task service; the audit records go to the buffer it
// returns.
func serve(tb testing.TB, fake *Service, opts ...func(*jsonrpc.Config)) (*httptest.Server, *testkit.SyncBuffer) {
	tb.Helper()
	fake.tb = tb
	auditLog := &testkit.SyncBuffer{}
	cfg := jsonrpc.Config{
		Config: transport.Config{Tasks: fake, Lister: fake, Streams: fake, Push: fake, MaxBodyBytes: testMaxBody,
			Audit: audit.Logger(zerolog.New(auditLog)), KeepAlive: -1},
		Card: func() transport.Card { return transport.Card{JSON: []byte(`{}`), ETag: `"x"`} },
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv := jsonrpc.New(cfg)
	rest.Mount(srv.Echo(), "/a2a/rest", srv.Core())
	ts := httptest.NewServer(srv.Handler())
	tb.Cleanup(ts.Close)
	return ts, auditLog
}

// call sends one request and returns the answer's status, headers and
// body.
func call(tb testing.TB, method, url, contentType, body string, header ...string) (int, http.Header, string) {
	tb.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func task(id string, state a2a.TaskState) *a2a.Task {
	return &a2a.Task{ID: id, ContextID: "c-" + id, Status: a2a.TaskStatus{State: state, Timestamp: "2026-01-02T03:04:05.006Z"}}
}

const (
	notFound = `{"error":{"code":404,"status":"NOT_FOUND","message":"Task not found","details":[` +
		`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}}`
	completedT1 = `{"id":"t1","contextId":"c-t1","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-01-02T03:04:05.006Z"}}`
)
