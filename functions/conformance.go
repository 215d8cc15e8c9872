package functions

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// The conformance builtin is a fixture for running the A2A TCK
// (github.com/a2aproject/a2a-tck) against a2ad, not a function to offer
// anyone: examples/conformance/catalog.yaml makes it the default skill,
// declared "output: parts" and "reply: either". It plays the scenarios of
// the TCK's scenarios/*.feature by the prefix of the message's messageId
// (its input is the default skill's: {"text", "messageId", ...}), through
// a2ad's general means: progress artifacts, the parts envelope, a reply
// that is a message, a question, a reported error.

// conformanceLong is how long the resubscribe scenario's task runs: at
// least twice the TCK's streaming timeout (TCK_STREAMING_TIMEOUT, 2s by
// default).
const conformanceLong = 5 * time.Second

// conformanceStreamPause is how long a streaming scenario waits before it
// answers, so that a stream opened with the message sees its events
// (working, the artifact, completed) as they happen rather than the task
// already finished.
const conformanceStreamPause = 100 * time.Millisecond

// conformancePlays maps a messageId prefix to its parts envelope, most
// specific first where one prefix extends another.
var conformancePlays = []struct{ prefix, envelope string }{
	{"tck-stream-artifact-text", artifactText("Streamed text content")},
	{"tck-stream-artifact-file", artifactFile},
	{"tck-stream-ordering-001", artifactText("Ordered output")},
	{"tck-stream-001", artifactText("Stream hello from TCK")},
	{"tck-stream-002", `{}`},
	{"tck-stream-003", artifactText("Stream task lifecycle")},
	{"tck-artifact-file-url", `{"artifacts":[{"parts":[{"url":"https://example.com/output.txt","filename":"output.txt","mediaType":"text/plain"}]}]}`},
	{"tck-artifact-file", artifactFile},
	{"tck-artifact-text", artifactText("Generated text content")},
	{"tck-artifact-data", `{"artifacts":[{"parts":[{"data":{"key":"value","count":42}}]}]}`},
	{"tck-message-response", `{"message":[{"text":"Direct message response"}],"reply":"message"}`},
	{"tck-complete-task", `{"message":[{"text":"Hello from TCK"}]}`},
}

const artifactFile = `{"artifacts":[{"parts":[{"raw":"dGNr","filename":"output.txt","mediaType":"text/plain"}]}]}`

func artifactText(s string) string {
	b, _ := json.Marshal(map[string]any{"artifacts": []any{map[string]any{"parts": []any{map[string]string{"text": s}}}}})
	return string(b)
}

func builtinConformance(ctx context.Context, input json.RawMessage) (Result, error) {
	if play, ok := mcpPlay(ctx); ok {
		return play(ctx)
	}
	var in struct {
		MessageID string `json:"messageId"`
	}
	if err := decodeObject(input, &in); err != nil {
		return Result{}, err
	}
	id := in.MessageID
	if strings.HasPrefix(id, "tck-stream-") {
		if err := conformanceWait(ctx, conformanceStreamPause); err != nil {
			return Result{}, err
		}
	}
	switch {
	case strings.HasPrefix(id, "tck-stream-artifact-chunked"):
		one, two := "chunk-1 ", "chunk-2"
		ReportProgress(ctx, Progress{Artifact: &ProgressArtifact{ArtifactID: "chunked", Text: &one}})
		ReportProgress(ctx, Progress{Artifact: &ProgressArtifact{ArtifactID: "chunked", Text: &two, Append: true, LastChunk: true}})
		return Result{Output: json.RawMessage(`{}`)}, nil
	case strings.HasPrefix(id, "test-resubscribe-message-id"):
		if err := conformanceWait(ctx, conformanceLong); err != nil {
			return Result{}, err
		}
		return Result{Output: json.RawMessage(`{}`)}, nil
	case strings.HasPrefix(id, "tck-input-required"):
		return Result{InputRequired: "Input required"}, nil
	case strings.HasPrefix(id, "tck-reject-task"):
		return Result{}, reportedError("rejected")
	}
	for _, p := range conformancePlays {
		if strings.HasPrefix(id, p.prefix) {
			return Result{Output: json.RawMessage(p.envelope)}, nil
		}
	}
	out, _ := json.Marshal(map[string]any{"message": []any{map[string]string{"text": "Unhandled messageId prefix: " + id}}})
	return Result{Output: out}, nil
}

// conformanceWait waits d, or until ctx is done (then the call's error).
func conformanceWait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return contextError(ctx)
	}
}
