// Command mcpserver is a2abench's reference MCP server: the official MCP
// Go SDK (github.com/modelcontextprotocol/go-sdk) with one tool,
// "demo.echo", which returns its arguments as text and structured content,
// and nothing stored. It serves MCP's Streamable HTTP transport at /mcp
// on 127.0.0.1, stateless with JSON answers (as a2ad's /mcp), and prints
// its base URL on stdout once it listens. It is the floor a2ad's durable
// tools/call is set beside: the same SDK, the same wire, no task.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2ad/a2ad/cmd/a2abench/internal/loopback"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to listen on")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("mcpserver: ")

	server := mcp.NewServer(&mcp.Implementation{Name: "mcpserver", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "demo.echo", Description: "Returns its input.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args := req.Params.Arguments
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(args)}}, StructuredContent: args}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	loopback.Serve(*listen, mux)
}
