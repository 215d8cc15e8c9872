package v03

import (
	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wire"
)

// spiller is the encoders of one answer written while it is made
// (a2a.Spill): each part goes through spill first. Its methods are bound
// once an answer, not once a part.
type spiller struct {
	part func([]byte, *a2a.Part) ([]byte, error)
}

func newSpiller(spill a2a.Spill) *spiller {
	return &spiller{part: func(dst []byte, p *a2a.Part) ([]byte, error) { return AppendPart(spill(dst), p) }}
}

func (s *spiller) message(dst []byte, m *a2a.Message) ([]byte, error) {
	return appendMessage(dst, m, s.part)
}

func (s *spiller) status(dst []byte, st *a2a.TaskStatus) ([]byte, error) {
	return wire.AppendStatus(dst, string(st.State), st, s.message)
}

func (s *spiller) artifact(dst []byte, a *a2a.Artifact) ([]byte, error) {
	return wire.AppendArtifact(dst, a, s.part)
}

func (s *spiller) task(dst []byte, t *a2a.Task) ([]byte, error) {
	return wire.AppendTask(dst, openTask, t, true, s.status, s.message, s.artifact)
}

// AppendTaskSpilling appends t's JSON as AppendTask does, giving spill
// the bytes so far before each part.
func AppendTaskSpilling(dst []byte, t *a2a.Task, spill a2a.Spill) ([]byte, error) {
	return newSpiller(spill).task(dst, t)
}

// AppendListTasksResultSpilling appends r's JSON as AppendListTasksResult
// does, giving spill the bytes so far before each part.
func AppendListTasksResultSpilling(dst []byte, r *a2a.ListTasksResult, spill a2a.Spill) ([]byte, error) {
	dst, err := wire.AppendList(append(dst, `{"tasks":`...), r.Tasks, newSpiller(spill).task)
	if err != nil {
		return nil, err
	}
	return appendListEnd(dst, r), nil
}
