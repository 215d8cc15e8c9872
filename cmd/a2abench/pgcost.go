package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgCost is what PostgreSQL has spent so far, or in a window (minus), for
// the a2ad-pg servers: the cost per call that bounds a fleet of replicas
// on one database (issue 31).
type pgCost struct {
	known bool // the statistics were read
	// xacts are the write transactions the server began, read as the
	// transaction ids it handed out (pg_snapshot_xmax of the current
	// snapshot, which hands out none itself): each is a commit that
	// waits for its WAL to be flushed, with synchronous_commit on.
	xacts float64
	// walBytes is the WAL written (pg_current_wal_lsn).
	walBytes float64
	// cpu is the CPU time of every postgres process on this machine
	// (the server, its backends, its WAL writer and checkpointer), from
	// /proc: known only when the server runs here.
	cpu      time.Duration
	cpuKnown bool
	// trips are the round trips a2ad's connections made, counted by a
	// proxy between them and the server (-pg-roundtrips): a client's
	// bytes that follow the server's answer (or open the connection)
	// start one.
	trips      float64
	tripsKnown bool
}

func (c pgCost) minus(d pgCost) pgCost {
	return pgCost{
		known: c.known && d.known, xacts: c.xacts - d.xacts, walBytes: c.walBytes - d.walBytes,
		cpu: c.cpu - d.cpu, cpuKnown: c.cpuKnown && d.cpuKnown,
		trips: c.trips - d.trips, tripsKnown: c.tripsKnown && d.tripsKnown,
	}
}

// pgProbe reads pgCost from the server a group's replicas use.
type pgProbe struct {
	dsn   string
	proxy *tripProxy // nil without -pg-roundtrips
}

// newPGProbe returns the probe of the server of dsn and the URL a2ad is to
// use: dsn itself, or with roundTrips the address of a counting proxy to
// the server, which close stops.
func newPGProbe(dsn string, roundTrips bool) (*pgProbe, string, error) {
	p := &pgProbe{dsn: dsn}
	if !roundTrips {
		return p, dsn, nil
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		return nil, "", errors.New("-pg-roundtrips: the PostgreSQL URL names no host:port to put a proxy before")
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "5432")
	}
	if p.proxy, err = startTripProxy(target); err != nil {
		return nil, "", err
	}
	u.Host = p.proxy.addr()
	return p, u.String(), nil
}

// close stops the proxy, if any.
func (p *pgProbe) close() {
	if p != nil && p.proxy != nil {
		p.proxy.close()
	}
}

// read reads what the server has spent so far; known is false when its
// statistics cannot be read.
func (p *pgProbe) read() pgCost {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var c pgCost
	conn, err := pgx.Connect(ctx, p.dsn)
	if err == nil {
		defer conn.Close(context.WithoutCancel(ctx))
		err = conn.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::float8,
			pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8`).Scan(&c.xacts, &c.walBytes)
	}
	c.known = err == nil
	if pgLocal(p.dsn) {
		c.cpu, c.cpuKnown = postgresCPU()
	}
	if p.proxy != nil {
		c.trips, c.tripsKnown = float64(p.proxy.trips.Load()), true
	}
	return c
}

// pgLocal reports whether the server of dsn is on this machine (a
// loopback host), so that its processes' CPU can be read.
func pgLocal(dsn string) bool {
	u, err := url.Parse(dsn)
	if err != nil {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback())
}

// postgresCPU sums the CPU time of the processes named postgres; false
// when there are none or /proc cannot be read.
func postgresCPU() (time.Duration, bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	var total time.Duration
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err != nil || string(comm) != "postgres\n" {
			continue
		}
		if t, err := cpuTime(pid); err == nil {
			total += t
			n++
		}
	}
	return total, n > 0
}

// tripProxy forwards TCP connections to a PostgreSQL server and counts
// round trips: on each connection, bytes from the client that follow
// bytes from the server (or are its first) start one. Pipelined messages
// sent before any answer count once, as they cost one wait.
type tripProxy struct {
	ln     net.Listener
	target string
	trips  atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func startTripProxy(target string) (*tripProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &tripProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *tripProxy) addr() string { return p.ln.Addr().String() }

func (p *tripProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, s) {
			return
		}
		p.wg.Add(1)
		go p.pipe(c, s)
	}
}

// track records c and s to close with the proxy; false if it is closed.
func (p *tripProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies both ways between client c and server s until either ends.
func (p *tripProxy) pipe(c, s net.Conn) {
	defer p.wg.Done()
	var waiting atomic.Bool // the client has sent since the server's last bytes
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyCounted(c, s, func() { waiting.Store(false) })
		c.Close()
	}()
	copyCounted(s, c, func() {
		if !waiting.Swap(true) {
			p.trips.Add(1)
		}
	})
	s.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// copyCounted copies from src to dst, calling each after every read that
// returned bytes, before they are written.
func copyCounted(dst io.Writer, src io.Reader, each func()) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			each()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *tripProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

// printPGCost prints, for each run of an a2ad-pg server, what PostgreSQL
// spent per successful request, against issue 31's targets for echo at 16
// clients: CPU <= 0.16 ms, WAL <= 2 KB, <= 1 commit; a call through
// working (a2ad-pg-working) <= 0.45 ms of CPU and <= 3 round trips.
func printPGCost(w io.Writer, results []result) {
	var rows []result
	for _, r := range results {
		if r.stats.used.pg.known && r.stats.ok > 0 {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "PostgreSQL per request (issue 31 targets at 16 clients: echo cpu <= 160µs, WAL <= 2048 B, commits <= 1; working cpu <= 450µs, round trips <= 3)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "server\tclients\tpg cpu/req\tcommits/req\tWAL B/req\tround trips/req\ta2ad cpu/req\t")
	for _, r := range rows {
		pg, n := r.stats.used.pg, float64(r.stats.ok)
		cpu, trips := "-", "-"
		if pg.cpuKnown {
			cpu = strconv.FormatFloat(float64(pg.cpu)/n/float64(time.Microsecond), 'f', 0, 64) + "µs"
		}
		if pg.tripsKnown {
			trips = strconv.FormatFloat(pg.trips/n, 'f', 1, 64)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.2f\t%.0f\t%s\t%s\t\n", r.server, r.clients, cpu, pg.xacts/n, pg.walBytes/n, trips, r.stats.cpuPerOp())
	}
	tw.Flush()
}
