package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProjectFleet: the fleet's throughput is the least of its bounds,
// named; connections that do not fit bound it to nothing.
func TestProjectFleet(t *testing.T) {
	c := fleetCosts{a2adCPU: 500 * time.Microsecond, pgCPU: 200 * time.Microsecond, commits: 2, wal: 3000}
	l := fleetLimits{replicaCores: 2, dbCores: 2, commitRate: 12000, maxConns: 100, connsPerRep: 17}
	for _, tc := range []struct {
		n     int
		rps   float64
		bound string
		conns int
	}{
		{1, 4000, "replica CPU", 17},      // 2 cores / 500µs
		{2, 6000, "database commits", 34}, // replicas 8000, database 10000, commits 12000/2
		{4, 6000, "database commits", 68},
		{8, 0, "connections: 136 > max_connections 100 (lower --store-max-conns)", 136},
	} {
		got := projectFleet(c, l, tc.n)
		if got.rps != tc.rps || got.bound != tc.bound || got.conns != tc.conns {
			t.Errorf("%d replicas: %.0f req/s bound by %q, %d connections; want %.0f, %q, %d", tc.n, got.rps, got.bound, got.conns, tc.rps, tc.bound, tc.conns)
		}
		if tc.rps > 0 && got.walRate != tc.rps*3000 {
			t.Errorf("%d replicas: WAL %.0f B/s, want %.0f", tc.n, got.walRate, tc.rps*3000)
		}
	}
	l.commitRate = 0 // pgbench did not run: the database's CPU bounds
	if got := projectFleet(c, l, 4); got.rps != 10000 || got.bound != "database CPU" {
		t.Errorf("4 replicas without a commit rate: %.0f req/s bound by %q, want 10000 by database CPU", got.rps, got.bound)
	}
}

// TestPrintFleet: the model is printed for a run whose a2ad and
// PostgreSQL CPU are known, and not for one whose are not.
func TestPrintFleet(t *testing.T) {
	run := func(server string, known bool) result {
		r := result{server: server, clients: 16}
		r.stats.ok = 1000
		r.stats.used = usage{cpu: 500 * time.Millisecond, cpuKnown: known, procCPU: []time.Duration{300 * time.Millisecond, 200 * time.Millisecond},
			pg: pgCost{known: true, cpuKnown: known, cpu: 200 * time.Millisecond, xacts: 2000, walBytes: 3e6}}
		return r
	}
	var b bytes.Buffer
	o := options{fleetCores: 2, fleetDBCores: 2, fleetPool: 16}
	printFleet(&b, o, []result{run("a2ad-pg", true), run("a2ad-pg2", false)}, pgbenchResult{available: true, tps: 12000}, 100)
	out := b.String()
	for _, want := range []string{
		"fleet model: replicas on machines of 2 cores each, one database on 2 cores; 17 connections each (a pool of 16 and one listening); commits at most pgbench -N's 12000/s",
		"a2ad-pg at 16 clients: a2ad 500µs, PostgreSQL 200µs, 2.00 commits, 3000 B of WAL per request",
		"  a2ad's CPU by replica: 60%, 40%\n",
		"2         6000   database commits",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the model lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "a2ad-pg2") {
		t.Errorf("a run without CPU figures is modelled:\n%s", out)
	}
}
