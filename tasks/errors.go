package tasks

import (
	"errors"
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
