// Command sdkserver is a2abench's reference server: the official A2A Go
// SDK (github.com/a2aproject/a2a-go, a2asrv) with its default in-memory
// task store and an executor that echoes. It serves JSON-RPC at /a2a on
// 127.0.0.1 and prints its base URL on stdout once it listens.
//
// The executor answers every message the way a2ad answers a call of
// demo::echo: submitted, working, one artifact holding the "input" of the
// request's data part (or the whole data part without one), completed
// (final). It writes each to the event queue, so a2asrv returns the
// completed task to message/send and streams the 4 events, as they are
// written, to message/stream (server-sent events, one per event).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/a2ad/a2ad/cmd/a2abench/internal/loopback"
)

type echoExecutor struct{}

var _ a2asrv.AgentExecutor = echoExecutor{}

func (echoExecutor) Execute(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	var input map[string]any
	if reqCtx.Message != nil {
		for _, p := range reqCtx.Message.Parts {
			if dp, ok := p.(a2a.DataPart); ok {
				input = dp.Data
				if in, ok := dp.Data["input"].(map[string]any); ok {
					input = in
				}
				break
			}
		}
	}
	if input == nil {
		input = map[string]any{}
	}
	if reqCtx.StoredTask == nil {
		if err := q.Write(ctx, a2a.NewSubmittedTask(reqCtx, reqCtx.Message)); err != nil {
			return fmt.Errorf("write submitted: %w", err)
		}
	}
	if err := q.Write(ctx, a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateWorking, nil)); err != nil {
		return fmt.Errorf("write working: %w", err)
	}
	art := a2a.NewArtifactEvent(reqCtx, a2a.DataPart{Data: input})
	art.Artifact.Name = "demo::echo"
	art.LastChunk = true
	if err := q.Write(ctx, art); err != nil {
		return fmt.Errorf("write artifact: %w", err)
	}
	done := a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateCompleted, nil)
	done.Final = true
	if err := q.Write(ctx, done); err != nil {
		return fmt.Errorf("write completed: %w", err)
	}
	return nil
}

func (echoExecutor) Cancel(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	ev := a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to listen on")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("sdkserver: ")

	// Warnings and errors only, like a server in production.
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	handler := a2asrv.NewHandler(echoExecutor{}, a2asrv.WithLogger(logger))
	mux := http.NewServeMux()
	mux.Handle("POST /a2a", a2asrv.NewJSONRPCHandler(handler))
	loopback.Serve(*listen, mux)
}
