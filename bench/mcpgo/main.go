// Command mcpgo is the benchmark's comparison server on
// github.com/mark3labs/mcp-go: the same hand-written get_pet {id} tool as
// bench/gosdk (GET {upstream}/pets/{id}, forwarding the caller's
// Authorization header, JSON body returned as text and structuredContent),
// served over Streamable HTTP.
//
// mcp-go v1.2.1 decides the protocol era per request on one endpoint: it
// serves stateless 2026-07-28 requests (no session) and the legacy
// initialize + Mcp-Session-Id flow for 2025-11-25 and older, so the harness
// can drive it with -proto 2026-07-28 or -proto 2025-11-25. It listens on
// loopback only and calls only the loopback -upstream.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpgate/mcpgate/bench/internal/benchutil"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18084", "loopback listen address")
	upstream := flag.String("upstream", "http://127.0.0.1:18081", "upstream base URL (loopback)")
	metrics := flag.String("metrics", "", benchutil.MetricsFlagHelp)
	flag.Parse()
	if _, err := benchutil.ServeMetrics(*metrics); err != nil {
		log.Fatalf("mcpgo: %v", err)
	}
	getter, err := benchutil.NewPetGetter(*upstream)
	if err != nil {
		log.Fatalf("mcpgo: %v", err)
	}
	ln, err := benchutil.Listen(*addr)
	if err != nil {
		log.Fatalf("mcpgo: %v", err)
	}
	log.Printf("mcpgo: MCP on http://%s/mcp -> %s", ln.Addr(), *upstream)
	if err := benchutil.Serve(ln, newHandler(getter)); err != nil {
		log.Fatalf("mcpgo: %v", err)
	}
}

// newHandler returns the HTTP handler serving the MCP endpoint at /mcp.
func newHandler(getter *benchutil.PetGetter) http.Handler {
	s := server.NewMCPServer("bench-mcpgo", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("get_pet",
		mcp.WithDescription("Get a pet by id from the demo pet store."),
		mcp.WithNumber("id", mcp.Required(), mcp.Description("the pet id")),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id, err := req.RequireInt("id")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		status, body, err := getter.Get(ctx, int64(id), req.Header.Get("Authorization"))
		if err != nil {
			return mcp.NewToolResultErrorFromErr("upstream call failed", err), nil
		}
		if status/100 != 2 {
			return mcp.NewToolResultError(fmt.Sprintf("upstream HTTP %d: %s", status, body)), nil
		}
		return mcp.NewToolResultStructured(json.RawMessage(body), string(body)), nil
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(s, server.WithEndpointPath("/mcp")))
	return mux
}
