package functions_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/functions"
)

// TestConformanceMCPPlays: the conformance builtin plays the MCP suite's
// tools by the function id of its call, with what the suite checks (text,
// a PNG and a WAV with their media types, a text resource, three ordered
// notes, a reported error, a question); a call to another id still plays
// the A2A TCK by messageId.
func TestConformanceMCPPlays(t *testing.T) {
	b := MustBuiltin(t, "conformance")
	for _, tt := range []struct {
		id, output, question, err string
		notes                     []string
	}{
		{id: "test_simple_text", output: `{"artifacts":[{"parts":[{"text":"This is a simple text response for testing."}]}]}`},
		{id: "test_image_content", output: `"filename":"red.png","mediaType":"image/png","raw":"iVBORw0KGgo`},
		{id: "test_audio_content", output: `"filename":"silence.wav","mediaType":"audio/wav","raw":"UklGR`},
		{id: "test_embedded_resource", output: `{"filename":"embedded-resource.txt","mediaType":"text/plain","raw":"VGhpcyBpcyBhbiBlbWJlZGRlZCByZXNvdXJjZSBjb250ZW50Lg=="}`},
		{id: "test_multiple_content_types", output: `{"text":"Multiple content types test:"},{"filename":"red.png"`},
		{id: "test_tool_with_logging", output: `Tool with logging executed successfully`,
			notes: []string{"Tool execution started", "Tool processing data", "Tool execution completed"}},
		{id: "test_tool_with_progress", output: `Tool with progress executed successfully`,
			notes: []string{"0 of 100", "50 of 100", "100 of 100"}},
		{id: "test_error_handling", err: "function reported an error: This tool intentionally returns an error for testing"},
		{id: "test_elicitation", question: "Please provide your username"},
		{id: "json_schema_2020_12_tool", output: `JSON Schema 2020-12 tool called`},
		{id: "tck::conformance", output: `{"message":[{"text":"Hello from TCK"}]}`},
	} {
		t.Run(tt.id, func(t *testing.T) {
			var notes []string
			ctx := functions.WithCall(context.Background(), functions.Call{FunctionID: tt.id})
			ctx = functions.WithProgress(ctx, func(p functions.Progress) { notes = append(notes, p.Message) })
			res, err := b.Invoke(ctx, []byte(`{"messageId":"tck-complete-task-1"}`))
			var ce *functions.CallError
			switch {
			case tt.err != "":
				if !errors.As(err, &ce) || ce.Reason != tt.err {
					t.Fatalf("error %v, want the reported error %q", err, tt.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if !strings.Contains(string(res.Output), tt.output) {
				t.Errorf("output %s, want it to hold %s", res.Output, tt.output)
			}
			if res.InputRequired != tt.question {
				t.Errorf("question %q, want %q", res.InputRequired, tt.question)
			}
			if strings.Join(notes, "|") != strings.Join(tt.notes, "|") {
				t.Errorf("notes %q, want %q", notes, tt.notes)
			}
		})
	}
}
