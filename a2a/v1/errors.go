package v1

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/jsonw"
)

// The ErrorInfo domains of 1.0 errors: A2A's for the reasons the A2A
// spec defines, a2ad's for the ones a2ad defines.
const (
	ErrorDomainA2A  = "a2a-protocol.org"
	ErrorDomainA2AD = "github.com/a2ad/a2ad"
)

// errorReasons gives each code its google.rpc.ErrorInfo reason and
// domain: the A2A ones from the spec's table, then a2ad's own for the
// JSON-RPC codes (named after JSON-RPC 2.0's own error names) and for
// a2ad's codes. A code not listed gets "UNKNOWN" in a2ad's domain.
var errorReasons = []struct {
	code           int
	reason, domain string
}{
	{a2a.CodeTaskNotFound, "TASK_NOT_FOUND", ErrorDomainA2A},
	{a2a.CodeTaskNotCancelable, "TASK_NOT_CANCELABLE", ErrorDomainA2A},
	{a2a.CodePushNotificationNotSupported, "PUSH_NOTIFICATION_NOT_SUPPORTED", ErrorDomainA2A},
	{a2a.CodeUnsupportedOperation, "UNSUPPORTED_OPERATION", ErrorDomainA2A},
	{a2a.CodeContentTypeNotSupported, "CONTENT_TYPE_NOT_SUPPORTED", ErrorDomainA2A},
	{a2a.CodeInvalidAgentResponse, "INVALID_AGENT_RESPONSE", ErrorDomainA2A},
	{a2a.CodeExtendedCardNotConfigured, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", ErrorDomainA2A},
	{a2a.CodeExtensionSupportRequired, "EXTENSION_SUPPORT_REQUIRED", ErrorDomainA2A},
	{a2a.CodeVersionNotSupported, "VERSION_NOT_SUPPORTED", ErrorDomainA2A},

	{a2a.CodeParseError, "PARSE_ERROR", ErrorDomainA2AD},
	{a2a.CodeInvalidRequest, "INVALID_REQUEST", ErrorDomainA2AD},
	{a2a.CodeMethodNotFound, "METHOD_NOT_FOUND", ErrorDomainA2AD},
	{a2a.CodeInvalidParams, "INVALID_PARAMS", ErrorDomainA2AD},
	{a2a.CodeInternalError, "INTERNAL_ERROR", ErrorDomainA2AD},
	{a2a.CodeServerBusy, "SERVER_BUSY", ErrorDomainA2AD},
	{a2a.CodeShuttingDown, "SHUTTING_DOWN", ErrorDomainA2AD},
	{a2a.CodeRateLimited, "RATE_LIMITED", ErrorDomainA2AD},
	{a2a.CodeTooManyInFlight, "TOO_MANY_IN_FLIGHT", ErrorDomainA2AD},
	{a2a.CodeUnauthenticated, "UNAUTHENTICATED", ErrorDomainA2AD},
	{a2a.CodeQuotaExceeded, "STORAGE_QUOTA_EXCEEDED", ErrorDomainA2AD},
	{a2a.CodeTaskLimitExceeded, "TASK_LIMIT_EXCEEDED", ErrorDomainA2AD},
	{a2a.CodeStoreUnavailable, "STORE_UNAVAILABLE", ErrorDomainA2AD},
}

// ErrorReason returns the ErrorInfo reason and domain of a 1.0 error
// with code.
func ErrorReason(code int) (reason, domain string) {
	for _, r := range errorReasons {
		if r.code == code {
			return r.reason, r.domain
		}
	}
	return "UNKNOWN", ErrorDomainA2AD
}

// AppendError appends the JSON-RPC response carrying e, in its 1.0
// form, to dst: code and message as in 0.3, and data the array that
// AppendErrorDetails writes. A nil e is answered as a2a.ErrInternal.
func AppendError(dst []byte, id json.RawMessage, e *a2a.Error) []byte {
	if e == nil {
		e = a2a.ErrInternal
	}
	dst = append(a2a.AppendErrorStart(dst, id), `{"code":`...)
	dst = strconv.AppendInt(dst, int64(e.Code), 10)
	dst = append(dst, `,"message":`...)
	dst = jsonw.AppendString(dst, e.Message)
	dst = append(dst, `,"data":`...)
	dst = AppendErrorDetails(dst, e)
	return append(dst, "}}"...)
}

// AppendErrorDetails appends the 1.0 details of e, a JSON array of
// ProtoJSON Any objects (the JSON-RPC error's data, and the details of a
// google.rpc.Status):
//
//   - always first, a google.rpc.ErrorInfo with the reason and domain of
//     ErrorReason, and e.Data as its metadata: ProtoJSON metadata is
//     map<string,string>, so a string value is kept as it is and any
//     other is written as its compact JSON (a value that does not encode
//     is left out);
//   - for -32602 whose data lists problems (data.errors, as InvalidParams
//     makes it), a google.rpc.BadRequest with one field violation per
//     problem, in order, instead of the list in the metadata. A
//     violation's field is the problem's JSON pointer in the path syntax
//     of google.rpc.BadRequest: "/message/parts/0/text" becomes
//     "message.parts[0].text", a key that is not an identifier becomes
//     ["key"], and the pointer "/" (the params themselves) is left out. A
//     path that is not a JSON pointer (such as a header name) is kept as
//     it is.
func AppendErrorDetails(dst []byte, e *a2a.Error) []byte {
	reason, domain := ErrorReason(e.Code)
	var problems []a2a.Problem
	hasProblems := false
	if e.Code == a2a.CodeInvalidParams {
		problems, hasProblems = dataProblems(e.Data["errors"])
	}
	dst = append(dst, `[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":`...)
	dst = jsonw.AppendString(dst, reason)
	dst = append(dst, `,"domain":`...)
	dst = jsonw.AppendString(dst, domain)
	keys := make([]string, 0, len(e.Data))
	for k := range e.Data {
		if !(hasProblems && k == "errors") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	first := true
	for _, k := range keys {
		v, ok := metadataString(e.Data[k])
		if !ok {
			continue
		}
		if first {
			dst = append(dst, `,"metadata":{`...)
			first = false
		} else {
			dst = append(dst, ',')
		}
		dst = jsonw.AppendString(dst, k)
		dst = append(dst, ':')
		dst = jsonw.AppendString(dst, v)
	}
	if !first {
		dst = append(dst, '}')
	}
	dst = append(dst, '}')
	if len(problems) > 0 {
		dst = append(dst, `,{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[`...)
		for i, p := range problems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '{')
			if f := pointerToField(p.Path); f != "" {
				dst = append(dst, `"field":`...)
				dst = jsonw.AppendString(dst, f)
				dst = append(dst, ',')
			}
			dst = append(dst, `"description":`...)
			dst = jsonw.AppendString(dst, p.Message)
			dst = append(dst, '}')
		}
		dst = append(dst, "]}"...)
	}
	return append(dst, ']')
}

