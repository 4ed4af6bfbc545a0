package connect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/mrtr"
)

// Wiring one API whose users connect their own GitHub account: the pages
// on the gateway's mux, the decorator around the API's tools, the resolver
// and transport on the upstream client. A caller without a grant is asked
// to open the gateway's connect page.
func Example() {
	ring := mrtr.GenerateKeyRing(slog.New(slog.DiscardHandler)) // production: mrtr.KeyRingFromEnv
	conn, err := connect.New(connect.Options{
		BaseURL: "https://mcp.example.com",
		Ring:    ring,
		Store:   &connect.MemoryStore{},            // production: sqlite.NewGrantStore or postgres.NewGrantStore
		Replay:  mrtr.NewMemoryReplayCache(0, nil), // production: the store's replay cache
		Logger:  slog.New(slog.DiscardHandler),
	}, connect.Provider{
		API: "github", Title: "GitHub", ClientID: "Iv1.0123", ClientSecret: "from the environment",
		AuthURL: "https://github.com/login/oauth/authorize", TokenURL: "https://github.com/login/oauth/access_token",
		Scopes: []string{"repo"},
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/connect/", conn.Handler())
	fmt.Println("register this callback at GitHub:", conn.RedirectURL("github"))

	upstream := &http.Client{Transport: conn.Transport(nil)}
	resolver := conn.AuthResolver("github") // a proxy.AuthResolver
	decorate, err := conn.Decorator("github")
	if err != nil {
		panic(err)
	}
	s := mcp.NewServer(mcp.Implementation{Name: "gateway", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "listRepos", InputSchema: []byte(`{"type":"object"}`)}, decorate(
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			out, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://api.github.com/user/repos", nil)
			if err := resolver.Apply(ctx, out, nil); err != nil {
				return mcp.ToolError(err.Error()), nil
			}
			_ = upstream // upstream.Do(out) with the user's token
			return mcp.TextResult("…"), nil
		}))

	client := mcp.NewClient(s)
	client.Principal = mcp.Principal{Subject: "alice"}
	client.Capabilities = mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &struct{}{}}}
	client.AnswerInput = func(ctx context.Context, key string, in mcp.InputRequest) (any, error) {
		var p mcp.ElicitParams
		_ = json.Unmarshal(in.Params.(json.RawMessage), &p)
		fmt.Println(key, p.Mode, strings.SplitN(p.URL, "?", 2)[0])
		return nil, fmt.Errorf("the user has not connected yet")
	}
	_, err = client.CallTool(context.Background(), "listRepos", nil)
	fmt.Println(err)
	// Output:
	// register this callback at GitHub: https://mcp.example.com/connect/github/callback
	// connect url https://mcp.example.com/connect/github
	// the user has not connected yet
}
