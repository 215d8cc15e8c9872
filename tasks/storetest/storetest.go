// Package storetest is the conformance suite of a2ad's task stores, run
// through the one contract they implement, tasks.Backend: the contracts of
// tasks.Store (create, lookup and idempotency, update and its races,
// events and their sequence numbers, the active index, expiry, quotas,
// listing, leases), of the push outbox a store keeps beside its tasks
// (tasks.Outbox, and the gauges and replay the operator and the metrics
// use), and of the operator's tasks.Inspector (Backend.Inspect), written
// once. Every store runs all of them from its own tests:
//
//	func TestConformance(t *testing.T) { storetest.Run(t, openStore) }
//
// The helpers it exports (Key, NewRecord, Create, ListIDs, ...) build the
// tasks a store's own tests need too.
package storetest

import (
	"context"
	"testing"

	"github.com/a2ad/a2ad/tasks"
)

// Store is what the suite tests: the whole of tasks.Backend.
type Store = tasks.Backend

// Bounds are the limits of an inspector's walks (tasks.InspectBounds);
// zero is the store's default.
type Bounds = tasks.InspectBounds

// Subject is one store under test.
type Subject struct {
	Store Store
	// Reopen closes Store and opens what it stored again, as a restart
	// (or another process on the same data) does.
	Reopen func(t *testing.T) *Subject
	// Check, when not nil, fails tb unless the store's own consistency
	// checks pass; the suite calls it after the writes it makes.
	Check func(tb testing.TB)
}

// Reopening is the Subject of the store open opens at one place (a
// file, a database schema), and opens again there for Reopen, after its
// checks and Close. check, when not nil, runs its own consistency
// checks.
func Reopening[S Store](t *testing.T, open func(t *testing.T) S, check func(tb testing.TB, s S)) *Subject {
	s := open(t)
	sub := &Subject{Store: s}
	if check != nil {
		sub.Check = func(tb testing.TB) { check(tb, s) }
	}
	sub.Reopen = func(t *testing.T) *Subject {
		sub.check(t)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return Reopening(t, open, check)
	}
	return sub
}

// Open opens a new, empty store for t, and closes it when t ends.
type Open func(t *testing.T) *Subject

// contract is one subtest of Run.
type contract struct {
	name string
	run  func(t *testing.T, sub *Subject)
}

// contracts are every contract of a store, one subtest each.
var contracts = []contract{
	// A task's life: create, lookup, get, update, events (tasks.go).
	{"CreateGetAndIdempotency", testCreateGetAndIdempotency},
	{"Lookup", testLookup},
	{"UpdateAppendsEventsDurably", testUpdateAppendsEventsDurably},
	{"UpdateWithKeyIsIdempotent", testUpdateWithKeyIsIdempotent},
	{"UpdateWithoutEvents", testUpdateWithoutEvents},
	{"ReadsReturnWhatTheirScopeAsks", testReadsReturnWhatTheirScopeAsks},
	{"HistoryBytesKeepTheNewestThatFit", testHistoryBytesKeepTheNewestThatFit},
	{"TaskIDsAreStoredOnce", testTaskIDsAreStoredOnce},
	{"ArtifactEventsAreAppliedAsClientsDo", testArtifactEventsAreAppliedAsClientsDo},
	{"ForeignTaskIsNotFound", testForeignTaskIsNotFound},

	// Writers that race, overreach or come too late: nothing is lost,
	// nothing is doubled, a refusal stores nothing (writers.go). Run them
	// under -race.
	{"RacingUpdatesAreNeverLost", testRacingUpdatesAreNeverLost},
	{"RacingCreatesOfOneKeyMakeOneTask", testRacingCreatesOfOneKeyMakeOneTask},
	{"FailingWritesFailAlone", testFailingWritesFailAlone},
	{"PushConfigsNeverLoseAConcurrentChange", testPushConfigsNeverLoseAConcurrentChange},
	{"UpdatesRacingWebhookChangesKeepBoth", testUpdatesRacingWebhookChangesKeepBoth},
	{"QuotaRefusesAndStoresNothing", testQuotaRefusesAndStoresNothing},
	{"ClosedStoreRefusesWrites", testClosedStoreRefusesWrites},
	{"CanceledContextIsRefused", testCanceledContextIsRefused},

	// The indexes: the non-terminal tasks, retention, and List with every
	// filter and page size, its cursor holding while tasks change
	// (index.go).
	{"ActiveIndexHoldsTheNonTerminalTasks", testActiveIndex},
	{"ExpireDeletesEverythingOfOldTerminalTasks", testExpireDeletesEverything},
	{"ExpireWithACutoffBefore1970", testExpireWithACutoffBefore1970},
	{"ListFollowsEveryWrite", testListFollowsEveryWrite},
	{"ListOrdersTiesByIDAndPagesThroughThem", testListOrdersTiesByID},
	{"ListIDsAndOwnersWithAnyBytes", testListIDsAndOwnersWithAnyBytes},
	{"ListFilters", testListFilters},
	{"ListCursorIsStableUnderInserts", testListCursorIsStableUnderInserts},
	{"ListBytesEndPagesEarly", testListBytesEndPagesEarly},

	// Leases: a task's runner is kept, a task whose runner holds no
	// lease is an orphan, one replica adopts an orphan (leases.go).
	{"RunnerIsKept", testRunnerIsKept},
	{"OrphansHaveNoLiveLease", testOrphansHaveNoLiveLease},
	{"AdoptionIsOnce", testAdoptionIsOnce},

	// The push outbox: a transition queues its deliveries in its own
	// commit; the sender claims what is due, then acks, retries or
	// dead-letters it (outbox.go).
	{"TransitionsQueueDeliveriesInTheSameCommit", testTransitionsQueueDeliveries},
	{"OutboxCoalescesPerWebhook", testOutboxCoalescesPerWebhook},
	{"DeliveredKeepsALaterTransition", testDeliveredKeepsALaterTransition},
	{"DueReturnsBatchesByDueTime", testDueReturnsBatchesByDueTime},
	{"RequestDropsWhatIsGone", testRequestDropsWhatIsGone},
	{"DeadLettersKeepTheURLAndNoSecret", testDeadLettersKeepTheURLAndNoSecret},
	{"DeadLettersCanBeRetried", testDeadLettersCanBeRetried},
	{"RetriedDeadLetterJoinsALaterDelivery", testRetriedDeadLetterJoinsALaterDelivery},
	{"DeadLettersCanBeDropped", testDeadLettersCanBeDropped},

	// The operator's read-only view (inspect.go).
	{"InspectorOverview", testInspectorOverview},
	{"InspectorTasksFiltersAndPages", testInspectorTasksFiltersAndPages},
	{"InspectorTasksIDsAndOwnersWithAnyBytes", testInspectorTasksIDsAndOwnersWithAnyBytes},
	{"InspectorTask", testInspectorTask},
	{"InspectorDeadLetters", testInspectorDeadLetters},
}

// Run runs every contract against a fresh store from open, one subtest
// each.
func Run(t *testing.T, open Open) {
	for _, c := range contracts {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
	}
}

// check runs the store's own checks, if it has any.
func (sub *Subject) check(tb testing.TB) {
	tb.Helper()
	if sub.Check != nil {
		sub.Check(tb)
	}
}

// inspector is the store's inspector with its default bounds.
func (sub *Subject) inspector() tasks.Inspector { return sub.Store.Inspect(Bounds{}) }

var ctx = context.Background()
