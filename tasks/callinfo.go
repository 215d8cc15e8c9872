package tasks

import (
	"context"
	"strings"

	"github.com/a2ad/a2ad/exposure"
)

// CallInfo is what the service learned about one request, for the audit
// trail: which function the request named and what the exposure policy
// decided. The service fills it in the goroutine that handles the
// request; it holds no payload.
type CallInfo struct {
	// FunctionID is the function the request named or continued; "" when
	// it named none.
	FunctionID string
	// Decision is the policy's reason for FunctionID ("" when the policy
	// was not asked).
	Decision exposure.Reason
}

type callInfoKey struct{}

// WithCallInfo returns a context whose requests report into info.
func WithCallInfo(ctx context.Context, info *CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, info)
}

// maxNotedID bounds a function id in CallInfo: a hidden id comes from
// the caller.
const maxNotedID = 128

// noteDecision records the policy's decision on id, if ctx asks for it.
// An id no function has is not recorded: it is whatever the caller sent
// (the first word of a text, say), and may hold anything.
func noteDecision(ctx context.Context, id string, d exposure.Reason) {
	if info, ok := ctx.Value(callInfoKey{}).(*CallInfo); ok && info != nil {
		if d == exposure.UnknownFunction {
			id = ""
		}
		if len(id) > maxNotedID {
			id = strings.ToValidUTF8(id[:maxNotedID], "")
		}
		info.FunctionID, info.Decision = id, d
	}
}
