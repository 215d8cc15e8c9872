package tasks

import "context"

// Crash stops s as a replica that dies does, for tests of the replicas
// that outlive it: its heartbeats stop, its calls are cut short and store
// nothing, and its lease is left to lapse.
func (s *Service) Crash() {
	s.sw.Close()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	s.ex.Close(done)
	s.relay.close()
	s.cancel(errShuttingDown)
}
