package tasks

// Metrics receives the service's measurements. Its methods are called on
// hot paths, from many goroutines: they must be quick and never block.
// functionID is always the id of a catalogue function that was called,
// never a name a caller sent that matched none.
type Metrics interface {
	// CallQueued is told +1 when a call starts waiting for a free slot
	// and -1 when the wait ends (it got one, or was cancelled).
	CallQueued(functionID string, delta int)
	// CallRunning is told +1 when a call's function is invoked and -1
	// when it returns.
	CallRunning(functionID string, delta int)
	// IdempotentReplay is told of a message answered with the task that
	// an earlier message with its messageId created or joined: nothing
	// ran again.
	IdempotentReplay()
	// Subscribers is told +1 when a stream starts watching a task and
	// -1 when it stops.
	Subscribers(delta int)
	// ReplayedEvents is told of n events sent to a stream from the
	// store rather than live: a stream resuming after an event id, or
	// catching up after a gap.
	ReplayedEvents(n int)
	// SlowSubscriberDropped is told of a stream cut off because it fell
	// too far behind its task's events.
	SlowSubscriberDropped()
}

// nopMetrics is the Metrics of a service configured without any.
type nopMetrics struct{}

func (nopMetrics) CallQueued(string, int)  {}
func (nopMetrics) CallRunning(string, int) {}
func (nopMetrics) IdempotentReplay()       {}
func (nopMetrics) Subscribers(int)         {}
func (nopMetrics) ReplayedEvents(int)      {}
func (nopMetrics) SlowSubscriberDropped()  {}
