package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/a2ad/a2ad/internal/pgdsn"
	"github.com/jackc/pgx/v5"
)

// benchPostgres is the server the Postgres runs use: A2AD_BENCH_POSTGRES,
// else the tests' server (A2AD_TEST_POSTGRES, else the project's).
func benchPostgres() string {
	if dsn := os.Getenv("A2AD_BENCH_POSTGRES"); dsn != "" {
		return dsn
	}
	return pgdsn.DSN()
}

// pgHost is the host and port of dsn, for messages: never its user or
// password.
func pgHost(dsn string) string { return pgdsn.Host(dsn) }

// pgExec runs sql on the server of dsn.
func pgExec(ctx context.Context, dsn, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL at %s: %w", pgHost(dsn), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// newSchema creates a schema named prefix_<random> on the server of dsn
// and returns its name and drop, which drops it with everything in it
// (it runs on a fresh context: cleanup must outlive an interrupt).
func newSchema(ctx context.Context, dsn, prefix string) (string, func() error, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := prefix + "_" + hex.EncodeToString(b[:])
	if err := pgExec(ctx, dsn, "CREATE SCHEMA "+name); err != nil {
		return "", nil, err
	}
	drop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return pgExec(ctx, dsn, "DROP SCHEMA "+name+" CASCADE")
	}
	return name, drop, nil
}

