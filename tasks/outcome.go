package tasks

import (
	"strings"

	"github.com/a2ad/a2ad/exposure"
)

// Outcome is what the service decided on one request besides its
// result, for the audit trail: which function the request named or
// continued, and what the exposure policy decided. It holds no payload.
// Send and Stream return it.
type Outcome struct {
	// FunctionID is the function the request named or continued; "" when
	// it named none, or an id no function has.
	FunctionID string
	// Decision is the policy's reason for FunctionID ("" when the policy
	// was not asked).
	Decision exposure.Reason
}

// maxNotedID bounds a function id in an Outcome: a hidden id comes from
// the caller.
const maxNotedID = 128

// note records the policy's decision d on id. An id no function has is
// not recorded: it is whatever the caller sent (the first word of a text,
// say), and may hold anything.
func (out *Outcome) note(id string, d exposure.Reason) {
	if d == exposure.UnknownFunction {
		id = ""
	}
	if len(id) > maxNotedID {
		id = strings.ToValidUTF8(id[:maxNotedID], "")
	}
	out.FunctionID, out.Decision = id, d
}
