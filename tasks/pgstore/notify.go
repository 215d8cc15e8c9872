package pgstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2ad/a2ad/tasks"
)

// Replicas on one schema tell each other of their commits with NOTIFY on
// a channel named for the schema (notices are database-wide): each
// payload is this store's tag, then a line "id first last" per task
// whose events a commit added. Notices are sent just after the commit,
// merged per task, from one goroutine: a NOTIFY inside the committing
// transaction would take PostgreSQL's notify lock from before its commit
// record is flushed until it ends, so every commit that notifies, of
// every replica, would wait for the others' WAL flush in turn. A notice
// lost (a crash between the commit and the NOTIFY, a listener's lost
// connection) is made up for by the followers' poll (tasks.SharedPoll).

var _ tasks.Shared = (*Store)(nil)

// maxPayload keeps a notice under PostgreSQL's 8000-byte limit.
const maxPayload = 7000

// notices is what the store has to tell the others: the span of events
// committed per task since the last NOTIFY.
type notices struct {
	mu      sync.Mutex
	pending map[string][2]uint64
	wake    chan struct{}
}

// channelName is the notice channel of schema: "a2ad_events_" and the
// schema, or a hash of it if the name would pass 63 bytes.
func channelName(schema string) string {
	const prefix = "a2ad_events_"
	if len(prefix)+len(schema) <= 63 {
		return prefix + schema
	}
	h := fnv.New64a()
	h.Write([]byte(schema))
	return prefix + hex.EncodeToString(h.Sum(nil))
}

// announce queues a notice of evs, just committed to task id.
func (s *Store) announce(id string, evs []tasks.Event) {
	if len(evs) == 0 || len(id) > maxPayload/2 {
		return
	}
	span := [2]uint64{evs[0].Seq, evs[len(evs)-1].Seq}
	n := &s.notices
	n.mu.Lock()
	if p, ok := n.pending[id]; ok {
		span = [2]uint64{min(p[0], span[0]), max(p[1], span[1])}
	}
	n.pending[id] = span
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// notify sends the queued notices until ctx ends. A NOTIFY that fails is
// dropped: the followers' poll makes up for it.
func (s *Store) notify(ctx context.Context) {
	n := &s.notices
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.wake:
		}
		n.mu.Lock()
		pending := n.pending
		n.pending = make(map[string][2]uint64, len(pending))
		n.mu.Unlock()
		for _, p := range payloads(s.tag, pending) {
			_, _ = s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, s.channel, p)
		}
	}
}

// payloads packs pending into as few notices as fit.
func payloads(tag string, pending map[string][2]uint64) []string {
	var out []string
	var b strings.Builder
	for id, span := range pending {
		line := fmt.Sprintf("\n%s %d %d", id, span[0], span[1])
		if b.Len() > 0 && b.Len()+len(line) > maxPayload {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() == 0 {
			b.WriteString(tag)
		}
		b.WriteString(line)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// parse calls fn with each line of payload, unless the notice is this
// store's own (tag).
func parse(payload, tag string, fn func(id string, first, last uint64)) {
	from, rest, _ := strings.Cut(payload, "\n")
	if from == tag {
		return
	}
	for line := range strings.SplitSeq(rest, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		first, err1 := strconv.ParseUint(f[1], 10, 64)
		last, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 == nil && err2 == nil {
			fn(f[0], first, last)
		}
	}
}

// Follow implements tasks.Shared: one connection of the store's own
// LISTENs for the other stores' notices until Close. When it is lost it
// connects again, backing off up to 5s, and once listening again calls fn
// with id "" (notices were lost meanwhile).
func (s *Store) Follow(fn func(id string, first, last uint64)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		backoff := 50 * time.Millisecond
		for s.ctx.Err() == nil {
			if s.listen(s.ctx, fn) {
				backoff = 50 * time.Millisecond
			}
			select {
			case <-s.ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
		}
	}()
}

// listen listens on one connection until it fails or ctx ends; listening
// reports whether it got as far as listening.
func (s *Store) listen(ctx context.Context, fn func(id string, first, last uint64)) (listening bool) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return false
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return false
	}
	fn("", 0, 0)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true
		}
		parse(n.Payload, s.tag, fn)
	}
}

// Seqs implements tasks.Shared, in one statement.
func (s *Store) Seqs(ctx context.Context, ids []string) (map[string]uint64, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	keys := make([][]byte, len(ids))
	for i, id := range ids {
		keys[i] = []byte(id)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, seq FROM tasks WHERE id = ANY($1)`, keys)
	if err != nil {
		return nil, s.failed(err)
	}
	defer rows.Close()
	out := make(map[string]uint64, len(ids))
	for rows.Next() {
		var id []byte
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return nil, s.failed(err)
		}
		out[string(id)] = uint64(seq)
	}
	return out, s.failed(rows.Err())
}
