package engine

// A damaged file: the panics and memory faults bbolt raises when a page
// it trusted is garbage, turned into errors (Guard). bbolt maps the file
// and reads its pages in place: a garbage leaf or branch panics, or
// faults, wherever a read reaches it. None of these is an error bbolt
// returns, and a fault is not even a panic unless the goroutine asked for
// one (debug.SetPanicOnFault). So every transaction of the engine runs
// under guard, and the store opens and checks its file under it too.

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// ErrDamaged is matched (errors.Is) by every *DamagedError.
var ErrDamaged = errors.New("store file is damaged")

// DamagedError says the store file cannot be read as a store: it was cut
// short, or a page bbolt relies on is garbage. Waiting or retrying does
// not help; the file must be restored from a backup.
type DamagedError struct {
	Path string
	What string // what is wrong, for the operator
}

func (e *DamagedError) Error() string {
	return "the store file " + e.Path + " is damaged: " + e.What
}

// Is makes errors.Is(err, ErrDamaged) true.
func (e *DamagedError) Is(target error) bool { return target == ErrDamaged }

// Guard runs fn, which reads the bbolt file at path, and turns a panic
// raised in bbolt, or a memory fault while reading the mapped file, into a
// *DamagedError. Other panics (a bug, not the file) go on. bbolt's View
// and Update roll their transaction back on the way out, so the store
// stays usable for what does not touch the damaged pages.
func Guard(path string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { Recovered(recover(), path, &err) }()
	return fn()
}

// Recovered is the deferred half of guard, for a function that sets
// debug.SetPanicOnFault itself: given r, what recover returned, it sets
// *err to a *DamagedError and reports true if r comes from the file at
// path, reports false for no panic, and panics again with any other r.
func Recovered(r any, path string, err *error) bool {
	if r == nil {
		return false
	}
	if !fromFile(r) {
		panic(r)
	}
	what := fmt.Sprintf("reading it failed: %v", r)
	if f, ok := r.(interface{ Addr() uintptr }); ok {
		what = fmt.Sprintf("reading it failed: a page points outside the file (a fault at %#x)", f.Addr())
	}
	*err = &DamagedError{Path: path, What: what}
	return true
}

// fromFile reports whether the panic r, being recovered in a deferred
// function, comes from the file's content: a memory fault (with
// SetPanicOnFault), or a panic raised by bbolt's own code.
func fromFile(r any) bool {
	if _, ok := r.(interface{ Addr() uintptr }); ok {
		return true // a fault: the runtime.Error of SetPanicOnFault
	}
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	// The frames are: this function, the deferred one, runtime.gopanic,
	// then the runtime's panic helpers (index out of range, say), then
	// the function that panicked.
	panicking := false
	for {
		fr, more := frames.Next()
		switch {
		case fr.Function == "runtime.gopanic":
			panicking = true
		case panicking && !strings.HasPrefix(fr.Function, "runtime."):
			return strings.HasPrefix(fr.Function, "go.etcd.io/bbolt")
		}
		if !more {
			return false
		}
	}
}

// ViewGuarded is db.View under guard, for readers that hold only the
// handle (the inspector).
func ViewGuarded(db *bolt.DB, fn func(*bolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { Recovered(recover(), db.Path(), &err) }()
	return db.View(fn)
}
