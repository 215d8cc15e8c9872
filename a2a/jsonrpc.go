package a2a

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/a2ad/a2ad/internal/jsonw"
)

// Request is a JSON-RPC 2.0 request that passed the envelope checks.
type Request struct {
	// ID is the request id exactly as sent (a JSON string, number or null),
	// or nil when the request had none.
	ID     json.RawMessage
	Method string
	Params json.RawMessage
}

// ParseRequest checks the JSON-RPC envelope of body, in the order the spec
// gives: parse (-32700), then the request object (-32600). On error it
// returns the request id when it could be read, so the answer can carry it.
func ParseRequest(body []byte) (Request, *Error) {
	var req Request
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return req, ErrParse.WithData(map[string]any{"reason": "empty body"})
	}
	fields, valid := jsonw.ValidMembers(body)
	if !valid {
		data := map[string]any{"reason": "body is not valid JSON"}
		var v any
		var syn *json.SyntaxError
		if err := json.Unmarshal(body, &v); errors.As(err, &syn) {
			data["offset"] = syn.Offset
		}
		return req, ErrParse.WithData(data)
	}
	switch body[0] {
	case '{':
	case '[':
		return req, invalidRequest("batch requests are not supported")
	default:
		return req, invalidRequest("the body must be a JSON-RPC request object")
	}
	// The id and params are copied: body may be a reused buffer.
	if id := fields.Get("id"); id != nil {
		switch id[0] {
		case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			req.ID = append(json.RawMessage(nil), id...)
		default:
			return req, invalidRequest(`"id" must be a string, a number or null`)
		}
	}
	if v := fields.Get("jsonrpc"); string(v) != `"2.0"` {
		return req, invalidRequest(`"jsonrpc" must be "2.0"`)
	}
	m := fields.Get("method")
	if m == nil {
		return req, invalidRequest(`"method" is missing`)
	}
	if m[0] != '"' {
		return req, invalidRequest(`"method" must be a string`)
	}
	req.Method = jsonw.Unquote(m)
	if p := fields.Get("params"); p != nil {
		req.Params = append(json.RawMessage(nil), p...)
	}
	return req, nil
}

func invalidRequest(reason string) *Error {
	return &Error{
		Code:    CodeInvalidRequest,
		Message: ErrInvalidRequest.Message + ": " + reason,
		Data:    map[string]any{"reason": reason},
	}
}

// MethodNotFound returns the -32601 error naming method.
func MethodNotFound(method string) *Error {
	return &Error{
		Code:    CodeMethodNotFound,
		Message: ErrMethodNotFound.Message + ": " + method,
		Data:    map[string]any{"method": method},
	}
}

var nullID = json.RawMessage("null")

// AppendResult appends the JSON-RPC response carrying result to dst.
// result must already be JSON.
func AppendResult(dst []byte, id json.RawMessage, result []byte) []byte {
	dst = AppendResultStart(dst, id)
	dst = append(dst, result...)
	return append(dst, '}')
}

// AppendResultStart appends a result response up to its result value, so
// that the caller can encode the value in place; the caller then appends
// the value and '}'.
func AppendResultStart(dst []byte, id json.RawMessage) []byte {
	return appendResponseStart(dst, id, `,"result":`)
}

// AppendErrorStart appends an error response up to its error object, for
// a codec that writes the object itself; the caller then appends the
// object and '}'.
func AppendErrorStart(dst []byte, id json.RawMessage) []byte {
	return appendResponseStart(dst, id, `,"error":`)
}

func appendResponseStart(dst []byte, id json.RawMessage, member string) []byte {
	if len(id) == 0 {
		id = nullID
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	return append(dst, member...)
}

// AppendError appends the JSON-RPC 2.0 response carrying e to dst, e as
// encoding/json writes it: the 0.3 form of an error, whose data is an
// object. (The 1.0 form is package v1's AppendError.)
func AppendError(dst []byte, id json.RawMessage, e *Error) []byte {
	eb, err := json.Marshal(e)
	if err != nil { // data held something unencodable: keep code and message
		eb, _ = json.Marshal(&Error{Code: e.Code, Message: e.Message})
	}
	dst = AppendErrorStart(dst, id)
	dst = append(dst, eb...)
	return append(dst, '}')
}
