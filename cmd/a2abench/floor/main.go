// Command floor is a2abench's floor: a bare Echo handler that decodes the
// JSON-RPC request and answers message/send with a fixed, valid, completed
// A2A 0.3 task, and message/stream with a fixed server-sent event stream
// of 3 events (the task, an artifact-update, the final status-update),
// flushing each, with no task logic and no storage. It measures what
// HTTP, JSON and SSE alone cost. It serves POST /a2a on 127.0.0.1 and
// prints its base URL on stdout once it listens.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/a2ad/a2ad/cmd/a2abench/internal/loopback"
)

// request is the part of a JSON-RPC request the floor reads.
type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Message struct {
			MessageID string            `json:"messageId"`
			Parts     []json.RawMessage `json:"parts"`
		} `json:"message"`
	} `json:"params"`
}

// task is the fixed result: a completed task with one data artifact.
const task = `{"kind":"task","id":"9b6c4b1e-5a38-4d5e-9f39-1f0d0c7f3c11","contextId":"0b3f8f7e-1c1d-4d8e-8c55-6b8ab0f3e2a4",` +
	`"status":{"state":"completed","timestamp":"2026-11-22T00:00:00.000Z"},` +
	`"artifacts":[{"artifactId":"5f0d3c1a-7e2b-4c9d-a6f1-2b3c4d5e6f70","name":"demo::echo","parts":[{"kind":"data","data":{"message":"hello"}}]}]}`

// streamEvents are the results of message/stream's events, in order.
var streamEvents = []string{
	`{"kind":"task","id":"9b6c4b1e-5a38-4d5e-9f39-1f0d0c7f3c11","contextId":"0b3f8f7e-1c1d-4d8e-8c55-6b8ab0f3e2a4",` +
		`"status":{"state":"submitted","timestamp":"2026-11-22T00:00:00.000Z"}}`,
	`{"kind":"artifact-update","taskId":"9b6c4b1e-5a38-4d5e-9f39-1f0d0c7f3c11","contextId":"0b3f8f7e-1c1d-4d8e-8c55-6b8ab0f3e2a4",` +
		`"artifact":{"artifactId":"5f0d3c1a-7e2b-4c9d-a6f1-2b3c4d5e6f70","name":"demo::echo","parts":[{"kind":"data","data":{"message":"hello"}}]},` +
		`"lastChunk":true}`,
	`{"kind":"status-update","taskId":"9b6c4b1e-5a38-4d5e-9f39-1f0d0c7f3c11","contextId":"0b3f8f7e-1c1d-4d8e-8c55-6b8ab0f3e2a4",` +
		`"status":{"state":"completed","timestamp":"2026-11-22T00:00:00.000Z"},"final":true}`,
}

// stream writes message/stream's fixed events for request id, each with
// its number as the SSE id, flushing each.
func stream(c echo.Context, id json.RawMessage) error {
	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	b := make([]byte, 0, 512)
	for i, ev := range streamEvents {
		b = append(b[:0], "id: "...)
		b = strconv.AppendInt(b, int64(i+1), 10)
		b = append(b, "\ndata: {\"jsonrpc\":\"2.0\",\"id\":"...)
		b = append(b, id...)
		b = append(b, `,"result":`...)
		b = append(b, ev...)
		b = append(b, "}\n\n"...)
		if _, err := w.Write(b); err != nil {
			return nil // the client went away
		}
		w.Flush()
	}
	return nil
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to listen on")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("floor: ")

	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.POST("/a2a", func(c echo.Context) error {
		var req request
		if err := json.NewDecoder(c.Request().Body).Decode(&req); err != nil ||
			(req.Method != "message/send" && req.Method != "message/stream") || req.Params.Message.MessageID == "" {
			return c.JSONBlob(http.StatusOK, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`))
		}
		id := req.ID
		if len(id) == 0 {
			id = json.RawMessage("null")
		}
		if req.Method == "message/stream" {
			return stream(c, id)
		}
		b := make([]byte, 0, len(task)+64)
		b = append(b, `{"jsonrpc":"2.0","id":`...)
		b = append(b, id...)
		b = append(b, `,"result":`...)
		b = append(b, task...)
		b = append(b, '}')
		return c.JSONBlob(http.StatusOK, b)
	})
	loopback.Serve(*listen, e)
}
