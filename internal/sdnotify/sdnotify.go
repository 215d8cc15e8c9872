// Package sdnotify tells a service manager how a2ad is doing, by systemd's
// notify protocol (sd_notify): READY=1 once it serves, RELOADING=1 and
// READY=1 around a reload, STOPPING=1 when shutdown begins, and WATCHDOG=1
// keep-alives while the unit sets WatchdogSec. Without NOTIFY_SOCKET (not
// run by systemd, or a unit of Type=simple) every method does nothing.
package sdnotify

import (
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/rs/zerolog"
)

// Notifier sends the notifications. Its methods are safe for concurrent
// use, and do nothing on a nil Notifier; the watchdog loop it starts is
// stopped by Close.
type Notifier struct {
	log     zerolog.Logger
	once    sync.Once // the first failure is logged, the rest are not
	stop    chan struct{}
	stopped sync.Once
	started sync.Once // the watchdog, by the first Ready
	wg      sync.WaitGroup
}

// New returns a Notifier that logs its first failure to log.
func New(log zerolog.Logger) *Notifier {
	return &Notifier{log: log, stop: make(chan struct{})}
}

// Ready says a2ad serves: its listeners and its store are up, or a reload
// is done. The first Ready starts the watchdog (see StartWatchdog).
func (n *Notifier) Ready() {
	n.send(daemon.SdNotifyReady)
	if n != nil {
		n.started.Do(n.StartWatchdog)
	}
}

// Reloading says a reload begins; Ready ends it. systemd 253 and later
// want the monotonic time of the reload with it.
func (n *Notifier) Reloading() {
	n.send(daemon.SdNotifyReloading + "\n" + daemon.SdNotifyMonotonicUsec())
}

// Stopping says shutdown begins.
func (n *Notifier) Stopping() { n.send(daemon.SdNotifyStopping) }

// StartWatchdog sends WATCHDOG=1 every half of the unit's WatchdogSec
// (WATCHDOG_USEC, for this process) until Close; without one it does
// nothing. Call it once, or let Ready call it. The keep-alives come from their own goroutine: they say the
// process runs and schedules goroutines, so a hung process is restarted.
func (n *Notifier) StartWatchdog() {
	if n == nil {
		return
	}
	every, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		n.log.Warn().Err(err).Msg("systemd watchdog not kept: WATCHDOG_USEC does not parse")
		return
	}
	if every <= 0 {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		t := time.NewTicker(every / 2)
		defer t.Stop()
		for {
			n.send(daemon.SdNotifyWatchdog)
			select {
			case <-n.stop:
				return
			case <-t.C:
			}
		}
	}()
	n.log.Info().Dur("watchdog", every).Msg("systemd watchdog kept")
}

// Close stops the watchdog and waits for it.
func (n *Notifier) Close() {
	if n == nil {
		return
	}
	n.stopped.Do(func() { close(n.stop) })
	n.wg.Wait()
}

// send sends state; a failure is logged once (the socket is the service
// manager's, and a2ad runs on without it).
func (n *Notifier) send(state string) {
	if n == nil {
		return
	}
	if _, err := daemon.SdNotify(false, state); err != nil {
		n.once.Do(func() {
			n.log.Warn().Err(err).Msg("systemd notification not sent")
		})
	}
}
