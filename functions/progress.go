package functions

import (
	"context"
	"encoding/json"
)

// Progress is something a running call reports before its result: a note
// on how it is going, or an artifact (or a chunk of one).
type Progress struct {
	// Message is a progress note; the task stays working with it as its
	// status message.
	Message string
	// Artifact, when set, is an artifact or a chunk of one.
	Artifact *ProgressArtifact
}

// ProgressArtifact is an artifact a call streams before its result.
// Exactly one of Text and Data is set.
type ProgressArtifact struct {
	// ArtifactID names the artifact, so that chunks can be appended to
	// it; "" lets a2ad choose one.
	ArtifactID string
	Name       string
	Text       *string
	Data       json.RawMessage // a JSON object
	// Append adds this chunk's content to the artifact with the same id.
	Append bool
	// LastChunk says the artifact is complete.
	LastChunk bool
}

// ProgressFunc receives a call's progress, in order. It may block (the
// report is being stored); a backend calls it from the goroutine that
// reads the function's output, which then waits.
type ProgressFunc func(Progress)

// WithProgress returns a context whose calls report progress to fn.
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return withHook(ctx, fn)
}

// ReportProgress reports p for the call running under ctx; without a
// ProgressFunc it does nothing.
func ReportProgress(ctx context.Context, p Progress) { callHook(ctx, p) }

// hookKey is the context key of the hook that receives a call's reports
// of type T (progress, a started process group).
type hookKey[T any] struct{}

// withHook returns a context whose calls report their Ts to fn.
func withHook[T any, F ~func(T)](ctx context.Context, fn F) context.Context {
	return context.WithValue(ctx, hookKey[T]{}, (func(T))(fn))
}

// callHook reports v to the hook of ctx, if it has one.
func callHook[T any](ctx context.Context, v T) {
	if fn, ok := ctx.Value(hookKey[T]{}).(func(T)); ok && fn != nil {
		fn(v)
	}
}

// The reserved keys of progress lines (NDJSON, one JSON object per line):
//
//	{"a2a.progress": {"message": "Fetched 3 of 10 pages"}}
//	{"a2a.artifact": {"artifactId": "report", "name": "Report", "text": "...", "append": true, "lastChunk": false}}
//	{"a2a.artifact": {"artifactId": "rows", "data": {...}}}
const (
	KeyProgress = "a2a.progress"
	KeyArtifact = "a2a.artifact"
)
