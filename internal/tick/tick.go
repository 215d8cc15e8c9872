// Package tick runs a periodic job until it is told to stop: the one
// ticker loop the sweeper, the stream keep-alives and the bucket sweeps
// share.
package tick

import "time"

// Every calls fn every d until done is closed. It returns when done is
// closed, and never while fn runs.
func Every(done <-chan struct{}, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			fn()
		}
	}
}
