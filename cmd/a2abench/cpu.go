package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat.
const userHZ = 100

// parseStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may hold spaces, so fields are counted after its closing one.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat line without a command name: %.80q", b)
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("stat line with %d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("stat line: CPU time %q is not a tick count", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// usage is what a server has used so far, or in a window (minus).
type usage struct {
	cpu      time.Duration // utime and stime of its processes
	cpuKnown bool          // false when it cannot be read (not Linux, a process gone)
	// procCPU is cpu process by process (a2ad's replicas, in order).
	procCPU []time.Duration
	// From a2ad's /metrics (its admin listener): heap allocations
	// (go_memstats_mallocs_total), store commits and the writes grouped
	// into them (a2ad_store_writes_per_commit's count and sum).
	mallocs, commits, writes float64
	storeKnown               bool
	// pg is what PostgreSQL spent, for the a2ad-pg servers.
	pg pgCost
}

func (u usage) minus(v usage) usage {
	var procs []time.Duration
	if len(u.procCPU) == len(v.procCPU) {
		for i := range u.procCPU {
			procs = append(procs, u.procCPU[i]-v.procCPU[i])
		}
	}
	return usage{
		cpu: u.cpu - v.cpu, cpuKnown: u.cpuKnown && v.cpuKnown, procCPU: procs,
		mallocs: u.mallocs - v.mallocs, commits: u.commits - v.commits, writes: u.writes - v.writes,
		storeKnown: u.storeKnown && v.storeKnown,
		pg:         u.pg.minus(v.pg),
	}
}

// usage reads what the group's processes have used so far.
func (g *group) usage() usage {
	u := usage{cpuKnown: true, storeKnown: true}
	for _, s := range g.procs {
		t, err := cpuTime(s.cmd.Process.Pid)
		u.cpu += t
		u.procCPU = append(u.procCPU, t)
		u.cpuKnown = u.cpuKnown && err == nil
		m, err := scrapeMetrics(s.adminAddr)
		u.mallocs += m["go_memstats_mallocs_total"]
		u.commits += m["a2ad_store_writes_per_commit_count"]
		u.writes += m["a2ad_store_writes_per_commit_sum"]
		u.storeKnown = u.storeKnown && err == nil
	}
	if g.pg != nil {
		u.pg = g.pg.read()
	}
	return u
}

// metricsClient reads a2ad's /metrics on loopback.
var metricsClient = &http.Client{Timeout: 2 * time.Second}

// scrapeMetrics reads the samples without labels of the Prometheus text
// at http://addr/metrics, by name.
func scrapeMetrics(addr string) (map[string]float64, error) {
	if addr == "" {
		return nil, errors.New("no admin listener")
	}
	resp, err := metricsClient.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: HTTP %d", resp.StatusCode)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads "name value" lines of the Prometheus text format;
// comments and samples with labels are skipped.
func parseMetrics(r io.Reader) (map[string]float64, error) {
	m := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.ContainsRune(name, '{') {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: %s has value %q", name, value)
		}
		m[name] = v
	}
	return m, sc.Err()
}
