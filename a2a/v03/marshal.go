package v03

import (
	"fmt"

	"github.com/a2ad/a2ad/a2a"
)

// The core types' MarshalJSON methods write through this encoder (see
// a2a.Encode03); it goes with them.
func init() { a2a.Encode03 = appendAny }

func appendAny(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case *a2a.Part:
		return AppendPart(dst, v)
	case *a2a.Message:
		return AppendMessage(dst, v)
	case *a2a.TaskStatus:
		return AppendStatus(dst, v)
	case *a2a.Artifact:
		return AppendArtifact(dst, v)
	case *a2a.Task:
		return AppendTask(dst, v)
	case *a2a.StatusUpdateEvent:
		return AppendStatusUpdate(dst, v)
	case *a2a.ArtifactUpdateEvent:
		return AppendArtifactUpdate(dst, v)
	}
	return nil, fmt.Errorf("v03: no 0.3 encoding for %T", v)
}
