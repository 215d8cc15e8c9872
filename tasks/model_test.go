package tasks_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// TestApplyArtifactLeavesItsInputAlone: the fold returns a new slice and
// never writes through the one it was given, which readers may share.
func TestApplyArtifactLeavesItsInputAlone(t *testing.T) {
	arts := []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("1")}}}
	before := slices.Clone(arts)
	out := tasks.ApplyArtifact(arts, &a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("2")}}, true)
	if diff := cmp.Diff(before, arts); diff != "" {
		t.Errorf("append changed its input (-before +after):\n%s", diff)
	}
	if len(out) != 1 || len(out[0].Parts) != 2 {
		t.Errorf("append = %+v", out)
	}
	out = tasks.ApplyArtifact(arts, &a2a.Artifact{ArtifactID: "a", Name: "x"}, false)
	if diff := cmp.Diff(before, arts); diff != "" || out[0].Name != "x" {
		t.Errorf("replace changed its input, or did not replace: %+v", out)
	}
}
