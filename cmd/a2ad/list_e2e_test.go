package main

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
)

// listAllOfficial pages through the listing with the official client and
// returns the tasks, checking each page's size, total and token.
func listAllOfficial(tb testing.TB, client *a2aclient.Client, req a2a.ListTasksRequest, wantTotal int) []*a2a.Task {
	tb.Helper()
	size := req.PageSize
	if size == 0 {
		size = 50
	}
	var all []*a2a.Task
	for page := 0; ; page++ {
		resp, err := client.ListTasks(context.Background(), &req)
		if err != nil {
			tb.Fatalf("ListTasks page %d: %v", page, err)
		}
		if resp.TotalSize != wantTotal || resp.PageSize != size {
			tb.Fatalf("page %d: total_size %d page_size %d, want %d and %d", page, resp.TotalSize, resp.PageSize, wantTotal, size)
		}
		if want := min(size, wantTotal-len(all)); len(resp.Tasks) != want {
			tb.Fatalf("page %d: %d tasks, want %d", page, len(resp.Tasks), want)
		}
		all = append(all, resp.Tasks...)
		if (len(all) == wantTotal) != (resp.NextPageToken == "") {
			tb.Fatalf("page %d: next_page_token %q after %d of %d tasks", page, resp.NextPageToken, len(all), wantTotal)
		}
		if resp.NextPageToken == "" {
			return all
		}
		req.PageToken = resp.NextPageToken
	}
}

func taskIDs(ts []*a2a.Task) []string {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = string(t.ID)
	}
	return ids
}

// TestOfficialClientListTasks drives tasks/list with the a2a-go v0.3.15
// client against the real server: 250 tasks, every page size, filters,
// artifacts, history and a bad token.
func TestOfficialClientListTasks(t *testing.T) {
	m := startMain(t, func(c *Config) { c.RatePerSecond = 0 }) // some 600 requests
	ctx := context.Background()
	client := officialClient(t, "http://"+m.Addr())

	// Sent one after the other, so the newest update is the last sent:
	// every third is a completed echo (with an artifact) in context
	// "echoes", the others wait for input.
	const n = 250
	var sent []string
	var cut time.Time // the status time of task 200
	for i := range n {
		var msg *a2a.Message
		if i%3 == 0 {
			msg = skillMessage("demo::echo", map[string]any{"message": fmt.Sprint(i)})
			msg.ContextID = "echoes"
		} else {
			msg = a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "hello"})
		}
		if i == 200 {
			time.Sleep(5 * time.Millisecond) // status times have milliseconds: keep 199 apart
		}
		res, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		task := res.(*a2a.Task)
		if want := map[bool]a2a.TaskState{true: a2a.TaskStateCompleted, false: a2a.TaskStateInputRequired}[i%3 == 0]; task.Status.State != want {
			t.Fatalf("task %d is %s, want %s", i, task.Status.State, want)
		}
		if i == 200 {
			cut = *task.Status.Timestamp
		}
		sent = append(sent, string(task.ID))
	}
	slices.Reverse(sent)

	for _, size := range []int{0, 1, 7, 50, 100} {
		got := listAllOfficial(t, client, a2a.ListTasksRequest{PageSize: size}, n)
		if !slices.Equal(taskIDs(got), sent) {
			t.Fatalf("page size %d: tasks not newest first", size)
		}
		for _, task := range got {
			if len(task.Artifacts) != 0 {
				t.Fatalf("task %s listed with artifacts by default", task.ID)
			}
		}
	}

	// Filters: state, context, time; artifacts and history on request.
	done := listAllOfficial(t, client, a2a.ListTasksRequest{Status: a2a.TaskStateCompleted, PageSize: 30, IncludeArtifacts: true}, 84)
	for _, task := range done {
		if task.Status.State != a2a.TaskStateCompleted || task.ContextID != "echoes" || len(task.Artifacts) != 1 {
			t.Fatalf("completed listing holds %s task %s in %s with %d artifacts", task.Status.State, task.ID, task.ContextID, len(task.Artifacts))
		}
	}
	if got := listAllOfficial(t, client, a2a.ListTasksRequest{ContextID: "echoes", PageSize: 100}, 84); !slices.Equal(taskIDs(got), taskIDs(done)) {
		t.Fatal("context echoes lists other tasks than state completed")
	}
	recent := listAllOfficial(t, client, a2a.ListTasksRequest{LastUpdatedAfter: &cut, PageSize: 20}, 50)
	if !slices.Equal(taskIDs(recent), sent[:50]) {
		t.Fatalf("last_updated_after task 200's status time: %d tasks, not the 50 newest", len(recent))
	}
	waiting := listAllOfficial(t, client, a2a.ListTasksRequest{Status: a2a.TaskStateInputRequired, HistoryLength: 1, PageSize: 100}, 166)
	for _, task := range waiting {
		if len(task.History) != 1 || task.History[0].Role != a2a.MessageRoleAgent {
			t.Fatalf("history_length 1: task %s has %d messages", task.ID, len(task.History))
		}
	}

	// A token is opaque, and a bad one is -32602 naming it.
	first, err := client.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 10})
	if err != nil || first.NextPageToken == "" || strings.Contains(first.NextPageToken, sent[9]) {
		t.Fatalf("first page: token %q, %v", first.NextPageToken, err)
	}
	for tok, want := range map[string]string{
		"garbage":               "Invalid parameters: /page_token: is not a page token this server issued",
		first.NextPageToken[1:]: "Invalid parameters: /page_token: is not a page token this server issued",
	} {
		_, err := client.ListTasks(ctx, &a2a.ListTasksRequest{PageToken: tok, PageSize: 10})
		if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), want) {
			t.Errorf("token %q: err = %v, want -32602 %q", tok, err, want)
		}
	}
	_, err = client.ListTasks(ctx, &a2a.ListTasksRequest{PageToken: first.NextPageToken, Status: a2a.TaskStateCompleted})
	if want := "Invalid parameters: /page_token: was issued for another query (other filters or another caller)"; !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), want) {
		t.Errorf("token of another filter: err = %v, want -32602 %q", err, want)
	}
	_, err = client.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 101})
	if want := "Invalid parameters: /page_size: must be from 1 to 100, not 101"; !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), want) {
		t.Errorf("page size 101: err = %v, want -32602 %q", err, want)
	}
}

