package v03_test

import (
	"testing"

	"github.com/a2ad/a2ad/a2a/internal/wiretest"
	v03 "github.com/a2ad/a2ad/a2a/v03"
)

var benchBody = []byte(`{"jsonrpc":"2.0","id":17,"method":"message/send","params":{"message":{"kind":"message","messageId":"0b7f2c0e-7a8e-4d5e-9c1a-2f3b4c5d6e7f","role":"user","parts":[{"kind":"data","data":{"skill":"demo::echo","input":{"message":"hello"}}}]},"configuration":{"blocking":true}}}`)

// BenchmarkDecodeSend is the request decoding of every message/send: the
// envelope, then the params.
func BenchmarkDecodeSend(b *testing.B) { wiretest.BenchDecodeSend(b, benchBody, v03.DecodeSendParams) }

// BenchmarkEncodeTask is the encoding of a completed echo task, as every
// response and store write does it.
func BenchmarkEncodeTask(b *testing.B) {
	wiretest.BenchEncodeTask(b, benchBody, v03.DecodeSendParams, v03.AppendTask)
}
