package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/a2a"
	v03 "github.com/a2ad/a2ad/a2a/v03"
	v1 "github.com/a2ad/a2ad/a2a/v1"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/internal/pgtest"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
	"github.com/a2ad/a2ad/tasks/pgstore"
)

// The caller-chosen fields FuzzCallerIDsToStore puts its value in.
const (
	idMessageID = iota
	idContextID
	idTaskID
	idReference
	idMessageMetaKey
	idParamsMetaKey
	idFields
)

// idParams builds message/send (0.3) or SendMessage (1.0) params that
// call demo::echo, with value, a JSON string, in field (an idFields
// index); the other ids are plain.
func idParams(v10 bool, field int, value string) json.RawMessage {
	members := map[int]string{idMessageID: `"m1"`}
	members[field] = value
	var b strings.Builder
	b.WriteString(`{"message":{"messageId":` + members[idMessageID])
	if v10 {
		b.WriteString(`,"role":"ROLE_USER","parts":[{"data":{"skill":"demo::echo","input":{}}}]`)
	} else {
		b.WriteString(`,"kind":"message","role":"user","parts":[{"kind":"data","data":{"skill":"demo::echo","input":{}}}]`)
	}
	switch field {
	case idContextID:
		b.WriteString(`,"contextId":` + value)
	case idTaskID:
		b.WriteString(`,"taskId":` + value)
	case idReference:
		b.WriteString(`,"referenceTaskIds":[` + value + `]`)
	case idMessageMetaKey:
		b.WriteString(`,"metadata":{` + value + `:1}`)
	}
	b.WriteString(`}`)
	if field == idParamsMetaKey {
		b.WriteString(`,"metadata":{` + value + `:1}`)
	}
	b.WriteString(`}`)
	return json.RawMessage(b.String())
}

// idSubject is the service and the real store a fuzz input runs
// against.
type idSubject struct {
	svc   *tasks.Service
	store closingStore
}

// closingStore is either store, which the subject closes after each
// open.
type closingStore interface {
	tasks.Store
	Close() error
}

// idStoreOpener opens the store a fuzz input keeps its tasks in, the
// same one each time it is called within the input.
type idStoreOpener func(tb testing.TB) closingStore

func openIDSubject(tb testing.TB, open idStoreOpener) *idSubject {
	tb.Helper()
	store := open(tb)
	cat := functions.NewCatalog(fn(tb, "demo::echo", echoBackend()))
	svc := tasks.New(tasks.Config{Store: store, Catalog: func() *functions.Catalog { return cat }, Logger: zerolog.Nop()})
	if err := svc.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return &idSubject{svc: svc, store: store}
}

func (s *idSubject) close(tb testing.TB) {
	tb.Helper()
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.svc.Close(c); err != nil {
		tb.Error(err)
	}
	if err := s.store.Close(); err != nil {
		tb.Fatalf("closing the store: %v", err) // a key bbolt refuses fails here
	}
}

// FuzzCallerIDsToStore puts any bytes, of any length, in each id and
// metadata key a caller chooses, through both versions' decoders (which
// every binding reads its params with) to the service and a real bbolt
// store: each input is either refused with a located -32602, or its ids
// are within the caps, its task is stored, reads back with them, and
// does so again after the store is closed and reopened (a key bbolt
// cannot take would fail the close). sel picks the version (bit 7), the
// quoting (bit 6: the bytes as they are between quotes, else JSON
// escaped) and the field (the rest, modulo idFields).
func FuzzCallerIDsToStore(f *testing.F) {
	fuzzCallerIDs(f, func(t *testing.T) (idStoreOpener, string) {
		path := filepath.Join(t.TempDir(), "a2ad.db")
		return func(tb testing.TB) closingStore {
			store, err := boltstore.Open(path, boltstore.Options{})
			if err != nil {
				tb.Fatal(err)
			}
			return store
		}, "acme"
	})
}

