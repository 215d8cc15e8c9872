package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestLargeAnswersWrittenWhileMade (issue 25 item 4): on the real
// binary, answers carrying a task of about 1.8 MB (a 900 KB input in its
// history, echoed in its artifact), or a page holding it, which a2ad
// writes while it makes them (in pieces of transport.SpillBytes; the
// pieces themselves are pinned in transport/rest's
// TestLargeAnswersWrittenInPieces), arrive whole: one JSON document with
// the input's bytes, over JSON-RPC in both versions and HTTP+JSON, for
// send, get and list. A small answer (a few hundred bytes) is still
// written whole, with its Content-Length.
func TestLargeAnswersWrittenWhileMade(t *testing.T) {
	skipShort(t, "runs the real binary")
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.yaml")
	key := mustAppendKey(t, keys, "acme", "partner")
	p := startBinary(t, exampleCatalog, filepath.Join(dir, "a2ad.db"), "--keys", keys, "--rate-bytes", "0")
	h := http.Header{"Authorization": {"Bearer " + key}}
	h1 := http.Header{"Authorization": {"Bearer " + key}, "A2A-Version": {"1.0"}}
	big := strings.Repeat("x", 900_000)

	// checked reads an answer's document and what it says of its writing.
	checked := func(name string, resp *http.Response, body []byte, large bool) map[string]any {
		t.Helper()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d: %.300s", name, resp.StatusCode, body)
		}
		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("%s: the answer (%d bytes) is not one JSON document: %v", name, len(body), err)
		}
		if !large && resp.ContentLength != int64(len(body)) {
			t.Errorf("%s: Content-Length %d of a small answer of %d bytes", name, resp.ContentLength, len(body))
		}
		if n := bytes.Count(body, []byte("x")); large && n < len(big) {
			t.Errorf("%s: %d of the input's %d x's in the answer", name, n, len(big))
		}
		return doc
	}
	resp, body := postRaw(t, p.base, rpcBody("message/send", sendParams("big-1", "demo::echo", map[string]any{"message": big}, true)), h)
	id := resultTask(t, checked("message/send", resp, body, true))["id"].(string)
	resp, body = postRaw(t, p.base, rpcBody("message/send", sendParams("small-1", "demo::echo", map[string]any{"message": "hi"}, true)), h)
	small := resultTask(t, checked("small message/send", resp, body, false))["id"].(string)

	for _, c := range []struct {
		name, method string
		params       map[string]any
		h            http.Header
	}{
		{"tasks/get", "tasks/get", map[string]any{"id": id}, h},
		{"GetTask", "GetTask", map[string]any{"id": id}, h1},
		{"tasks/list", "tasks/list", map[string]any{"history_length": 10}, h},
		{"ListTasks", "ListTasks", map[string]any{"historyLength": 10, "includeArtifacts": true}, h1},
		{"tasks/cancel", "tasks/cancel", map[string]any{"id": id}, h},
	} {
		resp, body := postRaw(t, p.base, rpcBody(c.method, c.params), c.h)
		if c.method == "tasks/cancel" {
			// A completed task cannot be canceled: the error is small
			// and written whole.
			checked(c.name, resp, body, false)
			continue
		}
		doc := checked(c.name, resp, body, true)
		if _, ok := doc["result"]; !ok {
			t.Errorf("%s: no result: %.300s", c.name, body)
		}
		resp, body = postRaw(t, p.base, rpcBody(c.method, map[string]any{"id": small}), c.h)
		if strings.HasSuffix(c.method, "get") || c.method == "GetTask" {
			checked("small "+c.name, resp, body, false)
		}
	}
	for _, path := range []string{"/a2a/rest/tasks/" + id, "/a2a/rest/tasks?includeArtifacts=true&historyLength=10"} {
		req, _ := http.NewRequest(http.MethodGet, p.base+path, nil)
		req.Header = h.Clone()
		resp, body := doRead(t, req)
		checked("GET "+path, resp, body, true)
	}
	req, _ := http.NewRequest(http.MethodGet, p.base+"/a2a/rest/tasks/"+small, nil)
	req.Header = h.Clone()
	resp, body = doRead(t, req)
	checked("GET small", resp, body, false)
}

// doRead does req and reads its answer whole.
func doRead(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return resp, b.Bytes()
}
