package wiretest

import (
	"encoding/json"
	"testing"

	"github.com/a2ad/a2ad/a2a"
)

// DataOwned checks that a data part decode returns does not share the
// request's bytes: the bindings give their body buffer back to a pool once
// the handler returns, while the message lives on in the task.
func DataOwned(t *testing.T, body string, decode func(json.RawMessage) (a2a.SendParams, *a2a.Error)) {
	t.Helper()
	raw := []byte(body)
	p, err := decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	var data json.RawMessage
	for _, part := range p.Message.Parts {
		if part.Data != nil {
			data = part.Data
		}
	}
	if data == nil {
		t.Fatal("no data part decoded")
	}
	want := string(data)
	for i := range raw {
		raw[i] = 'x' // the pool hands the buffer to the next request
	}
	if string(data) != want {
		t.Fatalf("the data part changed with the request's buffer: %q, was %q", data, want)
	}
}
