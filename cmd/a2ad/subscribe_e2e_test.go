package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/rs/zerolog"
)

// approveScript asks a question unless its input carries an answer.
const approveScript = `#!/bin/sh
in=$(cat)
case "$in" in *answer*) echo '{"approved": true}'; exit 0;; esac
echo '{"a2a.input_required": {"question": "approve?"}}'
`

// TestSubscribeThroughInputRequiredOverBindings: a 1.0 subscription to a
// task in input-required, on each binding, stays open and follows the
// task through the answer to completed, where it ends (see
// tasks.Service.Subscribe for the reading of the spec).
func TestSubscribeThroughInputRequiredOverBindings(t *testing.T) {
	_, catalog := execCatalog(t, "approve", approveScript)
	cfg := testConfig(filepath.Join(t.TempDir(), "a2ad.db"))
	cfg.Catalog, cfg.GRPCListen = catalog, "127.0.0.1:0"
	// A short body grace: the wait for the answer outlasts it. A read
	// deadline once set for a call without a body (the HTTP+JSON
	// subscription) cut its stream when the grace passed, and answered
	// every later call on its connection with a 500.
	m := openMain(t, &Main{Config: cfg, Logger: zerolog.Nop(), bodyGrace: 100 * time.Millisecond})
	closeAtEnd(t, m)
	base := "http://" + m.Addr()
	client := grpcClient(t, m)
	for _, binding := range []string{"jsonrpc", "rest", "grpc"} {
		t.Run(binding, func(t *testing.T) {
			task := resultTask(t, rpc(t, base, "message/send", sendParams("m-ask-"+binding, "exec::approve", map[string]any{}, true)))
			id := task["id"].(string)
			if state(task) != "input-required" {
				t.Fatalf("send: %v", task)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			states := make(chan string, 16)
			ended := make(chan error, 1)
			go func() { ended <- subscribeStates(ctx, binding, base, client, id, states) }()
			select {
			case st := <-states:
				if st != "TASK_STATE_INPUT_REQUIRED" {
					t.Fatalf("first event's state %s", st)
				}
			case err := <-ended:
				t.Fatalf("subscription ended before its first event: %v", err)
			}
			select {
			case st := <-states:
				t.Fatalf("an event %s before the answer", st)
			case err := <-ended:
				t.Fatalf("the subscription ended at input-required: %v", err)
			case <-time.After(300 * time.Millisecond):
			}
			answer := map[string]any{"message": map[string]any{
				"kind": "message", "messageId": "m-answer-" + binding, "role": "user", "taskId": id,
				"parts": []any{map[string]any{"kind": "data", "data": map[string]any{"answer": "yes"}}},
			}}
			if done := resultTask(t, rpc(t, base, "message/send", answer)); state(done) != "completed" {
				t.Fatalf("the answer: %v", done)
			}
			var err error
			select {
			case err = <-ended:
			case <-ctx.Done():
				t.Fatal("the subscription did not end at completed")
			}
			close(states)
			var got []string
			for st := range states {
				got = append(got, st)
			}
			if want := "[TASK_STATE_SUBMITTED TASK_STATE_WORKING TASK_STATE_COMPLETED]"; err != nil || fmt.Sprint(got) != want {
				t.Fatalf("after the answer: states %v, end %v; want %s, a clean end", got, err, want)
			}
		})
	}
}

// subscribeStates subscribes to task id over binding (1.0) and sends the
// state of each event that has one to states; it returns nil when the
// stream ends cleanly.
func subscribeStates(ctx context.Context, binding, base string, client a2apb.A2AServiceClient, id string, states chan<- string) error {
	if binding == "grpc" {
		sub, err := client.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Id: id})
		if err != nil {
			return err
		}
		for {
			ev, err := sub.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if s := ev.GetTask().GetStatus(); s != nil {
				states <- s.GetState().String()
			} else if s := ev.GetStatusUpdate().GetStatus(); s != nil {
				states <- s.GetState().String()
			}
		}
	}
	var req *http.Request
	if binding == "rest" {
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+"/a2a/rest/tasks/"+id+":subscribe", nil)
	} else {
		body := `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"` + id + `"}}`
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, base+"/a2a", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Result       json.RawMessage `json:"result"`
			Task         *statusOf       `json:"task"`
			StatusUpdate *statusOf       `json:"statusUpdate"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return err
		}
		if ev.Result != nil { // JSON-RPC: the StreamResponse is the result
			if err := json.Unmarshal(ev.Result, &ev); err != nil {
				return err
			}
		}
		switch {
		case ev.Task != nil:
			states <- ev.Task.Status.State
		case ev.StatusUpdate != nil:
			states <- ev.StatusUpdate.Status.State
		}
	}
	return sc.Err()
}

type statusOf struct {
	Status struct {
		State string `json:"state"`
	} `json:"status"`
}
