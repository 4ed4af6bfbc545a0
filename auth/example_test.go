package auth_test

import (
	"context"
	"log"
	"net/http"
	"net/url"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
)

// Example shows how a gateway wires the package: public metadata routes,
// the authenticating middleware (and per-tool step-up) in front of the MCP
// handler, and the credential policy in the tool-call path.
func Example() {
	ctx := context.Background()
	v, err := auth.NewValidator(ctx, auth.Config{
		Issuer:      "https://auth.example.com",
		Resource:    "https://mcp.example.com/mcp",
		TenantClaim: "tid",
	})
	if err != nil {
		log.Fatal(err)
	}
	meta := &auth.ResourceMetadata{
		Resource:             v.Resource(),
		AuthorizationServers: []string{"https://auth.example.com"},
		ScopesSupported:      []string{"tools:read"},
	}

	var (
		mcpHandler http.Handler              // the MCP transport
		result     openapi.Result            // the generated tools
		toolScopes = map[string][][]string{} // tool name → required scopes
	)
	for _, tool := range result.Tools {
		toolScopes[tool.Name] = auth.RequiredScopes(tool.Route, result.SecuritySchemes)
	}

	mux := http.NewServeMux()
	if err := meta.Register(mux); err != nil { // public, outside the middleware
		log.Fatal(err)
	}
	stepUp := auth.RequireScopes(meta, func(r *http.Request) [][]string {
		if r.Header.Get(mcp.HeaderMethod) != "tools/call" {
			return nil
		}
		return toolScopes[r.Header.Get(mcp.HeaderName)] // checked against the body by the server
	})
	mux.Handle("/mcp", auth.Middleware(v, meta)(stepUp(mcpHandler)))

	// In the tool-call path, per upstream: exchange the caller's token for
	// one issued to the upstream, then dispatch (proxy.Passthrough forwards
	// Principal.Credential, which Bind has replaced).
	ex, err := auth.NewExchanger(ctx, auth.ExchangeConfig{Issuer: "https://auth.example.com", ClientID: "mcpgate", ClientSecret: "…"})
	if err != nil {
		log.Fatal(err)
	}
	upstream, _ := url.Parse("https://api.example.com")
	fwd := &auth.Forwarding{Mode: auth.ModeExchange, Upstream: upstream, Exchanger: ex}
	toolCall := func(ctx context.Context) error {
		ctx, err := fwd.Bind(ctx)
		if err != nil {
			return err // a tool error: the credential could not be obtained
		}
		_ = ctx // proxy dispatch with ctx
		return nil
	}
	_ = toolCall
}
