package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/internal/pgtest"
)

// progressScript writes 12 progress notes "<i> <unix ns>", 150 ms apart,
// then its result.
const progressScript = `#!/bin/sh
cat >/dev/null
i=1
while [ $i -le 12 ]; do
	printf '{"a2a.progress": "%d %s"}\n' $i "$(date +%s%N)"
	i=$((i+1))
	sleep 0.15
done
echo '{"notes": 12}'
`

// progressNote is the note an event carries ("" if none), and the note's
// number and time of writing.
func progressNote(tb testing.TB, ev sseEvent) (n int, written time.Time, ok bool) {
	tb.Helper()
	f, _ := decodeEvent(tb, ev)
	var r struct {
		Kind   string `json:"kind"`
		Status struct {
			State   string `json:"state"`
			Message struct {
				Parts []struct{ Text string } `json:"parts"`
			} `json:"message"`
		} `json:"status"`
	}
	if err := json.Unmarshal(f.Result, &r); err != nil {
		tb.Fatal(err)
	}
	if r.Kind != "status-update" || r.Status.State != "working" || len(r.Status.Message.Parts) != 1 {
		return 0, time.Time{}, false
	}
	num, ns, found := strings.Cut(r.Status.Message.Parts[0].Text, " ")
	if !found {
		return 0, time.Time{}, false
	}
	n, err1 := strconv.Atoi(num)
	t, err2 := strconv.ParseInt(ns, 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("note %q", r.Status.Message.Parts[0].Text)
	}
	return n, time.Unix(0, t), true
}

// TestReplicasStreamAndResume streams, on replica B, a task whose call
// runs on A and writes progress notes: B's stream has every event, in
// order, live; cut after the fifth note and resumed on C with
// Last-Event-ID, it gets exactly the events B's stream missed.
func TestReplicasStreamAndResume(t *testing.T) {
	dsn := pgtest.Schema(t)
	_, catalog := execCatalog(t, "progress", progressScript)
	rs := startReplicas(t, catalog, dsn, 3)
	a, b, c := rs[0], rs[1], rs[2]

	task := resultTask(t, rpc(t, a.base, "message/send", sendParams("m-progress", "exec::progress", map[string]any{}, false)))
	id := task["id"].(string)
	subscribed := time.Now()
	s := openStream(t, nil, b.base, 1, "tasks/resubscribe", map[string]any{"id": id}, lastEventID(0))
	var (
		onB  []sseEvent
		lags []time.Duration
	)
	for {
		ev, ok := s.next(t, 10*time.Second)
		if !ok {
			t.Fatalf("B's stream ended after %d events: %v", len(onB), s.err)
		}
		arrived := time.Now()
		onB = append(onB, ev)
		n, written, isNote := progressNote(t, ev)
		if isNote && written.After(subscribed) {
			lags = append(lags, arrived.Sub(written))
		}
		if isNote && n == 5 {
			break
		}
	}
	s.close()
	cut := onB[len(onB)-1].seq(t)
	onC := openStream(t, nil, c.base, 2, "tasks/resubscribe", map[string]any{"id": id}, lastEventID(cut)).rest(t)
	checkFinal(t, onC, "completed")

	// The whole log, from the store, is B's part and C's part.
	all := openStream(t, nil, a.base, 3, "tasks/resubscribe", map[string]any{"id": id}, lastEventID(0)).rest(t)
	sameEvents(t, append(slices.Clone(onB), onC...), all)
	var notes []int
	for i, ev := range all {
		if i > 0 && ev.seq(t) <= all[i-1].seq(t) {
			t.Fatalf("event %d: id %s after %s", i, ev.ID, all[i-1].ID)
		}
		if n, _, ok := progressNote(t, ev); ok {
			notes = append(notes, n)
		}
	}
	if want := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}; !slices.Equal(notes, want) {
		t.Fatalf("notes %v, want %v", notes, want)
	}
	if len(lags) == 0 {
		t.Fatal("no note reached B's stream live")
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	t.Logf("stream lag on B of notes written on A: %d live notes, median %v, max %v; B had %d events, C resumed after %d with %d",
		len(lags), lags[len(lags)/2], lags[len(lags)-1], len(onB), cut, len(onC))
	if worst := lags[len(lags)-1]; worst > 2*time.Second {
		t.Errorf("a note reached B's stream %v after A's function wrote it", worst)
	}
}

// askScript waits, on its first call, until $1/release exists and asks a
// question; called with an answer, it approves.
const askScript = `#!/bin/sh
in=$(cat)
case "$in" in *answer*) echo '{"approved": true}'; exit 0;; esac
while [ ! -e "$1/release" ]; do sleep 0.05; done
echo '{"a2a.input_required": {"question": "approve?"}}'
`

// TestReplicasWebhook sets, on replica B, a webhook of a task whose calls
// run on A: the receiver gets each notification (input-required, then
// completed) once, in order, whichever replica delivers them.
func TestReplicasWebhook(t *testing.T) {
	dsn := pgtest.Schema(t)
	dir, catalog := execCatalog(t, "ask", askScript)
	hook := newHookReceiver(t, nil)
	t.Setenv("A2AD_PUSH_ALLOW", pushAllowLoopback) // startBinary inherits it: --push-allow
	rs := startReplicas(t, catalog, dsn, 3)
	a, b := rs[0], rs[1]

	task := resultTask(t, rpc(t, a.base, "message/send", sendParams("m-ask", "exec::ask", map[string]any{}, false)))
	id := task["id"].(string)
	waitTaskState(t, b.base, id, "working")
	set := resultTask(t, rpc(t, b.base, "tasks/pushNotificationConfig/set", map[string]any{
		"taskId": id, "pushNotificationConfig": map[string]any{"url": hook.URL, "token": "tok-replicas"}}))
	if set["taskId"] != id {
		t.Fatalf("set on B: %v", set)
	}
	putFile(t, filepath.Join(dir, "release"), "")
	waitTaskState(t, b.base, id, "input-required")
	eventually(t, 10*time.Second, "the input-required notification", func() bool { return len(hook.delivered()) == 1 })

	answer := map[string]any{"message": map[string]any{
		"kind": "message", "messageId": "m-answer", "role": "user", "taskId": id,
		"parts": []any{map[string]any{"kind": "data", "data": map[string]any{"answer": "yes"}}},
	}}
	if done := resultTask(t, rpc(t, a.base, "message/send", answer)); state(done) != "completed" {
		t.Fatalf("the answer on A: %v", done)
	}
	eventually(t, 10*time.Second, "the completed notification", func() bool { return len(hook.delivered()) >= 2 })
	for _, r := range rs {
		waitOutboxEmpty(t, r.admin, 10*time.Second)
	}
	time.Sleep(500 * time.Millisecond) // a duplicate would have arrived
	var seen []string
	for _, r := range hook.requests() {
		got := r.task(t)
		if got["id"] != id || r.Header.Get("X-A2A-Notification-Token") != "tok-replicas" {
			t.Fatalf("notification of task %v with token %q", got["id"], r.Header.Get("X-A2A-Notification-Token"))
		}
		seen = append(seen, fmt.Sprintf("%s:%d", state(got), r.Status))
	}
	if want := []string{"input-required:200", "completed:200"}; !slices.Equal(seen, want) {
		t.Fatalf("the receiver saw %v, want %v", seen, want)
	}
}
