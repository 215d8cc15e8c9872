package pgstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
// every replica, would wait for the others' WAL flush in turn (measured,
// issue 31: half the throughput of calls through working at 16 clients).
// A store sends none while no other store follows the schema: each
// follower holds a shared session lock (followLock) on its listening
// connection, which the others look for in pg_locks before they send, at
// most once per followersTTL (unfollowedTTL while none did). A notice
// lost (a crash between the commit and the NOTIFY, a listener's lost
// connection, a follower that came meanwhile) is made up for by the
// followers' poll (tasks.SharedPoll), and a follower that begins
// listening polls.

var _ tasks.Shared = (*Store)(nil)

// maxPayload keeps a notice under PostgreSQL's 8000-byte limit.
const maxPayload = 7000

// followLock is the first key of the shared session lock a following
// store's listening connection holds (the second is the schema's): "a2af".
const followLock = 0x61326166

// followersTTL is how long a store goes by what it last read of the
// other stores following its schema; unfollowedTTL if it read that none
// did, so that one that starts following soon hears.
const (
	followersTTL  = time.Second
	unfollowedTTL = 100 * time.Millisecond
)

// followersQuery tells whether a session other than $2 (the store's own
// listener, 0 for none) holds followLock on the schema.
const followersQuery = `SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND granted
	AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND classid = $1::bigint::oid AND objid = hashtext(current_schema())::oid AND objsubid = 2 AND pid <> $2)`

// notices is what the store has to tell the others: the span of events
// committed per task since the last NOTIFY.
type notices struct {
	mu      sync.Mutex
	pending map[string][2]uint64
	wake    chan struct{}

	listener atomic.Uint32 // the process id of the store's listening connection; 0 for none
	// What the notify goroutine last read of the followers, and when.
	followed   bool
	followedAt time.Time
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
		if !s.followed(ctx) {
			continue
		}
		for _, p := range payloads(s.tag, pending) {
			_, _ = s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, s.channel, p)
		}
	}
}

// followed reports whether another store follows the schema, as read at
// most followersTTL ago; yes if it cannot tell. Only notify calls it.
func (s *Store) followed(ctx context.Context) bool {
	n := &s.notices
	ttl := unfollowedTTL
	if n.followed {
		ttl = followersTTL
	}
	if time.Since(n.followedAt) < ttl {
		return n.followed
	}
	var yes bool
	if err := s.pool.QueryRow(ctx, followersQuery, int64(followLock), n.listener.Load()).Scan(&yes); err != nil {
		return true
	}
	n.followed, n.followedAt = yes, time.Now()
	return yes
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
	// The lock first: the LISTEN stays the session's last statement, as
	// pg_stat_activity shows it.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock_shared($1, hashtext(current_schema()))`, int32(followLock)); err != nil {
		return false
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return false
	}
	s.notices.listener.Store(conn.PgConn().PID())
	defer s.notices.listener.Store(0)
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
