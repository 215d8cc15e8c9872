package v1

import "github.com/a2ad/a2ad/a2a"

// states are the task states in the order of their 1.0 enum numbers, with
// their 1.0 names. 0, TASK_STATE_UNSPECIFIED, stands for StateUnknown:
// 1.0 has no "unknown".
var states = [...]struct {
	state a2a.TaskState
	name  string
}{
	{a2a.StateUnknown, "TASK_STATE_UNSPECIFIED"},
	{a2a.StateSubmitted, "TASK_STATE_SUBMITTED"},
	{a2a.StateWorking, "TASK_STATE_WORKING"},
	{a2a.StateCompleted, "TASK_STATE_COMPLETED"},
	{a2a.StateFailed, "TASK_STATE_FAILED"},
	{a2a.StateCanceled, "TASK_STATE_CANCELED"},
	{a2a.StateInputRequired, "TASK_STATE_INPUT_REQUIRED"},
	{a2a.StateRejected, "TASK_STATE_REJECTED"},
	{a2a.StateAuthRequired, "TASK_STATE_AUTH_REQUIRED"},
}

// StateName returns s's 1.0 name, such as TASK_STATE_INPUT_REQUIRED.
// StateUnknown and "" are TASK_STATE_UNSPECIFIED; any other value that
// is not a state gives "".
func StateName(s a2a.TaskState) string {
	if s == "" {
		return states[0].name
	}
	for _, e := range states {
		if e.state == s {
			return e.name
		}
	}
	return ""
}

// StateFromName returns the state whose 1.0 name is name;
// TASK_STATE_UNSPECIFIED gives StateUnknown. ok is false for any other
// name, including the 0.3 spellings.
func StateFromName(name string) (s a2a.TaskState, ok bool) {
	for _, e := range states {
		if e.name == name {
			return e.state, true
		}
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
