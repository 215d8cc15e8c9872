package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/tasks/boltstore"
)

// oldStoreDir holds a store file written by an earlier a2ad, what that
// a2ad answered about it, and how it was made (README.md there).
const oldStoreDir = "testdata/store-17d0fe1"

// oldStore is oldStoreDir's calls.json: the requests that made the store,
// and the old a2ad's answers.
type oldStore struct {
	Commit string `json:"commit"`
	// Secrets are the callers' API keys (of keys.yaml); the anonymous
	// caller is "".
	Secrets map[string]string `json:"secrets"`
	// Sends are the messages the tasks were made and continued with.
	Sends []oldSend `json:"sends"`
	// Reused is a recorded messageId sent with another message.
	Reused oldSend `json:"reused"`
	// Tasks are every task, as tasks/get, GetTask and
	// tasks/pushNotificationConfig/list answered at the end.
	Tasks []oldTask `json:"tasks"`
	// Lists are tasks/list's answers per caller.
	Lists map[string]json.RawMessage `json:"lists"`
}

// oldSend is one request and its answer.
type oldSend struct {
	Caller  string          `json:"caller"`
	Version string          `json:"version,omitempty"` // A2A-Version
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	TaskID  string          `json:"taskId,omitempty"` // the task the message made or continued
	Answer  json.RawMessage `json:"answer,omitempty"` // of Reused
}

type oldTask struct {
	Caller string          `json:"caller"`
	ID     string          `json:"id"`
	Get    json.RawMessage `json:"get"`
	GetV1  json.RawMessage `json:"getV1"`
	Push   json.RawMessage `json:"push"`
}

// oldBackend is the backend of every function of oldStoreDir's catalogue;
// it counts the calls it gets.
type oldBackend struct {
	URL   string
	calls atomic.Int64
}

func newOldBackend(tb testing.TB) *oldBackend {
	tb.Helper()
	b := &oldBackend{}
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(in)
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, `{"a2a.progress":{"message":"writing the report"}}
{"a2a.artifact":{"artifactId":"report","name":"Report","text":"part one, "}}
{"a2a.artifact":{"artifactId":"report","text":"part two","append":true,"lastChunk":true}}
{"a2a.artifact":{"artifactId":"rows","name":"Rows","data":{"rows":[1,2,3],"note":"<&>"}}}
{"done":true}
`)
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, _ *http.Request) {
		answer(w, map[string]any{"a2a.error": "failed on purpose"})
	})
	mux.HandleFunc("/ask", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Answer string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		if in.Answer != "" {
			answer(w, map[string]any{"answer": in.Answer})
			return
		}
		answer(w, map[string]any{"a2a.input_required": map[string]any{"question": "Which colour?"}})
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
		answer(w, map[string]any{"slept": true})
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.calls.Add(1)
		mux.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	b.URL = srv.URL
	return b
}

// oldCall posts one JSON-RPC request as caller (by its secret; "" is
// anonymous), with A2A-Version version ("": none), and returns the
// answer.
func oldCall(tb testing.TB, base, secret, version, method string, params json.RawMessage) json.RawMessage {
	tb.Helper()
	// params go as they are: encoding/json would rewrite their escapes.
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + string(params) + `}`)
	h := http.Header{}
	if secret != "" {
		h.Set("Authorization", "Bearer "+secret)
	}
	if version != "" {
		h.Set("A2A-Version", version)
	}
	resp, out := postRaw(tb, base, body, h)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("%s: HTTP %d %s", method, resp.StatusCode, out)
	}
	return out
}

