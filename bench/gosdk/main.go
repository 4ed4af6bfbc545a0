// Command gosdk is the benchmark's comparison server on the official MCP Go
// SDK (github.com/modelcontextprotocol/go-sdk): a stateless Streamable HTTP
// server with one hand-written tool, get_pet {id}, that does GET
// {upstream}/pets/{id} (forwarding the caller's Authorization header) and
// returns the JSON body as text and as structuredContent. It is what the
// gateway's generated getPet tool is measured against. It listens on loopback
// only, calls only the loopback -upstream, and keeps no state between
// requests (go-sdk Stateless mode).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/bench/internal/benchutil"
)

// getPetIn is the get_pet tool's input.
type getPetIn struct {
	ID int64 `json:"id" jsonschema:"the pet id"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:18083", "loopback listen address")
	upstream := flag.String("upstream", "http://127.0.0.1:18081", "upstream base URL (loopback)")
	sse := flag.Bool("sse", false, "answer with text/event-stream instead of application/json")
	metrics := flag.String("metrics", "", benchutil.MetricsFlagHelp)
	flag.Parse()
	if _, err := benchutil.ServeMetrics(*metrics); err != nil {
		log.Fatalf("gosdk: %v", err)
	}
	getter, err := benchutil.NewPetGetter(*upstream)
	if err != nil {
		log.Fatalf("gosdk: %v", err)
	}
	handler := newHandler(getter, *sse)
	ln, err := benchutil.Listen(*addr)
	if err != nil {
		log.Fatalf("gosdk: %v", err)
	}
	log.Printf("gosdk: MCP on http://%s/mcp -> %s", ln.Addr(), *upstream)
	if err := benchutil.Serve(ln, handler); err != nil {
		log.Fatalf("gosdk: %v", err)
	}
}

// newHandler returns the HTTP handler serving the MCP endpoint at /mcp.
func newHandler(getter *benchutil.PetGetter, sse bool) http.Handler {
	server := mcp.NewServer(&mcp.Implementation{Name: "bench-gosdk", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{
		Name:        "get_pet",
		Description: "Get a pet by id from the demo pet store.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in getPetIn) (*mcp.CallToolResult, any, error) {
		authz := ""
		if req.Extra != nil && req.Extra.Header != nil {
			authz = req.Extra.Header.Get("Authorization")
		}
		status, body, err := getter.Get(ctx, in.ID, authz)
		if err != nil {
			return nil, nil, err // becomes an isError result
		}
		if status/100 != 2 {
			return &mcp.CallToolResult{
				IsError: true,
				Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("upstream HTTP %d: %s", status, body)}},
			}, nil, nil
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: string(body)}},
			StructuredContent: json.RawMessage(body),
		}, nil, nil
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: !sse})
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	return mux
}
