package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strconv"
	"time"

	"github.com/a2ad/a2ad/a2a"
)

// Page sizes of a task listing.
const (
	DefaultPageSize = 50
	MaxPageSize     = 100
)

// Errors of a task listing. The protocol edge turns both into -32602,
// naming the page token field of its protocol version.
var (
	// ErrPageToken: the page token is not one this server issued.
	ErrPageToken = errors.New("malformed page token")
	// ErrPageTokenQuery: the page token was issued for another query
	// (other filters, or another caller).
	ErrPageTokenQuery = errors.New("page token of another query")
)

// ListFilter selects tasks of one owner. The zero value selects all.
type ListFilter struct {
	ContextID string        // "" means any context
	State     a2a.TaskState // "" means any state
	// StatusAfter, when not zero, keeps the tasks whose status timestamp
	// is at or after it.
	StatusAfter time.Time
}

// StatusBound is StatusAfter in Unix nanoseconds (clamped as ListTime
// clamps), 0 when it is zero.
func (f ListFilter) StatusBound() uint64 { return unixNanos(f.StatusAfter) }

// Filtered reports whether f selects fewer than all tasks.
func (f ListFilter) Filtered() bool {
	return f.ContextID != "" || f.State != "" || !f.StatusAfter.IsZero()
}

// Cursor is a position in an owner's tasks, as a listing orders them:
// by list time, newest first, then by task id, highest first. A listing
// that starts after a cursor returns the tasks below it.
type Cursor struct {
	// At is the task's list time in Unix nanoseconds: its last update,
	// or its status timestamp if that is later (see ListTime).
	At     uint64
	TaskID string
}

// ListTime is the time a listing orders rec by, in Unix nanoseconds: its
// UpdatedAt, or its status timestamp if that is later (a2ad stamps the
// status before the update, so it never is, but the listing's early stop
// on StatusAfter relies on the order). Times before 1970 count as 0.
func ListTime(rec *Record) uint64 {
	return max(unixNanos(rec.UpdatedAt), StatusTime(rec.Task.Status))
}

// StatusTime is st's timestamp in Unix nanoseconds; 0 when it is missing,
// unparsable or before 1970.
func StatusTime(st a2a.TaskStatus) uint64 {
	if st.Timestamp == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, st.Timestamp)
	if err != nil {
		return 0
	}
	return unixNanos(t)
}

// UnixNanos is t in Unix nanoseconds, clamped to the range of uint64 that
// int64 nanoseconds cover (1970 to 2262): times before 1970 are 0.
func UnixNanos(t time.Time) uint64 { return unixNanos(t) }

func unixNanos(t time.Time) uint64 {
	if t.IsZero() || t.Year() < 1970 {
		return 0
	}
	if t.Year() > 2261 {
		return 1<<63 - 1
	}
	return uint64(t.UnixNano())
}

// ListQuery is a request for a page of the caller's tasks.
type ListQuery struct {
	ListFilter
	// PageSize is how many tasks a page holds at most: 1 to MaxPageSize,
	// 0 meaning DefaultPageSize. The protocol decoders reject other
	// values; List clamps them.
	PageSize int
	// PageToken continues a listing where the previous page ended; ""
	// starts from the newest task.
	PageToken string
	// HistoryLength keeps at most that many of the latest history
	// messages of each task (within Config.HistoryReadBytes); nil and 0
	// keep none.
	HistoryLength *int
	// IncludeArtifacts keeps the tasks' artifacts; by default they are
	// left out.
	IncludeArtifacts bool
}

// ListPage is one page of a listing.
type ListPage struct {
	Tasks []a2a.Task
	// TotalSize is how many of the caller's tasks match the filter, on
	// every page (not only those left after the page token).
	TotalSize int
	// PageSize is the page size the query asked for (or the default).
	PageSize int
	// NextPageToken continues the listing; "" on the last page.
	NextPageToken string
}

