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

// idCapCase is one identifier a caller chooses, in one decoder: params
// builds the decoder's params around id (a JSON string), and path is the
// field the refusal names.
type idCapCase struct {
	name   string
	path   string
	decode func(id string) *a2a.Error
}

// idCapCases lists every identifier a caller chooses, in every decoder of
// both versions that reads one: the ids of messages, tasks, contexts and
// push configs, and the keys of metadata objects.
func idCapCases() []idCapCase {
	msg03 := func(members string) string {
		return `{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]` + members + `}}`
	}
	msg10 := func(members string) string {
		return `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]` + members + `}}`
	}
	send03 := func(params string) *a2a.Error { _, e := v03.DecodeSendParams(json.RawMessage(params)); return e }
	send10 := func(params string) *a2a.Error { _, e := v1.DecodeSendParams(json.RawMessage(params)); return e }
	key := func(id string) string { return `{` + id + `:1}` }
	cases := []idCapCase{
		{"0.3 send messageId", "/message/messageId", func(id string) *a2a.Error {
			return send03(`{"message":{"kind":"message","messageId":` + id + `,"role":"user","parts":[{"kind":"text","text":"hi"}]}}`)
		}},
		{"0.3 send contextId", "/message/contextId", func(id string) *a2a.Error { return send03(msg03(`,"contextId":` + id)) }},
		{"0.3 send taskId", "/message/taskId", func(id string) *a2a.Error { return send03(msg03(`,"taskId":` + id)) }},
		{"0.3 send referenceTaskIds", "/message/referenceTaskIds/1", func(id string) *a2a.Error {
			return send03(msg03(`,"referenceTaskIds":["t0",` + id + `]`))
		}},
		{"0.3 send message metadata", "/message/metadata", func(id string) *a2a.Error { return send03(msg03(`,"metadata":` + key(id))) }},
		{"0.3 send part metadata", "/message/parts/0/metadata", func(id string) *a2a.Error {
			return send03(`{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi","metadata":` + key(id) + `}]}}`)
		}},
		{"0.3 send metadata", "/metadata", func(id string) *a2a.Error {
			return send03(msg03("")[:len(msg03(""))-1] + `,"metadata":` + key(id) + `}`)
		}},
		{"0.3 send push config id", "/configuration/pushNotificationConfig/id", func(id string) *a2a.Error {
			return send03(msg03("")[:len(msg03(""))-1] + `,"configuration":{"pushNotificationConfig":{"id":` + id + `,"url":"https://x"}}}`)
		}},
		{"0.3 get id", "/id", func(id string) *a2a.Error {
			_, e := v03.DecodeTaskQuery(json.RawMessage(`{"id":` + id + `}`))
			return e
		}},
		{"0.3 cancel id", "/id", func(id string) *a2a.Error {
			_, e := v03.DecodeTaskIDParams(json.RawMessage(`{"id":` + id + `}`))
			return e
		}},
		{"0.3 cancel metadata", "/metadata", func(id string) *a2a.Error {
			_, e := v03.DecodeTaskIDParams(json.RawMessage(`{"id":"t1","metadata":` + key(id) + `}`))
			return e
		}},
		{"0.3 push set taskId", "/taskId", func(id string) *a2a.Error {
			_, e := v03.DecodePushSet(json.RawMessage(`{"taskId":` + id + `,"pushNotificationConfig":{"url":"https://x"}}`))
			return e
		}},
		{"0.3 push set id", "/pushNotificationConfig/id", func(id string) *a2a.Error {
			_, e := v03.DecodePushSet(json.RawMessage(`{"taskId":"t1","pushNotificationConfig":{"id":` + id + `,"url":"https://x"}}`))
			return e
		}},
		{"0.3 push get id", "/id", func(id string) *a2a.Error {
			_, e := v03.DecodePushRef(json.RawMessage(`{"id":`+id+`,"pushNotificationConfigId":"c1"}`), true)
			return e
		}},
		{"0.3 push get config id", "/pushNotificationConfigId", func(id string) *a2a.Error {
			_, e := v03.DecodePushRef(json.RawMessage(`{"id":"t1","pushNotificationConfigId":`+id+`}`), true)
			return e
		}},
		{"0.3 list context_id", "/context_id", func(id string) *a2a.Error {
			_, e := v03.DecodeListTasks(json.RawMessage(`{"context_id":` + id + `}`))
			return e
		}},
		{"1.0 send messageId", "/message/messageId", func(id string) *a2a.Error {
			return send10(`{"message":{"messageId":` + id + `,"role":"ROLE_USER","parts":[{"text":"hi"}]}}`)
		}},
		{"1.0 send contextId", "/message/contextId", func(id string) *a2a.Error { return send10(msg10(`,"contextId":` + id)) }},
		{"1.0 send context_id", "/message/contextId", func(id string) *a2a.Error { return send10(msg10(`,"context_id":` + id)) }},
		{"1.0 send taskId", "/message/taskId", func(id string) *a2a.Error { return send10(msg10(`,"taskId":` + id)) }},
		{"1.0 send referenceTaskIds", "/message/referenceTaskIds/1", func(id string) *a2a.Error {
			return send10(msg10(`,"reference_task_ids":["t0",` + id + `]`))
		}},
		{"1.0 send message metadata", "/message/metadata", func(id string) *a2a.Error { return send10(msg10(`,"metadata":` + key(id))) }},
		{"1.0 send part metadata", "/message/parts/0/metadata", func(id string) *a2a.Error {
			return send10(`{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi","metadata":` + key(id) + `}]}}`)
		}},
		{"1.0 send metadata", "/metadata", func(id string) *a2a.Error {
			return send10(msg10("")[:len(msg10(""))-1] + `,"metadata":` + key(id) + `}`)
		}},
		{"1.0 send push config id", "/configuration/taskPushNotificationConfig/id", func(id string) *a2a.Error {
			return send10(msg10("")[:len(msg10(""))-1] + `,"configuration":{"taskPushNotificationConfig":{"id":` + id + `,"url":"https://x"}}}`)
		}},
		{"1.0 get id", "/id", func(id string) *a2a.Error { _, e := v1.DecodeTaskQuery(json.RawMessage(`{"id":` + id + `}`)); return e }},
		{"1.0 cancel id", "/id", func(id string) *a2a.Error {
			_, e := v1.DecodeTaskIDParams(json.RawMessage(`{"id":` + id + `}`))
			return e
		}},
		{"1.0 cancel metadata", "/metadata", func(id string) *a2a.Error {
			_, e := v1.DecodeTaskIDParams(json.RawMessage(`{"id":"t1","metadata":` + key(id) + `}`))
			return e
		}},
		{"1.0 push create taskId", "/taskId", func(id string) *a2a.Error {
			_, e := v1.DecodePushCreate(json.RawMessage(`{"taskId":` + id + `,"url":"https://x"}`))
			return e
		}},
		{"1.0 push create id", "/id", func(id string) *a2a.Error {
			_, e := v1.DecodePushCreate(json.RawMessage(`{"taskId":"t1","id":` + id + `,"url":"https://x"}`))
			return e
		}},
		{"1.0 push get taskId", "/taskId", func(id string) *a2a.Error {
			_, e := v1.DecodePushRef(json.RawMessage(`{"taskId":` + id + `,"id":"c1"}`))
			return e
		}},
		{"1.0 push get id", "/id", func(id string) *a2a.Error {
			_, e := v1.DecodePushRef(json.RawMessage(`{"taskId":"t1","id":` + id + `}`))
			return e
		}},
		{"1.0 push list taskId", "/taskId", func(id string) *a2a.Error {
			_, e := v1.DecodePushList(json.RawMessage(`{"taskId":` + id + `}`))
			return e
		}},
		{"1.0 list contextId", "/contextId", func(id string) *a2a.Error {
			_, e := v1.DecodeListTasks(json.RawMessage(`{"contextId":` + id + `}`))
			return e
		}},
	}
	return cases
}

