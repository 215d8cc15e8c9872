package grpc

import (
	"strings"
	"testing"
	"unicode/utf8"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/a2ad/a2ad/a2a"
)

// idRequest is a SendMessage request with value in the caller-chosen
// field field (modulo 7).
func idRequest(field uint8, value string) (*a2apb.SendMessageRequest, string) {
	m := &a2apb.Message{MessageId: "m1", Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "hi"}}}}
	req := &a2apb.SendMessageRequest{Message: m}
	meta := &structpb.Struct{Fields: map[string]*structpb.Value{value: structpb.NewNumberValue(1)}}
	switch field % 7 {
	case 0:
		m.MessageId = value
		return req, "/message/messageId"
	case 1:
		m.ContextId = value
		return req, "/message/contextId"
	case 2:
		m.TaskId = value
		return req, "/message/taskId"
	case 3:
		m.ReferenceTaskIds = []string{value}
		return req, "/message/referenceTaskIds/0"
	case 4:
		m.Metadata = meta
		return req, "/message/metadata"
	case 5:
		req.Metadata = meta
		return req, "/metadata"
	default:
		req.Configuration = &a2apb.SendMessageConfiguration{TaskPushNotificationConfig: &a2apb.TaskPushNotificationConfig{Id: value, Url: "https://127.0.0.1:9/a"}}
		return req, "/configuration/taskPushNotificationConfig/id"
	}
}

// FuzzGRPCCallerIDs puts any bytes, of any length, in each id and
// metadata key of a gRPC SendMessage, read as the binding reads it
// (sendParams: ProtoJSON, then the 1.0 decoder): it is refused with a
// -32602 (INVALID_ARGUMENT), naming the field when it is too long, or
// taken unchanged and within the caps. The decoder's own fuzzing, and the
// store's, are a2a/v1's and tasks' FuzzCallerIDsToStore.
func FuzzGRPCCallerIDs(f *testing.F) {
	for _, s := range []string{"m", "", strings.Repeat("x", a2a.MaxIDBytes), strings.Repeat("é", a2a.MaxIDBytes/2) + "x",
		strings.Repeat("k", 33<<10), "\x00", "\xff\xfe", "a\u2028b", `"\`} {
		for field := range uint8(7) {
			f.Add(field, s)
		}
	}
	f.Fuzz(func(t *testing.T, field uint8, value string) {
		req, path := idRequest(field, value)
		p, e := sendParams(req)
		if e != nil {
			if e.Code != a2a.CodeInvalidParams || !strings.HasPrefix(e.Message, "Invalid parameters: ") {
				t.Fatalf("%s = %q: %d %q, want -32602", path, value, e.Code, e.Message)
			}
			// (A string that is not UTF-8 is refused by ProtoJSON first,
			// as grpc-go's own decoding of the request would.)
			if len(value) > a2a.MaxIDBytes && utf8.ValidString(value) && !strings.Contains(e.Message, path+": must") {
				t.Fatalf("%s of %d bytes: %q, want it named", path, len(value), e.Message)
			}
			return
		}
		if len(value) > a2a.MaxIDBytes {
			t.Fatalf("%s of %d bytes accepted", path, len(value))
		}
		m := p.Message
		var got string
		switch field % 7 {
		case 0:
			got = m.MessageID
		case 1:
			got = m.ContextID
		case 2:
			got = m.TaskID
		case 3:
			got = m.ReferenceTaskIDs[0]
		case 4, 5:
			meta := m.Metadata
			if field%7 == 5 {
				meta = p.Metadata
			}
			for k := range meta {
				got = k
			}
		default:
			got = p.PushConfig.ID
		}
		if got != value {
			t.Fatalf("%s = %q read as %q", path, value, got)
		}
	})
}
