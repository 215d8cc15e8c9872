package functions_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/functions"
)

var testCall = functions.Call{
	IdempotencyKey: "0123456789abcdef0123456789abcdef",
	TaskID:         "task-1",
	ContextID:      "ctx-1",
	Caller:         "acme",
	Attempt:        2,
}

// TestHTTPBackend_CallHeaders: the call in the context goes as headers,
// over a catalogue header of the same name; Accept names ndjson.
func TestHTTPBackend_CallHeaders(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	b := &functions.HTTPBackend{URL: srv.URL, Headers: map[string]string{"A2A-Attempt": "99", "X-Kept": "yes"}}
	if _, err := b.Invoke(functions.WithCall(context.Background(), testCall), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Idempotency-Key": testCall.IdempotencyKey,
		"A2A-Task-Id":     "task-1",
		"A2A-Context-Id":  "ctx-1",
		"A2A-Caller":      "acme",
		"A2A-Attempt":     "2",
		"X-Kept":          "yes",
		"Accept":          "application/json, application/x-ndjson",
	}
	for name, v := range want {
		if g := got.Get(name); g != v {
			t.Errorf("%s = %q, want %q", name, g, v)
		}
	}

	// The anonymous caller: no A2A-Caller; no call at all: none of them.
	anon := testCall
	anon.Caller = ""
	if _, err := b.Invoke(functions.WithCall(context.Background(), anon), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if v, ok := got["A2a-Caller"]; ok {
		t.Errorf("anonymous call sent A2A-Caller %q", v)
	}
	if _, err := b.Invoke(context.Background(), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if v := got.Get("Idempotency-Key"); v != "" {
		t.Errorf("a call without context sent Idempotency-Key %q", v)
	}
}

// TestExecBackend_CallEnvironment: the call in the context goes as
// environment variables, over the catalogue's env.
func TestExecBackend_CallEnvironment(t *testing.T) {
	b := &functions.ExecBackend{
		Argv: []string{"/bin/sh", "-c", `cat >/dev/null; printf '{"key":"%s","task":"%s","ctx":"%s","caller":"%s","attempt":"%s"}' ` +
			`"$A2AD_IDEMPOTENCY_KEY" "$A2AD_TASK_ID" "$A2AD_CONTEXT_ID" "$A2AD_CALLER" "$A2AD_ATTEMPT"`},
		Env: []string{"A2AD_ATTEMPT=99"},
	}
	res, err := b.Invoke(functions.WithCall(context.Background(), testCall), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]string
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"key": testCall.IdempotencyKey, "task": "task-1", "ctx": "ctx-1", "caller": "acme", "attempt": "2"}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("environment (-want +got):\n%s", diff)
	}
}
