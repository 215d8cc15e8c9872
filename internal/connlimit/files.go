package connlimit

import "syscall"

// FDReserve is the file descriptors MaxFor leaves for the rest of
// a2ad: the store, the logs, exec children's pipes, webhook deliveries and
// the admin listener's connections.
const FDReserve = 512

// MaxFor returns the cap of open connections to apply (a2ad's
// --max-conns): want, lowered so that want connections and FDReserve
// other descriptors fit in nofile (the open-file limit), but never below
// half of nofile. lowered tells that it lowered want. A want of 0 (no
// cap) stays 0.
func MaxFor(want int, nofile uint64) (n int, lowered bool) {
	if want <= 0 || nofile == 0 {
		return want, false
	}
	avail := nofile / 2
	if nofile > FDReserve && nofile-FDReserve > avail {
		avail = nofile - FDReserve
	}
	if uint64(want) <= avail {
		return want, false
	}
	return int(avail), true
}

// OpenFileLimit returns the process's soft limit of open files (the Go
// runtime raises it to the hard limit at start); 0 if it cannot be read.
func OpenFileLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return r.Cur
}