// TestListIsolationOverHTTP: with a keys file, each caller lists only its
// own tasks, another caller's tasks never change its total_size, and its
// page token is refused to anyone else.
func TestListIsolationOverHTTP(t *testing.T) {
	k := startKeyed(t, nil)
	create := func(key, prefix string, n int) map[string]bool {
		ids := map[string]bool{}
		for i := range n {
			p := map[string]any{"message": map[string]any{"kind": "message", "messageId": fmt.Sprintf("%s-%d", prefix, i), "role": "user",
				"parts": []any{map[string]any{"kind": "text", "text": "hello"}}}}
			ids[resultTask(t, k.ok(t, key, "message/send", p))["id"].(string)] = true
		}
		return ids
	}
	// list pages through key's tasks, 5 a page, and returns their ids.
	list := func(key string, wantTotal int) (map[string]bool, string) {
		ids := map[string]bool{}
		var firstToken string
		params := map[string]any{"page_size": 5}
		for {
			res := k.ok(t, key, "tasks/list", params)["result"].(map[string]any)
			if int(res["total_size"].(float64)) != wantTotal {
				t.Fatalf("total_size %v, want %d", res["total_size"], wantTotal)
			}
			for _, task := range res["tasks"].([]any) {
				ids[task.(map[string]any)["id"].(string)] = true
			}
			next := res["next_page_token"].(string)
			if firstToken == "" {
				firstToken = next
			}
			if next == "" {
				return ids, firstToken
			}
			params["page_token"] = next
		}
	}
	acme := create(k.acme, "acme", 12)
	got, token := list(k.acme, 12)
	if !reflect.DeepEqual(got, acme) {
		t.Fatalf("acme lists %v, want its own %v", got, acme)
	}
	bob := create(k.bob, "bob", 7)
	if got, _ := list(k.bob, 7); !reflect.DeepEqual(got, bob) {
		t.Fatalf("bob lists %v, want his own %v", got, bob)
	}
	if got, _ := list(k.acme, 12); !reflect.DeepEqual(got, acme) {
		t.Fatalf("after bob's tasks, acme lists %v", got)
	}
	if got, _ := list(k.ops, 0); len(got) != 0 {
		t.Fatalf("ops lists %v, want nothing", got)
	}
	resp := k.ok(t, k.bob, "tasks/list", map[string]any{"page_size": 5, "page_token": token})
	e, _ := resp["error"].(map[string]any)
	if e == nil || e["code"] != float64(-32602) || e["message"] != "Invalid parameters: /page_token: was issued for another query (other filters or another caller)" {
		t.Fatalf("bob with acme's token: %v", resp)
	}
}
