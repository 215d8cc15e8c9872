package v1_test

import (
	"encoding/json"
	"testing"

	"github.com/a2ad/a2ad/a2a/internal/wiretest"
	v1 "github.com/a2ad/a2ad/a2a/v1"
)

var benchBodyV1 = []byte(`{"jsonrpc":"2.0","id":17,"method":"SendMessage","params":{"message":{"messageId":"0b7f2c0e-7a8e-4d5e-9c1a-2f3b4c5d6e7f","role":"ROLE_USER","parts":[{"data":{"skill":"demo::echo","input":{"message":"hello"}}}]},"configuration":{"returnImmediately":false}}}`)

// BenchmarkDecodeSendV1 is BenchmarkDecodeSend for a 1.0 SendMessage.
func BenchmarkDecodeSendV1(b *testing.B) {
	wiretest.BenchDecodeSend(b, benchBodyV1, v1.DecodeSendParams)
}

// BenchmarkEncodeTaskV1 is BenchmarkEncodeTask in the 1.0 form.
func BenchmarkEncodeTaskV1(b *testing.B) {
	wiretest.BenchEncodeTask(b, benchBodyV1, v1.DecodeSendParams, v1.AppendTask)
}

// BenchmarkSendResponseV1 is a whole 1.0 SendMessage response:
// {"jsonrpc":…,"result":{"task":…}}.
func BenchmarkSendResponseV1(b *testing.B) {
	task := wiretest.BenchTask(b, benchBodyV1, v1.DecodeSendParams)
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
