package functions

import "context"

// ProcessGroup identifies the process group of a running exec call, so
// that a later a2ad can kill what a crashed one left running (see
// KillLeftover). Its JSON is kept in the task's record.
type ProcessGroup struct {
	// ID is the group's id, which is also the pid of its leader, the
	// child a2ad started.
	ID int `json:"pgid"`
	// LeaderStart is when the leader started, in clock ticks since boot
	// (field 22 of /proc/<pid>/stat): with BootID it tells the leader from
	// a later process that was given the same pid.
	LeaderStart uint64 `json:"leaderStart"`
	// Session is the session the group belongs to (a2ad's own).
	Session int `json:"session"`
	// BootID is the kernel's boot id (/proc/sys/kernel/random/boot_id)
	// when the group was started.
	BootID string `json:"bootId"`
}

// StartedFunc receives the process group of a call once its child has
// started, before its output is read. It may block (the group is being
// stored); the child runs meanwhile.
type StartedFunc func(ProcessGroup)

// WithStarted returns a context whose exec calls report their process
// group to fn. Only Linux reports groups: elsewhere fn is never called.
func WithStarted(ctx context.Context, fn StartedFunc) context.Context {
	return withHook(ctx, fn)
}

// reportStarted reports g for the call running under ctx; without a
// StartedFunc it does nothing.
func reportStarted(ctx context.Context, g ProcessGroup) { callHook(ctx, g) }
