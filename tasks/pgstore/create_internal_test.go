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
	taken := &pgconn.PgError{Code: "23505", ConstraintName: "tasks_pkey"}
	keyTaken := &pgconn.PgError{Code: "23505", ConstraintName: "tasks_key"}
	st := atOnceStatements{bound: 1, idem: -1, guard: 3, task: 4}
	inIdem := atOnceStatements{bound: 1, idem: 2, guard: -1, task: 3}
	for _, c := range []struct {
		name string
		at   int
		err  error
		want error
	}{
		{"committed", -1, nil, nil},
		{"the key bound in idem", st.bound, quota, errTakeTurns},
		{"the key bound in a task's row", st.task, keyTaken, errTakeTurns},
		{"the quota in the way", st.guard, quota, errTakeTurns},
		{"the task id taken", st.task, taken, errIDTaken},
		{"the connection lost at the key", st.bound, lost, lost},
		{"the connection lost at the guard", st.guard, lost, lost},
		{"the connection lost at the commit", -1, lost, lost},
	} {
		if got := st.outcome(c.at, c.err); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// A key written in idem (as schema 2 did, beside replicas of it): its
	// insert's unique violation is the key's, the task's is its id's.
	for _, c := range []struct {
		name string
		at   int
		err  error
		want error
	}{
		{"the key bound in a task's row", inIdem.bound, quota, errTakeTurns},
		{"the key bound in idem", inIdem.idem, taken, errTakeTurns},
		{"the task id taken", inIdem.task, taken, errIDTaken},
	} {
		if got := inIdem.outcome(c.at, c.err); got != c.want {
			t.Errorf("in idem, %s: %v, want %v", c.name, got, c.want)
		}
	}
}
