package rest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
)

// FuzzRESTCallerIDs puts any bytes, of any length, in the ids the
// HTTP+JSON binding reads from its paths (a task's :cancel and
// :subscribe, a push config's get and delete) and from its bodies (a
// message:send messageId, a push config's id), read as the binding reads
// them (route, pathIDs, sendParams, pushCreateParams): each is refused
// with a -32602 naming the field when too long, or taken within the cap.
func FuzzRESTCallerIDs(f *testing.F) {
	for _, s := range []string{"m", "", strings.Repeat("x", a2a.MaxIDBytes), strings.Repeat("é", a2a.MaxIDBytes/2) + "x",
		strings.Repeat("k", 33<<10), "\x00", "\xff\xfe", "a/b", "a:b", "%zz"} {
		for op := range uint8(6) {
			f.Add(op, s)
		}
	}
	f.Fuzz(func(t *testing.T, op uint8, value string) {
		esc := url.PathEscape(value)
		var (
			e    *a2a.Error
			path string // the field a refusal names
			got  string // the id as read, when taken
		)
		switch op % 6 {
		case 0, 1, 2, 3:
			method, p := http.MethodPost, "/tasks/"+esc+":cancel"
			path = "/id"
			switch op % 6 {
			case 1:
				method, p = http.MethodGet, "/tasks/"+esc+":subscribe"
			case 2:
				method, p, path = http.MethodGet, "/tasks/t1/pushNotificationConfigs/"+esc, "/id"
			case 3:
				method, p, path = http.MethodDelete, "/tasks/"+esc+"/pushNotificationConfigs/c1", "/taskId"
			}
			tg, rerr := route(method, p)
			if rerr != nil {
				return // a path that names no operation: 404 or 405
			}
			e = pathIDs(tg)
			got = tg.taskID
			if op%6 == 2 {
				got = tg.configID
			}
		default:
			// The id as JSON carries it (invalid UTF-8 becomes U+FFFD).
			b, _ := json.Marshal(value)
			_ = json.Unmarshal(b, &got)
			var read string
			if op%6 == 4 {
				path = "/message/messageId"
				var p a2a.SendParams
				p, e = sendParams([]byte(`{"message":{"messageId":` + string(b) + `,"role":"ROLE_USER","parts":[{"text":"hi"}]}}`))
				read = p.Message.MessageID
			} else {
				path = "/id"
				var p a2a.PushConfigParams
				p, e = pushCreateParams([]byte(`{"id":`+string(b)+`,"url":"https://127.0.0.1:9/a"}`), "t1")
				read = p.Config.ID
			}
			if e == nil && read != got {
				t.Fatalf("op %d: the id %q read as %q", op%6, got, read)
			}
		}
		if e != nil {
			if e.Code != a2a.CodeInvalidParams || !strings.HasPrefix(e.Message, "Invalid parameters: /") {
				t.Fatalf("op %d, %q: %d %q, want a located -32602", op%6, value, e.Code, e.Message)
			}
			if len(got) > a2a.MaxIDBytes && !strings.HasPrefix(e.Message, "Invalid parameters: "+path+": must be at most 256 bytes") {
				t.Fatalf("op %d, an id of %d bytes: %q, want %s named", op%6, len(got), e.Message, path)
			}
			return
		}
		if len(got) > a2a.MaxIDBytes {
			t.Fatalf("op %d: an id of %d bytes taken", op%6, len(got))
		}
	})
}