// metadataString renders an error data value as a metadata string.
func metadataString(v any) (string, bool) {
	if s, ok := v.(string); ok {
		return s, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// dataProblems reads the problem list of an InvalidParams error's data.
func dataProblems(v any) ([]a2a.Problem, bool) {
	switch list := v.(type) {
	case []a2a.Problem:
		return list, true
	case []any:
		out := make([]a2a.Problem, 0, len(list))
		for _, item := range list {
			m, ok := item.(map[string]any)
			if !ok || len(m) != 2 {
				return nil, false
			}
			path, ok1 := m["path"].(string)
			msg, ok2 := m["message"].(string)
			if !ok1 || !ok2 {
				return nil, false
			}
			out = append(out, a2a.Problem{Path: path, Message: msg})
		}
		return out, true
	}
	return nil, false
}

// pointerToField turns a JSON pointer into a google.rpc.BadRequest field
// path (camelCase names joined by dots, indexes in brackets).
func pointerToField(p string) string {
	if !strings.HasPrefix(p, "/") {
		return p
	}
	if p == "/" {
		return ""
	}
	var b strings.Builder
	for _, seg := range strings.Split(p[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch {
		case isDigits(seg):
			b.WriteByte('[')
			b.WriteString(seg)
			b.WriteByte(']')
		case isIdent(seg):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(seg)
		default:
			b.WriteByte('[')
			b.Write(jsonw.AppendString(nil, seg))
			b.WriteByte(']')
		}
	}
	return b.String()
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}
