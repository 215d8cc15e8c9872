package tasks

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/a2ad/a2ad/a2a"
)

// Errors of a request the service refuses for what it says. Test with
// errors.Is; InputError carries the problems.
var (
	// ErrInvalidInput: the request's params are wrong. Nothing was
	// stored.
	ErrInvalidInput = errors.New("invalid input")
	// ErrPushUnavailable: push notifications are off (no URL guard is
	// configured).
	ErrPushUnavailable = errors.New("push notifications are not available")
)

// InputError is ErrInvalidInput with its problems, each naming where in
// the request's params it is (a JSON pointer, with the core names, which
// are 0.3's: /pushNotificationConfig/url) and what is wrong. The
// transport turns it into its own error (JSON-RPC -32602), naming the
// members as the call's protocol version does.
type InputError struct {
	// Skill is the function whose input schema refused the input; "" for
	// any other problem.
	Skill string
	// Problems lists what is wrong, at least one.
	Problems []a2a.Problem
}

func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString("invalid input")
	if e.Skill != "" {
		b.WriteString(" for skill " + e.Skill)
	}
	if len(e.Problems) > 0 {
		b.WriteString(": " + e.Problems[0].Path + ": " + e.Problems[0].Message)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidInput) hold.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

// invalid is the InputError of one problem at path.
func invalid(path, msg string) *InputError {
	return &InputError{Problems: []a2a.Problem{{Path: path, Message: msg}}}
}

// CutError is Close's report of the calls it had to cut because its ctx
// ended while they ran. Their tasks stay as they were; the replica's
// leases end, so another replica resumes them at once, or this one at its
// next start (a function that is not retry-safe fails then, as after a
// crash).
type CutError struct {
	// Calls counts the calls cut per function id.
	Calls map[string]int
}

func (e *CutError) Error() string {
	ids := make([]string, 0, len(e.Calls))
	total := 0
	for id, n := range e.Calls {
		ids = append(ids, id)
		total += n
	}
	slices.Sort(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "shutdown cut %d running call", total)
	if total != 1 {
		b.WriteString("s")
	}
	b.WriteString(" (")
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", id, e.Calls[id])
	}
	b.WriteString("); their tasks are resumed at the next start or by another replica")
	return b.String()
}
