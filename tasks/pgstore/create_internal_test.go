package pgstore

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestAtOnceOutcome: only the server's own refusal of the key or of the
// quota guard sends a create to the full transaction. An error of the
// connection while reading the guard's answer (the batch may have
// committed: its commit is at its end, already sent) is the create's
// error, as a failed commit is: the full transaction would find the key
// bound to the task this very create stored, and answer "not created"
// for it, so that no one runs it.
func TestAtOnceOutcome(t *testing.T) {
	lost := errors.New("unexpected EOF")
	quota := &pgconn.PgError{Code: "22012"}
	taken := &pgconn.PgError{Code: "23505"}
	const guard, task = 2, 4
	for _, c := range []struct {
		name string
		at   int
		err  error
		want error
	}{
		{"committed", -1, nil, nil},
		{"the key bound", 0, taken, errTakeTurns},
		{"the quota in the way", guard, quota, errTakeTurns},
		{"the task id taken", task, taken, errIDTaken},
		{"the connection lost at the key", 0, lost, lost},
		{"the connection lost at the guard", guard, lost, lost},
		{"the connection lost at the commit", -1, lost, lost},
	} {
		if got := atOnceOutcome(c.at, guard, task, c.err); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
