package boltstore_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
	"github.com/a2ad/a2ad/tasks/storetest"
)

// Benchmarks of appends to a task that holds much already (issue 13 item
// 4: an append costs what it adds). Each op is one Update of a task whose
// history (or artifact) holds n entries of 1 KiB when the benchmark
// starts; written-B/op is the bytes of the pages the commits wrote
// (bbolt's TxStats.PageAlloc), head-B the size of the task's value in the
// tasks bucket at the end. NoSync: the fsync is the same for every n, and
// not what these measure. Run with a fixed count, so that the history
// grows alike in every case:
//
//	go test -run '^$' -bench 'BenchmarkAppend' -benchtime 200x ./tasks/boltstore/
//
// BenchmarkSendWrites is here too: the writes of a send, for the cost of
// the layout on the hot path.

const appendEntry = 1024 // bytes of text per appended message or chunk

var appendSizes = []int{10, 100, 1000, 5000}

func openAppendBench(b *testing.B) *boltstore.Store {
	b.Helper()
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "a2ad.db"), boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// reportWrites reports written-B/op since before, and head-B of task t1.
func reportWrites(b *testing.B, s *boltstore.Store, before int64) {
	b.Helper()
	b.ReportMetric(float64(pageAlloc(s)-before)/float64(b.N), "written-B/op")
	b.ReportMetric(float64(headSize(b, s, "t1")), "head-B")
}

// BenchmarkAppendMessage: a follow-up message, as an input-required loop
// sends them: one message appended, its id bound, the task back to
// input-required.
func BenchmarkAppendMessage(b *testing.B) {
	text := strings.Repeat("y", appendEntry)
	for _, n := range appendSizes {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			s := openAppendBench(b)
			r := newRecord("t1", "o", a2a.StateInputRequired, time.Now())
			for i := range n {
				r.Task.History = append(r.Task.History, userMsg("h"+strconv.Itoa(i), text))
			}
			if _, _, err := s.Create(ctx, key("o", "m0", "first"), r, []tasks.Event{statusEvent(a2a.StateInputRequired)}); err != nil {
				b.Fatal(err)
			}
			before := pageAlloc(s)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				id := "a" + strconv.Itoa(i)
				k := key("o", id, id)
				if _, _, _, err := s.Update(ctx, "o", "t1", &k, tasks.Head, storetest.AppendMessage(userMsg(id, text), a2a.StateInputRequired)); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportWrites(b, s, before)
		})
	}
}

// BenchmarkAppendChunk: a streamed artifact chunk, as a function's
// progress reports it: one chunk appended to an artifact of n chunks.
func BenchmarkAppendChunk(b *testing.B) {
	text := strings.Repeat("z", appendEntry)
	for _, n := range appendSizes {
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			s := openAppendBench(b)
			r := newRecord("t1", "o", a2a.StateWorking, time.Now())
			if _, _, err := s.Create(ctx, key("o", "m0", "first"), r, []tasks.Event{statusEvent(a2a.StateWorking)}); err != nil {
				b.Fatal(err)
			}
			// The artifact as a stream leaves it: n chunks, each appended.
			chunk := storetest.ArtifactChunk("out", true, text)
			for range n {
				if _, _, _, err := s.Update(ctx, "o", "t1", nil, tasks.Head, chunk); err != nil {
					b.Fatal(err)
				}
			}
			before := pageAlloc(s)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, _, _, err := s.Update(ctx, "o", "t1", nil, tasks.Head, chunk); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportWrites(b, s, before)
		})
	}
}

// pageAlloc is the bytes of pages the store's commits have written.
func pageAlloc(s *boltstore.Store) int64 {
	st := s.DB().Stats()
	return st.TxStats.GetPageAlloc()
}

// BenchmarkSendWrites measures a send's two writes, CPU only (NoSync):
// create a task working with the user's message and input, then complete
// it with an artifact and its status, reading it whole for the answer.
func BenchmarkSendWrites(b *testing.B) {
	s := openAppendBench(b)
	in := json.RawMessage(`{"message":"hello"}`)
	msg := json.RawMessage(`{"skill":"demo::echo","input":{"message":"hello"}}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		id := "t" + strconv.Itoa(1000000+i)
		r := newRecord(id, "o", a2a.StateWorking, time.Now())
		r.Task.History = []a2a.Message{{MessageID: "m" + id, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.DataPart(msg)}}}
		r.Input, r.FunctionID = in, "demo::echo"
		if _, _, err := s.Create(ctx, key("o", "m"+id, id), r, []tasks.Event{statusEvent(a2a.StateSubmitted), statusEvent(a2a.StateWorking)}); err != nil {
			b.Fatal(err)
		}
		if _, _, _, err := s.Update(ctx, "o", id, nil, tasks.Whole, func(r *tasks.Record) ([]tasks.Event, error) {
			st := a2a.TaskStatus{State: a2a.StateCompleted}
			r.Task.Status = st
			art := a2a.Artifact{ArtifactID: "a" + id, Name: "demo::echo", Parts: []a2a.Part{a2a.DataPart(in)}}
			return []tasks.Event{{Artifact: &art, LastChunk: true}, {Status: &st}}, nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}
