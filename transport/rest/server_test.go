package rest_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/audit"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/transport"
	"github.com/a2ad/a2ad/transport/jsonrpc"
	"github.com/a2ad/a2ad/transport/rest"
	"github.com/a2ad/a2ad/transport/transporttest"
)

const testMaxBody = 1024

// serve starts the main listener's handler with the binding at /a2a/rest
// and fake as the task service; the audit records go to the buffer it
// returns.
func serve(tb testing.TB, fake *transporttest.Service, opts ...func(*jsonrpc.Config)) (*httptest.Server, *testkit.SyncBuffer) {
	tb.Helper()
	fake.TB = tb
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
	rest.Mount(srv.Echo(), "/a2a/rest", srv.Core(), cfg.CORS)
	ts := httptest.NewServer(srv.Handler())
	tb.Cleanup(ts.Close)
	return ts, auditLog
}

// call sends one request and returns the answer's status, headers and
// body.
func call(tb testing.TB, method, url, contentType, body string, header ...string) (int, http.Header, string) {
	tb.Helper()
	resp, b := testkit.RoundTrip(tb, nil, testkit.NewRequest(tb, method, url, contentType, body, header...))
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
