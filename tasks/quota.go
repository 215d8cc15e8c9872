package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/functions"
)

// Quota caps what one owner keeps stored: its tasks, and the bytes the
// store keeps for them (records, events, idempotency keys and indexes).
// A zero field is unlimited.
type Quota struct {
	Tasks int64
	Bytes int64
}

// Usage is what one owner keeps stored, in the units of Quota.
type Usage struct {
	Tasks int64
	Bytes int64
}

// Which quota a QuotaError is about.
const (
	QuotaTasks = "tasks"
	QuotaBytes = "bytes"
)

// Errors of the limits on what a caller stores. Test with errors.Is; the
// typed errors below carry the numbers.
var (
	// ErrQuotaExceeded: storing the write would take its owner past its
	// Quota. Nothing was stored.
	ErrQuotaExceeded = errors.New("storage quota exceeded")
	// ErrTaskLimit: a message would take its task past a per-task limit.
	// Nothing was stored.
	ErrTaskLimit = errors.New("task limit exceeded")
)

// QuotaError is ErrQuotaExceeded with its numbers.
type QuotaError struct {
	Which string // QuotaTasks or QuotaBytes
	Used  int64  // what the owner has stored, before the refused write
	Limit int64
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("storage quota exceeded: %d of %d %s stored", e.Used, e.Limit, e.Which)
}

// Is makes errors.Is(err, ErrQuotaExceeded) hold.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaExceeded }

// TaskLimitError is ErrTaskLimit with its numbers: the task holds
// Messages messages in its history, and takes no more past Max.
type TaskLimitError struct {
	Messages int
	Max      int
}

func (e *TaskLimitError) Error() string {
	return fmt.Sprintf("task limit exceeded: the task holds %d messages (max %d)", e.Messages, e.Max)
}

// Is makes errors.Is(err, ErrTaskLimit) hold.
func (e *TaskLimitError) Is(target error) bool { return target == ErrTaskLimit }

// checkHistory refuses one more message on r, the head of a task in an
// UpdateFunc, when its history holds limit or more already (limit 0: no
// cap): the stored messages (r.HistoryLen) and those appended so far.
func checkHistory(r *Record, limit int) error {
	if n := r.HistoryLen + len(r.Task.History); limit > 0 && n+1 > limit {
		return &TaskLimitError{Messages: n, Max: limit}
	}
	return nil
}

// ArtifactBytes is the size of artifacts as the task-artifact cap counts
// it: the text, data, file bytes and file URIs of their parts.
func ArtifactBytes(arts []a2a.Artifact) int64 {
	var n int64
	for i := range arts {
		n += partBytes(arts[i].Parts)
	}
	return n
}

// artifactBytes is what r's artifacts take (as ArtifactBytes counts it),
// and what the first one with id takes: from the sizes the store keeps
// (r.ArtifactSizes, of a head in an UpdateFunc) or from the artifacts
// themselves (a record held whole).
func artifactBytes(r *Record, id string) (total, of int64) {
	found := false
	if r.ArtifactSizes != nil {
		for _, a := range r.ArtifactSizes {
			total += a.Bytes
			if !found && a.ID == id {
				of, found = a.Bytes, true
			}
		}
		return total, of
	}
	for i := range r.Task.Artifacts {
		n := partBytes(r.Task.Artifacts[i].Parts)
		total += n
		if !found && r.Task.Artifacts[i].ArtifactID == id {
			of, found = n, true
		}
	}
	return total, of
}

// PartBytes is the size of parts as ArtifactBytes counts it.
func PartBytes(parts []a2a.Part) int64 { return partBytes(parts) }

func partBytes(parts []a2a.Part) int64 {
	var n int64
	for _, p := range parts {
		n += int64(len(p.Text) + len(p.Data))
		if p.File != nil {
			n += int64(len(p.File.Bytes) + len(p.File.URI))
		}
	}
	return n
}

// errOutputTooLarge stops a call whose streamed output failed its task.
var errOutputTooLarge = errors.New("output past the task's artifact limit")

// tooLarge reports whether the chunk pa would take r's artifacts past
// MaxTaskArtifactBytes, and if so the failed status r gets instead.
func (r *run) tooLarge(rec *Record, pa *functions.ProgressArtifact) (a2a.TaskStatus, bool) {
	s := r.s
	limit := s.cfg.MaxTaskArtifactBytes
	if limit <= 0 {
		return a2a.TaskStatus{}, false
	}
	n, replaced := artifactBytes(rec, pa.ArtifactID)
	n += int64(len(pa.Data))
	if pa.Text != nil {
		n += int64(len(*pa.Text))
	}
	if !pa.Append && pa.ArtifactID != "" {
		n -= replaced
	}
	if n <= limit {
		return a2a.TaskStatus{}, false
	}
	return s.sm.status(a2a.StateFailed, failure(rec.Task.ID, rec.Task.ContextID, fmt.Sprintf(
		"Function output is too large: the task's artifacts would take %d bytes, over the limit of %d; "+
			"the call was stopped and the rest of its output was not stored", n, limit), FailureTooLarge)), true
}

// resultTooLarge reports whether art, a call's result, would take r's
// artifacts past MaxTaskArtifactBytes, and if so the failed status r gets
// instead.
func (r *run) resultTooLarge(rec *Record, arts []a2a.Artifact) (a2a.TaskStatus, bool) {
	s := r.s
	limit := s.cfg.MaxTaskArtifactBytes
	if limit <= 0 {
		return a2a.TaskStatus{}, false
	}
	n, _ := artifactBytes(rec, "")
	for _, a := range arts {
		n += partBytes(a.Parts)
	}
	if n <= limit {
		return a2a.TaskStatus{}, false
	}
	return s.sm.status(a2a.StateFailed, failure(rec.Task.ID, rec.Task.ContextID, fmt.Sprintf(
		"Function output is too large: the task's artifacts would take %d bytes, over the limit of %d; "+
			"the output was not stored", n, limit), FailureTooLarge)), true
}

// errQuotaExceeded stops a call whose progress would have taken its
// caller past its storage quota.
var errQuotaExceeded = errors.New("output past the caller's storage quota")

// overQuota fails task id, whose running call reported what would take
// owner past its quota (qe: nothing of the report was stored), and stops
// the call. The failed status, small and bounded, is the one write past
// the quota: a task must be able to end. Its message is the -32055
// refusal's (a2a.QuotaExceeded), classed FailureQuota.
func (r *run) overQuota(ctx context.Context, qe *QuotaError) {
	s, owner, id, log := r.s, r.c.Caller, r.c.TaskID, r.log
	text := a2a.QuotaExceeded(qe.Which, qe.Used, qe.Limit).Message
	_, evs, _, err := s.store.Update(context.WithoutCancel(ctx), owner, id, nil, Head, func(rec *Record) ([]Event, error) {
		if err := s.sm.may(rec, a2a.StateWorking, onProgress); err != nil {
			return nil, err
		}
		st := s.sm.status(a2a.StateFailed, failure(rec.Task.ID, rec.Task.ContextID, text, FailureQuota))
		if err := s.sm.move(rec, onProgress, st); err != nil {
			return nil, err
		}
		return []Event{{Status: &st}}, nil
	})
	switch {
	case errors.Is(err, errSkip): // no longer working: nothing to fail
	case err != nil:
		log.Error().Err(err).Msg("store call failed over quota")
	default:
		s.broker.Publish(id, evs)
	}
	log.Warn().Int64("used", qe.Used).Int64("limit", qe.Limit).Msg("call stopped: its output would pass the caller's storage quota")
	s.ex.stop(id, errQuotaExceeded)
}
