package v1

import "github.com/a2ad/a2ad/a2a"

// StateName returns s's 1.0 name, such as TASK_STATE_INPUT_REQUIRED.
// StateUnknown and "" are TASK_STATE_UNSPECIFIED, as 1.0 has no
// "unknown"; any other value gives "".
func StateName(s a2a.TaskState) string {
	switch s {
	case a2a.StateSubmitted:
		return "TASK_STATE_SUBMITTED"
	case a2a.StateWorking:
		return "TASK_STATE_WORKING"
	case a2a.StateInputRequired:
		return "TASK_STATE_INPUT_REQUIRED"
	case a2a.StateAuthRequired:
		return "TASK_STATE_AUTH_REQUIRED"
	case a2a.StateCompleted:
		return "TASK_STATE_COMPLETED"
	case a2a.StateCanceled:
		return "TASK_STATE_CANCELED"
	case a2a.StateFailed:
		return "TASK_STATE_FAILED"
	case a2a.StateRejected:
		return "TASK_STATE_REJECTED"
	case a2a.StateUnknown, "":
		return "TASK_STATE_UNSPECIFIED"
	}
	return ""
}

// StateFromName returns the state whose 1.0 name is name;
// TASK_STATE_UNSPECIFIED gives StateUnknown. ok is false for any other
// name, including the 0.3 spellings.
func StateFromName(name string) (s a2a.TaskState, ok bool) {
	switch name {
	case "TASK_STATE_SUBMITTED":
		return a2a.StateSubmitted, true
	case "TASK_STATE_WORKING":
		return a2a.StateWorking, true
	case "TASK_STATE_INPUT_REQUIRED":
		return a2a.StateInputRequired, true
	case "TASK_STATE_AUTH_REQUIRED":
		return a2a.StateAuthRequired, true
	case "TASK_STATE_COMPLETED":
		return a2a.StateCompleted, true
	case "TASK_STATE_CANCELED":
		return a2a.StateCanceled, true
	case "TASK_STATE_FAILED":
		return a2a.StateFailed, true
	case "TASK_STATE_REJECTED":
		return a2a.StateRejected, true
	case "TASK_STATE_UNSPECIFIED":
		return a2a.StateUnknown, true
	}
	return "", false
}

// RoleName returns r's 1.0 name: ROLE_USER, ROLE_AGENT, ROLE_UNSPECIFIED
// for "", and "" for any other value.
func RoleName(r a2a.Role) string {
	switch r {
	case a2a.RoleUser:
		return "ROLE_USER"
	case a2a.RoleAgent:
		return "ROLE_AGENT"
	case "":
		return "ROLE_UNSPECIFIED"
	}
	return ""
}