// TestIDCaps: every identifier a caller chooses is at most 256 bytes
// (a2a.MaxIDBytes; metadata keys a2a.MaxMetadataKeyBytes), in every
// decoder of both versions, which every binding reads its params with
// (issue 25: a 33 KB messageId or push config id bricked a bbolt store,
// and a 500 KB one was -32603 on PostgreSQL). The refusal is a -32602
// naming the field; 256 bytes, counted after JSON unescaping, are taken.
func TestIDCaps(t *testing.T) {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	atCap := strings.Repeat("é", a2a.MaxIDBytes/2) // 2 bytes each: the cap counts bytes
	for _, tc := range idCapCases() {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.decode(q(atCap)); err != nil {
				t.Fatalf("an id of %d bytes: %v", len(atCap), err)
			}
			if err := tc.decode(`"\u00e9` + strings.Repeat("x", a2a.MaxIDBytes-2) + `"`); err != nil {
				t.Fatalf("an id of 256 bytes, escaped: %v", err)
			}
			msg := "must be at most 256 bytes"
			if strings.HasSuffix(tc.path, "metadata") {
				msg = "must have keys of at most 256 bytes"
			}
			wiretest.CheckInvalidParams(t, tc.decode(q(atCap+"x")), wiretest.Prob(tc.path, msg))
			wiretest.CheckInvalidParams(t, tc.decode(q(strings.Repeat("m", 33<<10))), wiretest.Prob(tc.path, msg))
		})
	}
}
