package pgstore

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"
)

// Channel is the store's NOTIFY channel.
func (s *Store) Channel() string { return s.channel }

// BackendCPU is the CPU time (user and system) the server's processes
// behind s's idle connections have used, from /proc: the server runs on
// this host in the benchmarks. ok is false if it cannot be read.
func (s *Store) BackendCPU(ctx context.Context) (d time.Duration, ok bool) {
	conns := s.pool.AcquireAllIdle(ctx)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for _, c := range conns {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(int(c.Conn().PgConn().PID())) + "/stat")
		if err != nil {
			return 0, false
		}
		// Fields 14 and 15 (utime, stime), after the command's ")".
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		for _, v := range f[11:13] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, false
			}
			d += time.Duration(n) * 10 * time.Millisecond // USER_HZ is 100 on Linux
		}
	}
	return d, len(conns) > 0
}

// Shards acquires n connections of s at once (connecting those the pool
// lacks) and returns their usage shards.
func (s *Store) Shards(ctx context.Context, n int) ([]int16, error) {
	var out []int16
	for range n {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		defer c.Release()
		out = append(out, shardOf(c.Conn()))
	}
	return out, nil
}

// MaxConnections reads the server's max_connections into n.
func (s *Store) MaxConnections(ctx context.Context, n *int) error {
	return s.pool.QueryRow(ctx, `SELECT current_setting('max_connections')::integer`).Scan(n)
}

// SetClock sets the clock of s's host (time.Now): a replica on a host
// whose clock is off.
func (s *Store) SetClock(now func() time.Time) { s.clock = now }

// Count counts owner's task rows into n (not its usage).
func (s *Store) Count(ctx context.Context, owner string, n *int) error {
	return s.pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE owner = $1`, []byte(owner)).Scan(n)
}

// Usage reads owner's usage: its task count and bytes.
func (s *Store) Usage(ctx context.Context, owner string, n, bytes *int64) error {
	return s.pool.QueryRow(ctx, `SELECT coalesce(sum(tasks), 0), coalesce(sum(bytes), 0) FROM usage WHERE owner = $1`,
		[]byte(owner)).Scan(n, bytes)
}
