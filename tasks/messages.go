package tasks

import (
	"github.com/a2ad/a2ad/a2a"
)

func agentText(taskID, contextID, text string) *a2a.Message {
	return &a2a.Message{
		MessageID: newID(),
		TaskID:    taskID,
		ContextID: contextID,
		Role:      a2a.RoleAgent,
		Parts:     []a2a.Part{a2a.TextPart(text)},
	}
}

// FailureKey is the status message metadata key that classifies why a
// task failed, so that clients and the audit trail need not parse text.
const FailureKey = "a2ad.failure"

// The failure classes.
const (
	FailureInvoke      = "invoke_error"     // the function reported an error
	FailureTimeout     = "invoke_timeout"   // the call ran past its timeout
	FailureOutput      = "invalid_output"   // the output broke its schema
	FailureInterrupted = "interrupted"      // a restart cut the call short
	FailureTooLarge    = "output_too_large" // the output passed the task's artifact limit
	FailureQuota       = "quota_exceeded"   // the output passed the caller's storage quota
)

// failure is the agent message of a failed task, with its class.
func failure(taskID, contextID, text, class string) *a2a.Message {
	m := agentText(taskID, contextID, text)
	m.Metadata = map[string]any{FailureKey: class}
	return m
}