// withSearchPath is dsn with schema as its search_path (where a2ad puts
// its tables) and as its application_name (how -perf finds the run's
// backends in pg_stat_activity).
func withSearchPath(dsn, schema string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", errors.New("the PostgreSQL URL does not parse")
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("application_name", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// pgbenchArgs is the run recorded as the floor of what the server can
// commit: simple-update transactions (-N: no contended branch and teller
// rows) from 16 clients for 10 seconds.
var pgbenchArgs = []string{"-N", "-c", "16", "-T", "10"}

// pgbenchDuration is how long pgbenchArgs runs, for the run's plan.
const pgbenchDuration = 10 * time.Second

// pgbenchResult is what pgbench printed.
type pgbenchResult struct {
	tps       float64
	latency   string // "latency average", as printed
	skipped   string // why it did not run, when it did not
	available bool
}

var (
	tpsLine     = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \(without initial connection time\)`)
	latencyLine = regexp.MustCompile(`(?m)^latency average = ([0-9.]+ ms)`)
)

// runPgbench initialises pgbench's tables in a schema of its own on the
// server of dsn, runs pgbenchArgs against them and drops the schema.
// Without a pgbench binary it says so and returns no error: the other
// servers still run.
func runPgbench(ctx context.Context, dsn string) (pgbenchResult, error) {
	bin, err := exec.LookPath("pgbench")
	if err != nil {
		return pgbenchResult{skipped: "pgbench not found on PATH (Debian: apt-get install postgresql-client)"}, nil
	}
	schema, drop, err := newSchema(ctx, dsn, "a2abench_pgbench")
	if err != nil {
		return pgbenchResult{}, err
	}
	res, err := pgbenchIn(ctx, bin, dsn, schema)
	return res, errors.Join(err, drop())
}

func pgbenchIn(ctx context.Context, bin, dsn, schema string) (pgbenchResult, error) {
	// libpq takes the schema from PGOPTIONS; a URL's search_path query
	// is pgx's, not libpq's.
	pgbench := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, bin, append(args, dsn)...)
		cmd.Env = append(os.Environ(), "PGOPTIONS=-c search_path="+schema)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("pgbench %v against %s: %w\n%.2000s", args, pgHost(dsn), err, out)
		}
		return string(out), nil
	}
	if _, err := pgbench("-i", "-q"); err != nil {
		return pgbenchResult{}, err
	}
	out, err := pgbench(pgbenchArgs...)
	if err != nil {
		return pgbenchResult{}, err
	}
	return parsePgbench(out)
}

// parsePgbench reads pgbench's report: its tps and average latency.
func parsePgbench(out string) (pgbenchResult, error) {
	m := tpsLine.FindStringSubmatch(out)
	if m == nil {
		return pgbenchResult{}, fmt.Errorf("pgbench printed no tps line:\n%.2000s", out)
	}
	tps, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return pgbenchResult{}, fmt.Errorf("pgbench tps %q: %w", m[1], err)
	}
	res := pgbenchResult{tps: tps, available: true}
	if l := latencyLine.FindStringSubmatch(out); l != nil {
		res.latency = l[1]
	}
	return res, nil
}

// Targets of issue 15 for the Postgres store, in send mode, printed
// against the results.
const (
	targetPgPerSDK     = 3.0                   // a2ad-pg req/s over the SDK's ...
	targetPgP99        = 20 * time.Millisecond // ... and a2ad-pg's p99 ...
	targetPgClients    = 16                    // ... at this many clients
	targetPgPerPgbench = 0.5                   // a2ad-pg req/s over pgbench -N tps
)

// printPostgres prints pgbench's result and, in send mode, a2ad on
// PostgreSQL against the targets: a2ad-pg over the SDK and over
// pgbench, its p99, and a2ad-pg2 over a2ad-pg (two replicas should not
// lose throughput).
func printPostgres(w io.Writer, o options, results []result, pgb pgbenchResult) {
	if o.pgbench {
		fmt.Fprintln(w)
		switch {
		case pgb.available:
			fmt.Fprintf(w, "pgbench %s: %.0f tps, latency average %s\n", strings.Join(pgbenchArgs, " "), pgb.tps, pgb.latency)
		default:
			fmt.Fprintf(w, "pgbench: did not run: %s\n", pgb.skipped)
		}
	}
	if o.mode != "send" || !contains(o.servers, "a2ad-pg") {
		return
	}
	byKey := map[string]stats{}
	for _, r := range results {
		byKey[r.server+"/"+strconv.Itoa(r.clients)] = r.stats
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "clients\ta2ad-pg/sdk\ttarget >= %.0fx\ta2ad-pg p99\ttarget <= %s at %d\ta2ad-pg/pgbench\ttarget >= %.1fx\ta2ad-pg2/a2ad-pg\ttarget >= 1x\ta2ad-pg/a2ad\t\n",
		targetPgPerSDK, ms(targetPgP99), targetPgClients, targetPgPerPgbench)
	for _, c := range o.clients {
		key := strconv.Itoa(c)
		pg, ok := byKey["a2ad-pg/"+key]
		if !ok {
			continue
		}
		sdkT, p99T, pgbT, pg2T := "-", "-", "-", "-"
		if sdk, ok := byKey["sdk/"+key]; ok && sdk.rps() > 0 {
			sdkT = metOrMissed(pg.rps() >= targetPgPerSDK*sdk.rps())
		}
		if c == targetPgClients && pg.ok > 0 {
			p99T = metOrMissed(pg.p99 <= targetPgP99)
		}
		pgbR := "-"
		if pgb.available && pgb.tps > 0 {
			pgbR = fmt.Sprintf("%.2fx", pg.rps()/pgb.tps)
			pgbT = metOrMissed(pg.rps() >= targetPgPerPgbench*pgb.tps)
		}
		pg2R := "-"
		if pg2, ok := byKey["a2ad-pg2/"+key]; ok && pg.rps() > 0 {
			pg2R = ratio(pg2, byKey, "a2ad-pg/"+key, stats.rps)
			pg2T = metOrMissed(pg2.rps() >= pg.rps())
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c,
			ratio(pg, byKey, "sdk/"+key, stats.rps), sdkT, ms(pg.p99), p99T, pgbR, pgbT,
			pg2R, pg2T,
			ratio(pg, byKey, "a2ad/"+key, stats.rps))
	}
	tw.Flush()
}