// FuzzCallerIDsToPostgres is FuzzCallerIDsToStore on PostgreSQL: one
// schema for the run, each input as a caller of its own (so one input's
// messageId is not another's retry): PostgreSQL's text and jsonb refuse
// what bbolt takes (a NUL, say), so an id the decoders let through must
// fit them too.
func FuzzCallerIDsToPostgres(f *testing.F) {
	dsn := pgtest.Schema(f)
	var n atomic.Int64
	fuzzCallerIDs(f, func(*testing.T) (idStoreOpener, string) {
		return func(tb testing.TB) closingStore {
			store, err := pgstore.Open(context.Background(), dsn, pgstore.Options{})
			if err != nil {
				tb.Fatal(err)
			}
			return store
		}, "acme-" + strconv.FormatInt(n.Add(1), 10)
	})
}

// fuzzCallerIDs is the body of both: subject gives an input its store and
// the caller it sends as.
func fuzzCallerIDs(f *testing.F, subject func(t *testing.T) (idStoreOpener, string)) {
	for _, s := range []string{"m", "", strings.Repeat("x", a2a.MaxIDBytes), strings.Repeat("é", a2a.MaxIDBytes/2) + "x",
		strings.Repeat("k", 33<<10), "\x00", "\xff\xfe", "a\u2028b", `"\`, `\ud800`, "t1"} {
		for field := range idFields {
			f.Add(uint8(field), s)
			f.Add(uint8(field)|0xc0, s)
		}
	}
	f.Fuzz(func(t *testing.T, sel uint8, value string) {
		v10, rawBytes, field := sel&0x80 != 0, sel&0x40 != 0, int(sel&0x3f)%idFields
		quoted := `"` + value + `"`
		if !rawBytes {
			b, _ := json.Marshal(value)
			quoted = string(b)
		}
		params := idParams(v10, field, quoted)
		decode := v03.DecodeSendParams
		if v10 {
			decode = v1.DecodeSendParams
		}
		p, e := decode(params)
		if e != nil {
			if e.Code != a2a.CodeInvalidParams || !strings.HasPrefix(e.Message, "Invalid parameters: /") {
				t.Fatalf("decoding %q: %d %q, want a located -32602", params, e.Code, e.Message)
			}
			return
		}
		m := p.Message
		for _, id := range append([]string{m.MessageID, m.ContextID, m.TaskID}, m.ReferenceTaskIDs...) {
			if len(id) > a2a.MaxIDBytes {
				t.Fatalf("decoding %q accepted an id of %d bytes", params, len(id))
			}
		}
		for _, meta := range []map[string]any{m.Metadata, p.Metadata} {
			for k := range meta {
				if len(k) > a2a.MaxMetadataKeyBytes {
					t.Fatalf("decoding %q accepted a metadata key of %d bytes", params, len(k))
				}
			}
		}
		open, callerID := subject(t)
		s := openIDSubject(t, open)
		caller := tasks.Caller{ID: callerID}
		task, _, err := s.svc.Send(ctx, caller, p)
		if m.TaskID != "" { // no such task: a clear refusal, nothing stored
			if !errors.Is(err, tasks.ErrNotFound) {
				t.Fatalf("a message to the unknown task %q = %v, want ErrNotFound", m.TaskID, err)
			}
			s.close(t)
			return
		}
		if err != nil || task.Status.State != a2a.StateCompleted {
			t.Fatalf("send of %q = %v, %v", params, task, err)
		}
		check := func(s *idSubject, when string) {
			t.Helper()
			got, err := s.svc.Get(ctx, caller, task.ID, nil)
			if err != nil || len(got.History) == 0 {
				t.Fatalf("%s: get = %v, %v", when, got, err)
			}
			h := got.History[0]
			if h.MessageID != m.MessageID || (m.ContextID != "" && got.ContextID != m.ContextID) ||
				!reflect.DeepEqual(h.ReferenceTaskIDs, m.ReferenceTaskIDs) || !reflect.DeepEqual(h.Metadata, m.Metadata) {
				t.Fatalf("%s: stored message %+v (context %q), sent %+v", when, h, got.ContextID, m)
			}
			// A retry finds the task by its messageId.
			again, _, err := s.svc.Send(ctx, caller, p)
			if err != nil || again.ID != task.ID {
				t.Fatalf("%s: a retry = %v, %v; want task %s", when, again, err, task.ID)
			}
		}
		check(s, "stored")
		s.close(t)
		s = openIDSubject(t, open)
		check(s, "after a reopen")
		s.close(t)
	})
}
