package v1

import (
	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/a2a/internal/wire"
)

// Spilling is a Result that can also be written while it is made
// (a2a.Spill): those that carry tasks, whose history and artifacts can
// be large.
type Spilling interface {
	Result
	// AppendJSONSpilling appends the result's JSON as AppendJSON does,
	// giving spill the bytes so far before each part.
	AppendJSONSpilling(dst []byte, spill a2a.Spill) ([]byte, error)
}

var (
	_ Spilling = TaskResult{}
	_ Spilling = (*TaskList[a2a.Task])(nil)
	_ Spilling = (*StreamResponse)(nil)
)

// spiller is the encoders of one spilled answer: each part goes through
// spill first. Its methods are bound once an answer, not once a part.
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
	return appendStatus(dst, st, s.message)
}

func (s *spiller) artifact(dst []byte, a *a2a.Artifact) ([]byte, error) {
	return wire.AppendArtifact(dst, a, s.part)
}

func (s *spiller) task(dst []byte, t *a2a.Task) ([]byte, error) {
	return wire.AppendTask(dst, `{"id":`, t, false, s.status, s.message, s.artifact)
}

// AppendTaskSpilling appends t's JSON as AppendTask does, giving spill
// the bytes so far before each part.
func AppendTaskSpilling(dst []byte, t *a2a.Task, spill a2a.Spill) ([]byte, error) {
	return newSpiller(spill).task(dst, t)
}

// AppendJSONSpilling implements Spilling.
func (r TaskResult) AppendJSONSpilling(dst []byte, spill a2a.Spill) ([]byte, error) {
	return AppendTaskSpilling(dst, r.Task, spill)
}

// AppendJSONSpilling implements Spilling: a task (SendMessage's result)
// is spilled; the other members are small and written as AppendJSON does.
func (r *StreamResponse) AppendJSONSpilling(dst []byte, spill a2a.Spill) ([]byte, error) {
	if r.Task == nil || r.Message != nil || r.StatusUpdate != nil || r.ArtifactUpdate != nil {
		return r.AppendJSON(dst)
	}
	dst, err := AppendTaskSpilling(append(dst, `{"task":`...), r.Task, spill)
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

// AppendJSONSpilling implements Spilling.
func (l *TaskList[T]) AppendJSONSpilling(dst []byte, spill a2a.Spill) ([]byte, error) {
	s := newSpiller(spill)
	dst, err := wire.AppendList(append(dst, `{"tasks":`...), l.Tasks, func(dst []byte, v *T) ([]byte, error) {
		t, err := taskOf(v)
		if err != nil {
			return nil, err
		}
		return s.task(dst, t)
	})
	if err != nil {
		return nil, err
	}
	return appendListEnd(dst, l.NextPageToken, l.PageSize, l.TotalSize), nil
}
