package v1_test

import (
	"encoding/json"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wiretest"
	v1 "github.com/a2ad/a2ad/a2a/v1"
)

var benchBodyV1 = []byte(`{"jsonrpc":"2.0","id":17,"method":"SendMessage","params":{"message":{"messageId":"0b7f2c0e-7a8e-4d5e-9c1a-2f3b4c5d6e7f","role":"ROLE_USER","parts":[{"data":{"skill":"demo::echo","input":{"message":"hello"}}}]},"configuration":{"returnImmediately":false}}}`)

// BenchmarkDecodeSendV1 is BenchmarkDecodeSend for a 1.0 SendMessage.
func BenchmarkDecodeSendV1(b *testing.B) {
	wiretest.BenchDecodeSend(b, benchBodyV1, v1.DecodeSendParams)
}

// benchTask is the completed echo task of v03's BenchmarkEncodeTask.
func benchTask(tb testing.TB) a2a.Task {
	req, _ := a2a.ParseRequest(benchBodyV1)
	p, err := v1.DecodeSendParams(req.Params)
	if err != nil {
		tb.Fatal(err)
	}
	return a2a.Task{
		ID: "0196f3a2-7b1c-7d2e-8f3a-4b5c6d7e8f90", ContextID: "0196f3a2-7b1c-7d2e-8f3a-4b5c6d7e8f91",
		Status:    a2a.TaskStatus{State: a2a.StateCompleted, Timestamp: "2026-11-22T15:00:00.000Z"},
		History:   []a2a.Message{p.Message},
		Artifacts: []a2a.Artifact{{ArtifactID: "a", Name: "demo::echo", Parts: []a2a.Part{a2a.DataPart([]byte(`{"message":"hello"}`))}}},
	}
}

// BenchmarkEncodeTaskV1 is BenchmarkEncodeTask in the 1.0 form.
func BenchmarkEncodeTaskV1(b *testing.B) {
	task := benchTask(b)
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = v1.AppendTask(buf[:0], &task); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendResponseV1 is a whole 1.0 SendMessage response:
// {"jsonrpc":…,"result":{"task":…}}.
func BenchmarkSendResponseV1(b *testing.B) {
	task := benchTask(b)
	id := json.RawMessage(`17`)
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = v1.AppendResult(buf[:0], id, &v1.StreamResponse{Task: &task}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkErrorV1 is a 1.0 answer to bad params.
func BenchmarkErrorV1(b *testing.B) {
	_, perr := v1.DecodeSendParams(json.RawMessage(`{"message":{"messageId":"","role":"user","parts":[]}}`))
	if perr == nil {
		b.Fatal("no error")
	}
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = v1.AppendError(buf[:0], json.RawMessage(`17`), perr)
	}
}
