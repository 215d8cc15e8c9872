package boltstore

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// appendHead appends the JSON of rec's head (storedHead): field for field
// what encoding/json would write (which is how it is read back), without
// reflection, since a head is written with every change. The task's history, artifacts and input, its owner
// and its message ids are kept elsewhere (layout.go) and not written.
func appendHead(dst []byte, rec *tasks.Record) ([]byte, error) {
	dst = append(dst, `{"task":`...)
	t := rec.Task
	t.History, t.Artifacts = nil, nil
	var err error
	if dst, err = t.AppendJSON(dst); err != nil {
		return nil, err
	}
	if len(rec.CallerTiers) > 0 {
		dst = append(dst, `,"callerTiers":[`...)
		for i, t := range rec.CallerTiers {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = a2a.AppendString(dst, t)
		}
		dst = append(dst, ']')
	}
	if rec.CallerTier != "" {
		dst = append(dst, `,"callerTier":`...)
		dst = a2a.AppendString(dst, rec.CallerTier)
	}
	if rec.FunctionID != "" {
		dst = append(dst, `,"functionId":`...)
		dst = a2a.AppendString(dst, rec.FunctionID)
	}
	if len(rec.PushConfigs) > 0 {
		b, err := json.Marshal(rec.PushConfigs) // rare: reflection is fine
		if err != nil {
			return nil, err
		}
		dst = append(dst, `,"pushConfigs":`...)
		dst = append(dst, b...)
	}
	if g := rec.Group; g != nil {
		dst = append(dst, `,"processGroup":{"pgid":`...)
		dst = strconv.AppendInt(dst, int64(g.ID), 10)
		dst = append(dst, `,"leaderStart":`...)
		dst = strconv.AppendUint(dst, g.LeaderStart, 10)
		dst = append(dst, `,"session":`...)
		dst = strconv.AppendInt(dst, int64(g.Session), 10)
		dst = append(dst, `,"bootId":`...)
		dst = a2a.AppendString(dst, g.BootID)
		dst = append(dst, '}')
	}
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendUint(dst, rec.Seq, 10)
	dst = append(dst, `,"createdAt":`...)
	dst = appendTime(dst, rec.CreatedAt)
	dst = append(dst, `,"updatedAt":`...)
	dst = appendTime(dst, rec.UpdatedAt)
	return append(dst, '}'), nil
}

// appendEvent appends e's JSON, as encoding/json would for tasks.Event.
func appendEvent(dst []byte, e *tasks.Event) ([]byte, error) {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, e.Seq, 10)
	var err error
	if e.Status != nil {
		dst = append(dst, `,"status":`...)
		if dst, err = e.Status.AppendJSON(dst); err != nil {
			return nil, err
		}
	}
	if e.Artifact != nil {
		dst = append(dst, `,"artifact":`...)
		if dst, err = e.Artifact.AppendJSON(dst); err != nil {
			return nil, err
		}
	}
	if e.Append {
		dst = append(dst, `,"append":true`...)
	}
	if e.LastChunk {
		dst = append(dst, `,"lastChunk":true`...)
	}
	return append(dst, '}'), nil
}

func appendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}