// sameJSON fails tb unless got and want are the same JSON value.
func sameJSON(tb testing.TB, what string, got, want json.RawMessage) {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		tb.Fatalf("%s: %v: %s", what, err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		tb.Fatalf("%s: recorded answer: %v", what, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		tb.Errorf("%s (-old a2ad +now):\n%s", what, diff)
	}
}

// resultOf is the result of a JSON-RPC answer: the task of a 0.3 answer,
// the "task" of a 1.0 one.
func resultOf(tb testing.TB, answer json.RawMessage) map[string]any {
	tb.Helper()
	var a struct{ Result map[string]any }
	if err := json.Unmarshal(answer, &a); err != nil || a.Result == nil {
		tb.Fatalf("no result: %s", answer)
	}
	if t, ok := a.Result["task"].(map[string]any); ok {
		return t
	}
	return a.Result
}

// TestStoreOfOldA2AD: a store file written by a2ad at commit 17d0fe1 (the
// last before the store owned its record format and tasks its canonical
// hash) opens and checks clean; every task reads as that a2ad answered,
// in both protocol versions; every message it recorded, sent again, is
// the same message: the same task answers and nothing runs; and a
// recorded messageId with another message is refused as reused.
//
// It drives Main, the server a2ad serve runs, in this process: the
// requests go through the real HTTP and JSON-RPC decoding, so the
// idempotency hash of each retry is computed from what the wire decoders
// make of it, as in production. The catalogue's functions all call one
// backend that counts its calls.
func TestStoreOfOldA2AD(t *testing.T) {
	old := readOldStore(t)
	store := filepath.Join(t.TempDir(), "a2ad.db")
	testkit.CopyFile(t, filepath.Join(oldStoreDir, "a2ad.db"), store) // opening writes: keep the committed file as it is
	checkOldStore(t, store)
	serveOldStore(t, &old, store)
}

// serveOldStore serves store (oldStoreDir's tasks, in a file or a
// database) and checks that every task reads as the old a2ad answered,
// every recorded message sent again is the same message, with nothing
// run, and a recorded messageId with another message is reused.
func serveOldStore(t *testing.T, old *oldStore, store string) {
	t.Helper()
	backend := newOldBackend(t)
	t.Setenv("A2AD_OLDSTORE_BACKEND", backend.URL)
	m := startMain(t, func(c *Config) {
		c.Catalog = filepath.Join(oldStoreDir, "catalog.yaml")
		c.Store = store
		c.Keys = filepath.Join(oldStoreDir, "keys.yaml")
		c.AllowAnonymous, c.AnonymousTiers = true, "public"
		c.PushAllow = pushAllowLoopback
		c.Retention = 100 * 365 * 24 * time.Hour // the tasks are as old as the file
	})
	base := "http://" + m.Addr()

	readAll := func(when string) {
		t.Helper()
		for _, task := range old.Tasks {
			secret := old.Secrets[task.Caller]
			id, _ := json.Marshal(map[string]any{"id": task.ID})
			sameJSON(t, when+" tasks/get "+task.ID, oldCall(t, base, secret, "", "tasks/get", id), task.Get)
			sameJSON(t, when+" GetTask "+task.ID, oldCall(t, base, secret, "1.0", "GetTask", id), task.GetV1)
			sameJSON(t, when+" push configs of "+task.ID, oldCall(t, base, secret, "", "tasks/pushNotificationConfig/list", id), task.Push)
		}
		// The old a2ad's pages held the whole history by default; a page
		// now leaves it out unless asked for it (issue 25 item 4).
		for caller, list := range old.Lists {
			sameJSON(t, when+" tasks/list of caller "+caller, oldCall(t, base, old.Secrets[caller], "", "tasks/list", json.RawMessage(`{"history_length":100}`)), list)
		}
	}
	readAll("read")

	// The state of each task, by protocol version ("" is 0.3).
	states := map[string]map[string]any{"": {}, "1.0": {}}
	for _, task := range old.Tasks {
		states[""][task.ID] = resultOf(t, task.Get)["status"].(map[string]any)["state"]
		states["1.0"][task.ID] = resultOf(t, task.GetV1)["status"].(map[string]any)["state"]
	}
	for _, s := range old.Sends {
		got := resultOf(t, oldCall(t, base, old.Secrets[s.Caller], s.Version, s.Method, s.Params))
		if got["id"] != s.TaskID {
			t.Errorf("%s %s sent again: task %v, want %s", s.Caller, s.Params, got["id"], s.TaskID)
		}
		if st, want := got["status"].(map[string]any)["state"], states[s.Version][s.TaskID]; st != want {
			t.Errorf("%s %s sent again: task %s is %v, want %v", s.Caller, s.Params, s.TaskID, st, want)
		}
	}
	r := old.Reused
	sameJSON(t, "a recorded messageId with another message", oldCall(t, base, old.Secrets[r.Caller], r.Version, r.Method, r.Params), r.Answer)
	if n := backend.calls.Load(); n != 0 {
		t.Errorf("the backend got %d calls, want none: a retry ran", n)
	}
	readAll("after the retries,")
}

// readOldStore reads oldStoreDir's calls.json.
func readOldStore(t *testing.T) oldStore {
	t.Helper()
	return testkit.ReadJSON[oldStore](t, filepath.Join(oldStoreDir, "calls.json"))
}

// checkOldStore checks the store file at path as a2ad store check does.
func checkOldStore(t *testing.T, path string) {
	t.Helper()
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() || r.Schema != "6" || r.Tasks == 0 {
		t.Fatalf("store check: schema %q, %d tasks, problems %v", r.Schema, r.Tasks, r.Problems)
	}
}