// List returns a page of caller's tasks that match q, newest update
// first; a page ends early, with a token to go on, at
// Config.ListPageBytes. A task created or updated while a client pages through its list
// moves above the pages already read: it is neither repeated nor does it
// shift the later pages. Errors: ErrPageToken, ErrPageTokenQuery.
func (s *Service) List(ctx context.Context, caller Caller, q ListQuery) (ListPage, error) {
	size := q.PageSize
	switch {
	case size <= 0:
		size = DefaultPageSize
	case size > MaxPageSize:
		size = MaxPageSize
	}
	digest := queryDigest(caller.ID, q.ListFilter)
	var after *Cursor
	if q.PageToken != "" {
		c, err := decodePageToken(q.PageToken, digest)
		if err != nil {
			return ListPage{}, err
		}
		after = &c
	}
	// A page leaves the history out unless asked for it (the protocol
	// leaves the default to the server): a page of tasks with long
	// histories is what one read of them would cost, times the page.
	hl := q.HistoryLength
	if hl == nil {
		hl = new(int)
	}
	sc := s.ans.scope(hl, q.IncludeArtifacts)
	sc.ListBytes = s.cfg.ListPageBytes
	recs, total, next, err := s.store.List(ctx, caller.ID, q.ListFilter, after, size, sc)
	if err != nil {
		return ListPage{}, err
	}
	page := ListPage{Tasks: make([]a2a.Task, len(recs)), TotalSize: total, PageSize: size}
	for i, r := range recs {
		page.Tasks[i] = r.Task
	}
	if next != nil {
		page.NextPageToken = encodePageToken(*next, digest)
	}
	return page, nil
}

// A page token is base64url (unpadded) of: a version byte (1), the first
// 8 bytes of the query digest, the cursor's time (8 bytes, big-endian),
// and the task id prefixed by its length (uvarint). The id is never split
// on a separator, whatever bytes it holds; the digest makes a token fail
// for another caller or other filters instead of paging them wrongly.

const pageTokenVersion = 1

func encodePageToken(c Cursor, digest [8]byte) string {
	b := make([]byte, 0, 1+8+8+binary.MaxVarintLen64+len(c.TaskID))
	b = append(b, pageTokenVersion)
	b = append(b, digest[:]...)
	b = binary.BigEndian.AppendUint64(b, c.At)
	b = binary.AppendUvarint(b, uint64(len(c.TaskID)))
	b = append(b, c.TaskID...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodePageToken(tok string, digest [8]byte) (Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) < 1+8+8+1 || b[0] != pageTokenVersion {
		return Cursor{}, ErrPageToken
	}
	at := binary.BigEndian.Uint64(b[9:17])
	n, k := binary.Uvarint(b[17:])
	if k <= 0 || n == 0 || n != uint64(len(b)-17-k) {
		return Cursor{}, ErrPageToken
	}
	c := Cursor{At: at, TaskID: string(b[17+k:])}
	if encodePageToken(c, [8]byte(b[1:9])) != tok {
		return Cursor{}, ErrPageToken // not in its one encoding
	}
	if [8]byte(b[1:9]) != digest {
		return Cursor{}, ErrPageTokenQuery
	}
	return c, nil
}

// queryDigest identifies the caller and the filter of a listing.
func queryDigest(owner string, f ListFilter) [8]byte {
	h := sha256.New()
	var b []byte
	for _, s := range []string{owner, f.ContextID, string(f.State)} {
		b = binary.AppendUvarint(b[:0], uint64(len(s)))
		h.Write(b)
		h.Write([]byte(s))
	}
	b = strconv.AppendUint(b[:0], unixNanos(f.StatusAfter), 10)
	if f.StatusAfter.IsZero() {
		b = append(b[:0], '-')
	}
	h.Write(b)
	var d [8]byte
	copy(d[:], h.Sum(nil))
	return d
}
