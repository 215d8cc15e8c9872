// Command sdk2server is a2abench's reference server at A2A 1.0: the
// official A2A Go SDK v2 (github.com/a2aproject/a2a-go/v2, a2asrv) with
// its default in-memory task store and the executor of sdkserver, which
// echoes. It serves JSON-RPC at /a2a on 127.0.0.1 (the 1.0 methods:
// SendMessage, SendStreamingMessage, ...) and prints its base URL on
// stdout once it listens.
//
// The executor answers every message the way a2ad answers a call of
// demo::echo: submitted, working, one artifact holding the "input" of the
// request's data part (or the whole data part without one), completed.
// a2asrv returns the completed task to a blocking SendMessage and streams
// the 4 events, as they are yielded, to SendStreamingMessage (server-sent
// events, one per event; the completed status-update ends the stream).
package main

import (
	"context"
	"flag"
	"iter"
	"log"
	"log/slog"
	"net/http"
	"os"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2ad/a2ad/cmd/a2abench/internal/loopback"
)

type echoExecutor struct{}

var _ a2asrv.AgentExecutor = echoExecutor{}

// input is the "input" of the message's first data part, else that
// part's data, else an empty object.
func input(msg *a2a.Message) any {
	if msg != nil {
		for _, p := range msg.Parts {
			data, ok := p.Content.(a2a.Data)
			if !ok {
				continue
			}
			if m, ok := data.Value.(map[string]any); ok {
				if in, ok := m["input"].(map[string]any); ok {
					return in
				}
			}
			return data.Value
		}
	}
	return map[string]any{}
}

func (echoExecutor) Execute(ctx context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if execCtx.StoredTask == nil {
			if !yield(a2a.NewSubmittedTask(execCtx, execCtx.Message), nil) {
				return
			}
		}
		if !yield(a2a.NewStatusUpdateEvent(execCtx, a2a.TaskStateWorking, nil), nil) {
			return
		}
		art := a2a.NewArtifactEvent(execCtx, a2a.NewDataPart(input(execCtx.Message)))
		art.Artifact.Name = "demo::echo"
		art.LastChunk = true
		if !yield(art, nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(execCtx, a2a.TaskStateCompleted, nil), nil)
	}
}

func (echoExecutor) Cancel(ctx context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(execCtx, a2a.TaskStateCanceled, nil), nil)
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to listen on")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("sdk2server: ")

	// Warnings and errors only, like a server in production.
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	handler := a2asrv.NewHandler(echoExecutor{}, a2asrv.WithLogger(logger))
	mux := http.NewServeMux()
	mux.Handle("POST /a2a", a2asrv.NewJSONRPCHandler(handler))
	loopback.Serve(*listen, mux)
}
