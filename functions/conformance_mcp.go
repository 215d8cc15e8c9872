package functions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"time"
)

// The conformance builtin also plays the tools of the official MCP
// conformance suite (@modelcontextprotocol/conformance, its server
// scenarios), by the id of the function called (Call.FunctionID), which
// examples/conformance/mcp.yaml names as the suite's tool names: a
// fixture, as for the A2A TCK. Each play uses what any function may: the
// parts envelope (text, bytes with a media type), progress notes, a
// reported error, a question.

// mcpStepPause is the pause between the progress notes of the logging
// and progress scenarios, which the suite asks for (about 50 ms).
const mcpStepPause = 50 * time.Millisecond

// The suite's minimal media: a 1×1 red PNG and a WAV of eight silent
// samples.
const (
	mcpPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
	mcpWAV = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA=="
)

// mcpPlays are the suite's tools by function id.
var mcpPlays = map[string]func(ctx context.Context) (Result, error){
	"test_simple_text":   envelopeOf(map[string]any{"text": "This is a simple text response for testing."}),
	"test_image_content": envelopeOf(map[string]any{"raw": mcpPNG, "filename": "red.png", "mediaType": "image/png"}),
	"test_audio_content": envelopeOf(map[string]any{"raw": mcpWAV, "filename": "silence.wav", "mediaType": "audio/wav"}),
	"test_embedded_resource": envelopeOf(map[string]any{"raw": b64("This is an embedded resource content."),
		"filename": "embedded-resource.txt", "mediaType": "text/plain"}),
	"test_multiple_content_types": envelopeOf(
		map[string]any{"text": "Multiple content types test:"},
		map[string]any{"raw": mcpPNG, "filename": "red.png", "mediaType": "image/png"},
		map[string]any{"raw": b64(`{"test":"data","value":123}`), "filename": "mixed-content-resource.json", "mediaType": "application/json"}),
	"test_tool_with_logging": notesThen("Tool with logging executed successfully",
		"Tool execution started", "Tool processing data", "Tool execution completed"),
	"test_tool_with_progress": notesThen("Tool with progress executed successfully",
		"0 of 100", "50 of 100", "100 of 100"),
	"test_error_handling": func(context.Context) (Result, error) {
		return Result{}, reportedError("This tool intentionally returns an error for testing")
	},
	"test_elicitation": func(context.Context) (Result, error) {
		return Result{InputRequired: "Please provide your username"}, nil
	},
	"json_schema_2020_12_tool": envelopeOf(map[string]any{"text": "JSON Schema 2020-12 tool called"}),
}

// envelopeOf is a play that answers with one artifact of parts.
func envelopeOf(parts ...map[string]any) func(context.Context) (Result, error) {
	out, _ := json.Marshal(map[string]any{"artifacts": []any{map[string]any{"parts": parts}}})
	return func(context.Context) (Result, error) { return Result{Output: out}, nil }
}

// notesThen is a play that reports notes, mcpStepPause apart, then
// answers with text.
func notesThen(text string, notes ...string) func(context.Context) (Result, error) {
	answer := envelopeOf(map[string]any{"text": text})
	return func(ctx context.Context) (Result, error) {
		for i, n := range notes {
			if i > 0 {
				if err := conformanceWait(ctx, mcpStepPause); err != nil {
					return Result{}, err
				}
			}
			ReportProgress(ctx, Progress{Message: n})
		}
		return answer(ctx)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// mcpPlay is the play of the function ctx's call is to, if the suite has
// one.
func mcpPlay(ctx context.Context) (func(context.Context) (Result, error), bool) {
	c, ok := CallFrom(ctx)
	if !ok {
		return nil, false
	}
	play, ok := mcpPlays[c.FunctionID]
	return play, ok
}
