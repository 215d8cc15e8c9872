package pgstore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
)

// seed fills the tables with 20,000 tasks of 100 owners (1% of them
// not terminal), three events, a message, an artifact and a key each, and
// 5,000 deliveries, and has the planner gather its statistics, so that
// its choice of plan is the one a real store gets.
const seed = `
INSERT INTO tasks (id, owner, context_id, state, function_id, terminal, version, seq, list_at, status_at, updated_at,
	history_len, art_ids, art_chunks, art_bytes, art_stored, stored, head)
SELECT ('t' || g)::bytea, ('o' || g % 100)::bytea, ('c' || g % 2000)::bytea,
	CASE WHEN g % 100 = 0 THEN 'working' WHEN g % 7 = 0 THEN 'failed' ELSE 'completed' END,
	('f' || g % 10)::bytea, g % 100 <> 0, 1, 3, g * 1000, g * 1000, g * 1000,
	1, '{a}', '{1}', '{10}', '{20}', 100, '{}'::bytea
FROM generate_series(1, 20000) g;
INSERT INTO events (task_id, seq, body) SELECT ('t' || g)::bytea, s, '{}'::bytea FROM generate_series(1, 20000) g, generate_series(1, 3) s;
INSERT INTO messages (task_id, n, body) SELECT ('t' || g)::bytea, 0, '{}'::bytea FROM generate_series(1, 20000) g;
INSERT INTO artifacts (task_id, i, j, body) SELECT ('t' || g)::bytea, 0, 0, '{}'::bytea FROM generate_series(1, 20000) g;
INSERT INTO idem (owner, message_id, task_id, hash) SELECT ('o' || g % 100)::bytea, ('m' || g)::bytea, ('t' || g)::bytea, '\x00'::bytea
FROM generate_series(1, 20000) g;
INSERT INTO outbox (id, task_id, config_id, seq, attempts, next_at, last_error, created_at, claimed_until)
SELECT g, ('t' || g)::bytea, 'c'::bytea, 1, 0, g * 1000, '', 0, 0 FROM generate_series(1, 5000) g;
INSERT INTO usage (owner, shard, tasks, bytes) SELECT ('o' || g)::bytea, 0, 200, 20000 FROM generate_series(0, 99) g;
ANALYZE;
`

// TestQueriesUseIndexes asks the planner how it runs each query of the
// store on a store of 20,000 tasks (seed): none reads a whole table of
// tasks, their rows or the outbox, and each uses the index it was made
// for. The planner is left its own choice (no enable_seqscan=off), with
// statistics gathered: a sequential scan here is what a real store would
// run.
func TestQueriesUseIndexes(t *testing.T) {
	s, err := Open(context.Background(), pgtest.Schema(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, seed); err != nil {
		t.Fatal(err)
	}
	read, readArgs := readQuery("o5", "t105", tasks.Whole)
	_, _, page, pageArgs := listQuery("o5", tasks.ListFilter{}, &tasks.Cursor{At: 10_000_000, TaskID: "t10000"}, 50, tasks.Whole)
	byCtx, byCtxArgs, byCtxPage, byCtxPageArgs := listQuery("o5", tasks.ListFilter{ContextID: "c5"}, nil, 50, tasks.Head)
	byState, byStateArgs, byStatePage, byStatePageArgs := listQuery("o5", tasks.ListFilter{State: a2a.StateWorking}, nil, 50, tasks.Head)
	since, sinceArgs, _, _ := listQuery("o5", tasks.ListFilter{StatusAfter: time.Unix(0, 19_000_000)}, nil, 50, tasks.Head)
	o5 := "o5"
	insp, inspArgs, stats, statsArgs := inspectQuery(tasks.TaskQuery{Owner: &o5}, "t9", 50, 10_000)
	now := int64(2_000_000)
	for _, c := range []struct {
		name, sql string
		args      []any
		index     string // an index the plan must use
	}{
		{"Get", read, readArgs, "tasks_pkey"},
		{"Lookup", lookupQuery, []any{[]byte("o5"), []byte("m105")}, "idem_pkey"},
		{"Events", eventsQuery, []any{[]byte("t105"), int64(1)}, "events_pkey"},
		{"Active", activeQuery, nil, "tasks_active"},
		{"Orphans", orphansQuery, []any{256, int64(15_000_000)}, "tasks_active"},
		{"ActiveStates", `SELECT state, count(*) FROM tasks WHERE NOT terminal GROUP BY state`, nil, "tasks_active"},
		{"List page after a cursor", page, pageArgs, "tasks_listing"},
		{"List by context", byCtx, byCtxArgs, "tasks_listing_context"},
		{"List page by context", byCtxPage, byCtxPageArgs, "tasks_listing_context"},
		{"List by state", byState, byStateArgs, "tasks_listing_state"},
		{"List page by state", byStatePage, byStatePageArgs, "tasks_listing_state"},
		{"List by status time", since, sinceArgs, "tasks_listing"},
		{"Expire", expireQuery, []any{int64(1_000_000), 256}, "tasks_expiry"},
		{"Due", dueQuery, []any{now, []byte("me"), int64(time.Second), 64}, "outbox_due"},
		{"Inspector.Tasks of an owner", insp, inspArgs, "tasks_owner"},
		{"Inspector.Tasks' scan", stats, statsArgs, "tasks_owner"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var plan []byte
			if err := s.pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+c.sql, c.args...).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			scans := planScans(t, plan)
			for _, sc := range scans {
				if sc.node == "Seq Scan" && big[sc.relation] {
					t.Errorf("sequential scan of %s; plan: %v", sc.relation, scans)
				}
			}
			if !strings.Contains(strings.Join(indexes(scans), " "), c.index) {
				t.Errorf("plan uses no %s: %v", c.index, scans)
			}
		})
	}
}

// big are the tables that grow with the tasks.
var big = map[string]bool{"tasks": true, "events": true, "messages": true, "artifacts": true, "idem": true, "outbox": true, "dead_letters": true}

type scan struct{ node, relation, index string }

// planScans returns the scans of an EXPLAIN (FORMAT JSON) plan.
func planScans(t *testing.T, b []byte) []scan {
	var doc []struct{ Plan planNode }
	if err := json.Unmarshal(b, &doc); err != nil || len(doc) != 1 {
		t.Fatalf("plan %s: %v", b, err)
	}
	var out []scan
	var walk func(n planNode)
	walk = func(n planNode) {
		if n.Relation != "" || n.Index != "" {
			out = append(out, scan{n.Node, n.Relation, n.Index})
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(doc[0].Plan)
	return out
}

type planNode struct {
	Node     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Plans    []planNode `json:"Plans"`
}

func indexes(scans []scan) []string {
	var out []string
	for _, s := range scans {
		if s.index != "" {
			out = append(out, s.index)
		}
	}
	return out
}
