package v1_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wiretest"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	v1 "github.com/a2ad/a2ad/a2a/v1"
)

// nameList is n copies of a name of size bytes, as a JSON array.
func nameList(n, size int) string {
	b, _ := json.Marshal(strings.Split(strings.Repeat(strings.Repeat("n", size)+",", n)[:n*(size+1)-1], ","))
	return string(b)
}

// TestNameListCaps: the lists of names a caller sends are capped in
// count and in each name's length, in every decoder of both versions
// (issue 25 item 4: ten 900 KB scheme lists made each read of their task
// take 100 ms): a push config's schemes (8 of at most 64 bytes; 1.0's
// single scheme at most 64 bytes), a message's extensions and a send's
// acceptedOutputModes (32 of at most 256 bytes). -32602 names the field.
func TestNameListCaps(t *testing.T) {
	cases := []struct {
		name, path string
		n, size    int
		decode     func(list string) *a2a.Error
	}{
		{"0.3 set schemes", "/pushNotificationConfig/authentication/schemes", a2a.MaxPushSchemes, a2a.MaxPushSchemeBytes, func(l string) *a2a.Error {
			_, e := v03.DecodePushSet(json.RawMessage(`{"taskId":"t1","pushNotificationConfig":{"url":"https://h.example/","authentication":{"schemes":` + l + `}}}`))
			return e
		}},
		{"0.3 send schemes", "/configuration/pushNotificationConfig/authentication/schemes", a2a.MaxPushSchemes, a2a.MaxPushSchemeBytes, func(l string) *a2a.Error {
			_, e := v03.DecodeSendParams(json.RawMessage(wiretest.SendParams03(nil, `"configuration":{"pushNotificationConfig":{"url":"https://h.example/","authentication":{"schemes":`+l+`}}}`)))
			return e
		}},
		{"0.3 extensions", "/message/extensions", a2a.MaxListNames, a2a.MaxNameBytes, func(l string) *a2a.Error {
			_, e := v03.DecodeSendParams(json.RawMessage(`{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}],"extensions":` + l + `}}`))
			return e
		}},
		{"0.3 acceptedOutputModes", "/configuration/acceptedOutputModes", a2a.MaxListNames, a2a.MaxNameBytes, func(l string) *a2a.Error {
			_, e := v03.DecodeSendParams(json.RawMessage(wiretest.SendParams03(nil, `"configuration":{"acceptedOutputModes":`+l+`}`)))
			return e
		}},
		{"1.0 extensions", "/message/extensions", a2a.MaxListNames, a2a.MaxNameBytes, func(l string) *a2a.Error {
			_, e := v1.DecodeSendParams(json.RawMessage(wiretest.SendParams10(map[string]string{"extensions": l}, "")))
			return e
		}},
		{"1.0 acceptedOutputModes", "/configuration/acceptedOutputModes", a2a.MaxListNames, a2a.MaxNameBytes, func(l string) *a2a.Error {
			_, e := v1.DecodeSendParams(json.RawMessage(wiretest.SendParams10(nil, `"configuration":{"acceptedOutputModes":`+l+`}`)))
			return e
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.decode(nameList(tc.n, tc.size)); err != nil {
				t.Fatalf("at the caps: %v", err)
			}
			wiretest.CheckInvalidParams(t, tc.decode(nameList(tc.n+1, 1)), wiretest.Prob(tc.path, "must have at most "+itoa(tc.n)+" elements"))
			wiretest.CheckInvalidParams(t, tc.decode(nameList(tc.n, tc.size+1)), wiretest.Prob(tc.path+"/0", "must be at most "+itoa(tc.size)+" bytes"))
			wiretest.CheckInvalidParams(t, tc.decode(nameList(10000, 1)), wiretest.Prob(tc.path, "must have at most "+itoa(tc.n)+" elements"))
		})
	}
	t.Run("1.0 scheme", func(t *testing.T) {
		create := func(s string) *a2a.Error {
			_, e := v1.DecodePushCreate(json.RawMessage(`{"taskId":"t1","url":"https://h.example/","authentication":{"scheme":"` + s + `"}}`))
			return e
		}
		if err := create(strings.Repeat("s", a2a.MaxPushSchemeBytes)); err != nil {
			t.Fatalf("at the cap: %v", err)
		}
		wiretest.CheckInvalidParams(t, create(strings.Repeat("s", a2a.MaxPushSchemeBytes+1)), wiretest.Prob("/authentication/scheme", "must be at most 64 bytes"))
	})
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
