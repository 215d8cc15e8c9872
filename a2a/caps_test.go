package a2a_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
)

// TestPushConfigCaps: a push config's url, token and credentials are
// capped (issue 13 item 9: 1 MB of each was accepted), in every method of
// both versions that takes one, naming the field.
func TestPushConfigCaps(t *testing.T) {
	url := "https://hooks.example/" + strings.Repeat("u", a2a.MaxPushURLBytes-len("https://hooks.example/"))
	token := strings.Repeat("t", a2a.MaxPushTokenBytes)
	creds := strings.Repeat("c", a2a.MaxPushCredentialsBytes)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	v03 := func(u, tok, cr string) string {
		return `{"url":` + q(u) + `,"token":` + q(tok) + `,"authentication":{"schemes":["Bearer"],"credentials":` + q(cr) + `}}`
	}
	v10 := func(u, tok, cr string) string {
		return `"url":` + q(u) + `,"token":` + q(tok) + `,"authentication":{"scheme":"Bearer","credentials":` + q(cr) + `}`
	}
	decoders := []struct {
		name   string
		prefix string // of the fields' paths
		decode func(u, tok, cr string) *a2a.Error
	}{
		{"0.3 set", "/pushNotificationConfig", func(u, tok, cr string) *a2a.Error {
			_, err := a2a.DecodePushSet(json.RawMessage(`{"taskId":"t1","pushNotificationConfig":` + v03(u, tok, cr) + `}`))
			return err
		}},
		{"0.3 send", "/configuration/pushNotificationConfig", func(u, tok, cr string) *a2a.Error {
			_, err := a2a.DecodeSendParams(json.RawMessage(sendParams(nil, `"configuration":{"pushNotificationConfig":`+v03(u, tok, cr)+`}`)))
			return err
		}},
		{"1.0 create", "", func(u, tok, cr string) *a2a.Error {
			_, err := a2a.DecodePushCreateV1(json.RawMessage(`{"taskId":"t1",` + v10(u, tok, cr) + `}`))
			return err
		}},
		{"1.0 send", "/configuration/taskPushNotificationConfig", func(u, tok, cr string) *a2a.Error {
			_, err := a2a.DecodeSendParamsV1(json.RawMessage(sendParamsV1(nil, `"configuration":{"taskPushNotificationConfig":{`+v10(u, tok, cr)+`}}`)))
			return err
		}},
	}
	for _, d := range decoders {
		t.Run(d.name, func(t *testing.T) {
			if err := d.decode(url, token, creds); err != nil {
				t.Fatalf("at the caps: %v", err)
			}
			checkInvalidParams(t, d.decode(url+"u", token, creds), prob(d.prefix+"/url", "must be at most 2048 bytes"))
			checkInvalidParams(t, d.decode(url, token+"t", creds), prob(d.prefix+"/token", "must be at most 4096 bytes"))
			checkInvalidParams(t, d.decode(url, token, creds+"c"), prob(d.prefix+"/authentication/credentials", "must be at most 4096 bytes"))
			big := strings.Repeat("x", 1<<20) // the attack: a megabyte each
			checkInvalidParams(t, d.decode(url+big, token+big, creds),
				prob(d.prefix+"/url", "must be at most 2048 bytes"), prob(d.prefix+"/token", "must be at most 4096 bytes"))
		})
	}
}

// TestDecodeSendParamsBase64: 0.3 file bytes are base64, read as 1.0's
// raw is (issue 13 item 9: 0.3 stored bytes that were not, and handed them
// to 1.0 clients).
func TestDecodeSendParamsBase64(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"aGk=", "aGk="},
		{"aGk", "aGk="},
		{"-_8", "+/8="},
	} {
		p, err := a2a.DecodeSendParams(json.RawMessage(withParts(`[{"kind":"file","file":{"bytes":"` + tc.in + `"}}]`)))
		if err != nil {
			t.Errorf("bytes %q: %v", tc.in, err)
			continue
		}
		if got := p.Message.Parts[0].File.Bytes; got != tc.want {
			t.Errorf("bytes %q: Bytes = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"a", "aGk==", "a=Gk", "a b", "é", "not base64!"} {
		_, err := a2a.DecodeSendParams(json.RawMessage(withParts(`[{"kind":"file","file":{"bytes":"` + bad + `"}}]`)))
		checkInvalidParams(t, err, prob("/message/parts/0/file/bytes", "must be base64"))
	}
}
