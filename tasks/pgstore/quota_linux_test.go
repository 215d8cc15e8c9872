package pgstore_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/pgstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// TestByteQuotaHoldsUnderCreatesAndFollowUps: on a server restarted with
// max_connections lowered from 100 to 10 (less room left for the creates
// that take the quota's turn shared), creates of 400 KiB each and
// follow-up messages of 1.5 MiB each (which take it alone) race on two
// stores against a byte quota they pass together: the owner's usage never
// passes it, every refusal is the quota's, and the usage is exact.
func TestByteQuotaHoldsUnderCreatesAndFollowUps(t *testing.T) {
	pg := pgtest.StartPrivate(t)
	admin, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `ALTER SYSTEM SET max_connections = 10`); err != nil {
		t.Fatal(err)
	}
	_ = admin.Close(ctx)
	open := func() *pgstore.Store {
		s, err := pgstore.Open(ctx, pg.DSN(), pgstore.Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	a := open() // opened under max_connections 100
	pg.Stop()
	pg.Start()
	stores := []*pgstore.Store{a, open()}
	var conns int
	for range 10 { // the first use of each old connection fails
		if err = stores[0].MaxConnections(ctx, &conns); err == nil {
			break
		}
	}
	if conns != 10 {
		t.Fatalf("max_connections %d after the restart, want 10", conns)
	}
	const limit = 24 << 20
	quota := tasks.Quota{Tasks: 1 << 20, Bytes: limit}
	for i := range 8 {
		storetest.Create(t, stores[0], storetest.NewRecord(fmt.Sprintf("w%d", i), "bob", a2a.StateWorking, time.Now()))
	}
	var wg sync.WaitGroup
	errs := make([]error, 48)
	start := make(chan struct{})
	for i := range errs {
		s := stores[i%2]
		wg.Go(func() {
			<-start
			if i%4 == 3 { // a follow-up message
				id := fmt.Sprintf("w%d", i%8)
				key := storetest.Key("bob", fmt.Sprintf("f%02d", i), "follow-up")
				key.Quota = quota
				msg := storetest.UserMessage(key.MessageID, strings.Repeat("f", 3<<19))
				_, _, _, errs[i] = s.Update(ctx, "bob", id, &key, tasks.Head, storetest.AppendMessage(msg, a2a.StateWorking))
				return
			}
			key := storetest.Key("bob", fmt.Sprintf("c%02d", i), "create")
			key.Quota = quota
			rec := storetest.NewRecord(fmt.Sprintf("c%02d", i), "bob", a2a.StateWorking, time.Now())
			rec.Task.History = []a2a.Message{storetest.UserMessage(key.MessageID, strings.Repeat("c", 400<<10))}
			_, _, errs[i] = s.Create(ctx, key, rec, []tasks.Event{storetest.StatusEvent(a2a.StateWorking)})
		})
	}
	close(start)
	wg.Wait()
	refused := 0
	for i, err := range errs {
		var qe *tasks.QuotaError
		switch {
		case err == nil:
		case errors.As(err, &qe) && qe.Which == tasks.QuotaBytes && qe.Limit == limit:
			refused++
		default:
			t.Errorf("write %d: %v", i, err)
		}
	}
	var n, used int64
	if err := stores[1].Usage(ctx, "bob", &n, &used); err != nil {
		t.Fatal(err)
	}
	if used > limit || refused == 0 {
		t.Fatalf("the owner's usage: %d bytes under a quota of %d (%d writes refused)", used, limit, refused)
	}
	for _, s := range stores {
		check(t, s)
	}
	t.Logf("%d bytes stored of %d, %d of %d writes refused", used, limit, refused, len(errs))
}
