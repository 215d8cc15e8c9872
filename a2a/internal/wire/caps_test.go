package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wiretest"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	v1 "github.com/a2ad/a2ad/a2a/v1"
)

// TestPushConfigCaps: a push config's url, token and credentials are
// capped (issue 13 item 9: 1 MB of each was accepted), in every method of
// both versions that takes one, naming the field.
func TestPushConfigCaps(t *testing.T) {
	url := "https://hooks.example/" + strings.Repeat("u", a2a.MaxPushURLBytes-len("https://hooks.example/"))
	token := strings.Repeat("t", a2a.MaxPushTokenBytes)
	creds := strings.Repeat("c", a2a.MaxPushCredentialsBytes)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	shape03 := func(u, tok, cr string) string {
		return `{"url":` + q(u) + `,"token":` + q(tok) + `,"authentication":{"schemes":["Bearer"],"credentials":` + q(cr) + `}}`
	}
	shape10 := func(u, tok, cr string) string {
		return `"url":` + q(u) + `,"token":` + q(tok) + `,"authentication":{"scheme":"Bearer","credentials":` + q(cr) + `}`
	}
	decoders := []struct {
		name   string
		prefix string // of the fields' paths
		decode func(u, tok, cr string) *a2a.Error
	}{
		{"0.3 set", "/pushNotificationConfig", func(u, tok, cr string) *a2a.Error {
			_, err := v03.DecodePushSet(json.RawMessage(`{"taskId":"t1","pushNotificationConfig":` + shape03(u, tok, cr) + `}`))
			return err
		}},
		{"0.3 send", "/configuration/pushNotificationConfig", func(u, tok, cr string) *a2a.Error {
			_, err := v03.DecodeSendParams(json.RawMessage(wiretest.SendParams03(nil, `"configuration":{"pushNotificationConfig":`+shape03(u, tok, cr)+`}`)))
			return err
		}},
		{"1.0 create", "", func(u, tok, cr string) *a2a.Error {
			_, err := v1.DecodePushCreate(json.RawMessage(`{"taskId":"t1",` + shape10(u, tok, cr) + `}`))
			return err
		}},
		{"1.0 send", "/configuration/taskPushNotificationConfig", func(u, tok, cr string) *a2a.Error {
			_, err := v1.DecodeSendParams(json.RawMessage(wiretest.SendParams10(nil, `"configuration":{"taskPushNotificationConfig":{`+shape10(u, tok, cr)+`}}`)))
			return err
		}},
	}
	for _, d := range decoders {
		t.Run(d.name, func(t *testing.T) {
			if err := d.decode(url, token, creds); err != nil {
				t.Fatalf("at the caps: %v", err)
			}
			wiretest.CheckInvalidParams(t, d.decode(url+"u", token, creds), wiretest.Prob(d.prefix+"/url", "must be at most 2048 bytes"))
			wiretest.CheckInvalidParams(t, d.decode(url, token+"t", creds), wiretest.Prob(d.prefix+"/token", "must be at most 4096 bytes"))
			wiretest.CheckInvalidParams(t, d.decode(url, token, creds+"c"), wiretest.Prob(d.prefix+"/authentication/credentials", "must be at most 4096 bytes"))
			big := strings.Repeat("x", 1<<20) // the attack: a megabyte each
			wiretest.CheckInvalidParams(t, d.decode(url+big, token+big, creds),
				wiretest.Prob(d.prefix+"/url", "must be at most 2048 bytes"), wiretest.Prob(d.prefix+"/token", "must be at most 4096 bytes"))
		})
	}
}
