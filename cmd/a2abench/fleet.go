package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// The fleet model (issue 31, target 2): what N replicas on machines of
// their own, sharing one PostgreSQL, could serve, projected from what one
// request cost in a measured run. Replicas share nothing but the
// database, so a fleet's throughput is the least of: the replicas' CPU (N
// times what one machine's cores give at a2ad's CPU per request), the
// database's CPU (its cores at PostgreSQL's CPU per request), the commits
// it sustains (pgbench -N's rate, when -pgbench ran, at a2ad's commits
// per request), and its connections (each replica keeps its pool and one
// listening connection, which must fit under max_connections).

// fleetSizes are the fleets the model projects.
var fleetSizes = []int{1, 2, 4, 8}

// fleetCosts is what one successful request cost, measured.
type fleetCosts struct {
	a2adCPU time.Duration // a2ad's CPU, all its processes
	pgCPU   time.Duration // PostgreSQL's CPU, all its processes
	commits float64
	wal     float64 // bytes
}

// fleetLimits are the machines the model places the fleet on.
type fleetLimits struct {
	replicaCores float64 // each replica's machine
	dbCores      float64 // the database's machine
	commitRate   float64 // commits/s the database sustains; 0 when not measured
	maxConns     int     // the database's max_connections; 0 when unknown
	connsPerRep  int     // a replica's pool and its listening connection
}

// fleetRow is the projection for one fleet size.
type fleetRow struct {
	replicas int
	rps      float64 // 0 when the connections do not fit
	bound    string  // what bounds it first
	walRate  float64 // bytes/s of WAL at rps
	conns    int
}

// projectFleet projects a fleet of n replicas.
func projectFleet(c fleetCosts, l fleetLimits, n int) fleetRow {
	row := fleetRow{replicas: n, conns: n * l.connsPerRep}
	if l.maxConns > 0 && row.conns > l.maxConns {
		row.bound = fmt.Sprintf("connections: %d > max_connections %d (lower --store-max-conns)", row.conns, l.maxConns)
		return row
	}
	row.rps, row.bound = math.Inf(1), "-"
	lower := func(rps float64, bound string) {
		if rps > 0 && rps < row.rps {
			row.rps, row.bound = rps, bound
		}
	}
	if c.a2adCPU > 0 {
		lower(float64(n)*l.replicaCores/c.a2adCPU.Seconds(), "replica CPU")
	}
	if c.pgCPU > 0 {
		lower(l.dbCores/c.pgCPU.Seconds(), "database CPU")
	}
	if c.commits > 0 && l.commitRate > 0 {
		lower(l.commitRate/c.commits, "database commits")
	}
	if math.IsInf(row.rps, 1) {
		row.rps = 0
	}
	row.walRate = row.rps * c.wal
	return row
}

// printFleet prints the model for each a2ad-pg run whose a2ad and
// PostgreSQL CPU were both measured.
func printFleet(w io.Writer, o options, results []result, pgb pgbenchResult, maxConns int) {
	l := fleetLimits{replicaCores: o.fleetCores, dbCores: o.fleetDBCores, maxConns: maxConns, connsPerRep: o.fleetPool + 1}
	if pgb.available {
		l.commitRate = pgb.tps
	}
	header := false
	for _, r := range results {
		u, n := r.stats.used, float64(r.stats.ok)
		if !u.cpuKnown || !u.pg.known || !u.pg.cpuKnown || n == 0 {
			continue
		}
		if !header {
			fmt.Fprintln(w)
			fmt.Fprintf(w, "fleet model: replicas on machines of %g cores each, one database on %g cores; %d connections each (a pool of %d and one listening)",
				l.replicaCores, l.dbCores, l.connsPerRep, o.fleetPool)
			if l.commitRate > 0 {
				fmt.Fprintf(w, "; commits at most pgbench -N's %.0f/s", l.commitRate)
			}
			fmt.Fprintln(w)
			header = true
		}
		c := fleetCosts{a2adCPU: time.Duration(float64(u.cpu) / n), pgCPU: time.Duration(float64(u.pg.cpu) / n),
			commits: u.pg.xacts / n, wal: u.pg.walBytes / n}
		fmt.Fprintf(w, "%s at %d clients: a2ad %s, PostgreSQL %s, %.2f commits, %.0f B of WAL per request\n",
			r.server, r.clients, us(c.a2adCPU), us(c.pgCPU), c.commits, c.wal)
		if len(u.procCPU) > 1 {
			per := make([]string, len(u.procCPU))
			for i, d := range u.procCPU {
				per[i] = strconv.FormatFloat(float64(d)/float64(u.cpu)*100, 'f', 0, 64) + "%"
			}
			fmt.Fprintf(w, "  a2ad's CPU by replica: %s\n", strings.Join(per, ", "))
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "replicas\treq/s\tbound by\tWAL MB/s\tconnections\t")
		for _, size := range fleetSizes {
			p := projectFleet(c, l, size)
			fmt.Fprintf(tw, "%d\t%.0f\t%s\t%.1f\t%d\t\n", p.replicas, p.rps, p.bound, p.walRate/1e6, p.conns)
		}
		tw.Flush()
	}
}

// us is d in whole microseconds.
func us(d time.Duration) string {
	return strconv.FormatInt(d.Microseconds(), 10) + "µs"
}

// maxConnections reads the server's max_connections; 0 when it cannot.
func maxConnections(ctx context.Context, dsn string) int {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var s string
	if err := conn.QueryRow(ctx, "SHOW max_connections").Scan(&s); err != nil {
		return 0
	}
	n, _ := strconv.Atoi(s)
	return n
}
