package grpc

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
)

// TestWireCodecDeterministic: an event whose metadata is a Struct of many
// fields is written in the same bytes every time (grpc-go's own codec
// writes a map in random order), small and large (a pooled buffer), and
// reads back equal.
func TestWireCodecDeterministic(t *testing.T) {
	c := newWireCodec()
	for _, size := range []int{10, 4000} {
		fields := map[string]any{}
		for i := range 40 {
			fields[fmt.Sprintf("k%02d", i)] = strings.Repeat("v", size/40)
		}
		meta, err := structpb.NewStruct(fields)
		if err != nil {
			t.Fatal(err)
		}
		ev := &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_StatusUpdate{StatusUpdate: &a2apb.TaskStatusUpdateEvent{
			TaskId: "t1", ContextId: "c1", Metadata: meta}}}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			data, err := c.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			got := data.Materialize()
			data.Free()
			if !bytes.Equal(got, want) {
				t.Fatalf("size %d, marshal %d: bytes differ from the deterministic encoding", size, i)
			}
		}
		data, _ := c.Marshal(ev)
		var back a2apb.StreamResponse
		if err := c.Unmarshal(data, &back); err != nil || !proto.Equal(&back, ev) {
			t.Errorf("size %d: read back %v, %v", size, &back, err)
		}
	}
	if _, err := c.Marshal("not a message"); err == nil || err.Error() != "proto: failed to marshal, message is string, want proto.Message" {
		t.Errorf("Marshal(string) = %v", err)
	}
}
