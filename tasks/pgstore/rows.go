package pgstore

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/record"
)

// query builds a statement's arguments: arg adds one and returns its
// placeholder, so that optional clauses number theirs right.
type query struct{ args []any }

func (q *query) arg(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

// headCols are the columns of a task row that every read takes, in the
// order of row.dest.
const headCols = `t.id, t.owner, t.runner, t.version, t.seq, t.history_len, t.art_ids, t.art_chunks, t.art_bytes, t.art_stored,
	t.stored, coalesce(octet_length(t.input), 0), t.head`

// columns is the select list of a task row (alias t): headCols, then its
// last history messages and its artifacts as sc asks for them, read only
// where guard (a condition; "" for none) holds, then its input if input.
func columns(q *query, sc tasks.Scope, guard string, input bool) string {
	hist, arts := "NULL::bytea[]", "NULL::bytea[]"
	if sc.History != 0 {
		n := int32(math.MaxInt32)
		if sc.History > 0 {
			n = int32(min(sc.History, math.MaxInt32))
		}
		from := `m.task_id = t.id AND m.n >= t.history_len - ` + q.arg(n)
		hist = `(SELECT array_agg(m.body ORDER BY m.n) FROM task_messages m WHERE ` + from + `)`
		if sc.HistoryBytes > 0 {
			// The newest messages that fit: octet_length reads a stored
			// value's size from its header, never the value itself.
			hist = `(SELECT array_agg(h.body ORDER BY h.n) FROM (SELECT m.n, m.body, sum(octet_length(m.body)) OVER (ORDER BY m.n DESC) AS used
				FROM task_messages m WHERE ` + from + `) h WHERE h.used <= ` + q.arg(sc.HistoryBytes) + `)`
		}
	}
	if sc.Artifacts {
		arts = `(SELECT array_agg(a.body ORDER BY a.i, a.j) FROM task_artifacts a WHERE a.task_id = t.id)`
	}
	if guard != "" {
		hist = "CASE WHEN " + guard + " THEN " + hist + " END"
		arts = "CASE WHEN " + guard + " THEN " + arts + " END"
	}
	cols := headCols + ", " + hist + ", " + arts
	if input {
		cols += ", t.input"
	}
	return cols
}

// index is a task's artifacts' index: per artifact, in order, its id, how
// many rows it has (the artifact, then the chunks appended to it), what
// its parts take (tasks.PartBytes) and what its rows take.
type index struct {
	ids    [][]byte
	chunks []int32
	bytes  []int64
	stored []int64
}

// clone is a copy of x that a change may modify.
func (x index) clone() index {
	return index{
		ids:    append([][]byte(nil), x.ids...),
		chunks: append([]int32(nil), x.chunks...),
		bytes:  append([]int64(nil), x.bytes...),
		stored: append([]int64(nil), x.stored...),
	}
}

// sizes is x as a record shows it.
func (x index) sizes() []tasks.ArtifactSize {
	if len(x.ids) == 0 {
		return nil
	}
	out := make([]tasks.ArtifactSize, len(x.ids))
	for i := range x.ids {
		out[i] = tasks.ArtifactSize{ID: string(x.ids[i]), Bytes: x.bytes[i]}
	}
	return out
}

// row is a task row as columns selects it.
type row struct {
	id, owner     []byte
	runner        string
	version, seq  int64
	historyLen    int32
	idx           index
	stored        int64
	inputLen      int64
	head          []byte
	history, arts [][]byte
	input         []byte
}

// size is what rw's head, history and artifacts take, as stored.
func (rw *row) size() int64 {
	n := len(rw.head)
	for _, b := range rw.history {
		n += len(b)
	}
	for _, b := range rw.arts {
		n += len(b)
	}
	return int64(n)
}

// dest is what a scan of columns fills; input if they include the input.
func (rw *row) dest(input bool) []any {
	d := []any{&rw.id, &rw.owner, &rw.runner, &rw.version, &rw.seq, &rw.historyLen, &rw.idx.ids, &rw.idx.chunks, &rw.idx.bytes,
		&rw.idx.stored, &rw.stored, &rw.inputLen, &rw.head, &rw.history, &rw.arts}
	if input {
		d = append(d, &rw.input)
	}
	return d
}

// scanRows scans every row of rows (columns, with input if input).
func scanRows(rows pgx.Rows, input bool) ([]*row, error) {
	defer rows.Close()
	var out []*row
	for rows.Next() {
		rw := new(row)
		if err := rows.Scan(rw.dest(input)...); err != nil {
			return nil, err
		}
		out = append(out, rw)
	}
	return out, rows.Err()
}

// record decodes rw: its head, the history and artifacts read with it,
// and its input if read.
func (rw *row) record() (*tasks.Record, error) {
	r, err := record.DecodeHead(rw.head)
	if err != nil {
		return nil, fmt.Errorf("decode task %q: %w", rw.id, err)
	}
	r.Owner, r.Runner, r.Seq, r.HistoryLen = string(rw.owner), rw.runner, uint64(rw.seq), int(rw.historyLen)
	for _, b := range rw.history {
		m, err := record.DecodeMessage(b, record.IDsOf(&r.Task))
		if err != nil {
			return nil, fmt.Errorf("decode a message of task %q: %w", rw.id, err)
		}
		r.Task.History = append(r.Task.History, m)
	}
	if r.Task.Artifacts, err = rw.artifacts(); err != nil {
		return nil, err
	}
	if len(rw.input) > 0 {
		r.Input = append([]byte(nil), rw.input...)
	}
	return r, nil
}

// artifacts assembles the artifacts read: per the index, each
// artifact's row, then the parts appended to it.
func (rw *row) artifacts() ([]a2a.Artifact, error) {
	if rw.arts == nil {
		return nil, nil
	}
	var out []a2a.Artifact
	rest := rw.arts
	for i, n := range rw.idx.chunks {
		if int(n) > len(rest) || n < 1 {
			return nil, fmt.Errorf("task %q: artifact %d has %d of its %d rows", rw.id, i, len(rest), n)
		}
		a, err := record.DecodeArtifact(rest[0])
		if err != nil {
			return nil, fmt.Errorf("decode artifact %d of task %q: %w", i, rw.id, err)
		}
		for _, b := range rest[1:n] {
			ps, err := record.DecodeChunk(b)
			if err != nil {
				return nil, fmt.Errorf("decode artifact %d of task %q: %w", i, rw.id, err)
			}
			a.Parts = append(a.Parts, ps...)
		}
		out = append(out, a)
		rest = rest[n:]
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("task %q: %d artifact rows beyond its index", rw.id, len(rest))
	}
	return out, nil
}

// taskWhere is the condition that a task row is id's.
func taskWhere(q *query, id string) string { return "t.id = " + q.arg([]byte(id)) }

// ownerGuard is the condition that a task row is owner's.
func ownerGuard(q *query, owner string) string { return "t.owner = " + q.arg([]byte(owner)) }

// selectTasks is a statement that reads the task rows where cond holds.
func selectTasks(cols, cond, rest string) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	b.WriteString(cols)
	b.WriteString(" FROM tasks t WHERE ")
	b.WriteString(cond)
	b.WriteString(rest)
	return b.String()
}
