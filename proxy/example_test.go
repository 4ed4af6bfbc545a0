package proxy_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"

	"github.com/mcpgate/mcpgate/demo"
	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
	"github.com/mcpgate/mcpgate/proxy"
)

// Example wires a gateway: generate tools from an OpenAPI document, compile
// one endpoint per tool, and register each with an MCP server whose
// handler dispatches to the upstream with the caller's own bearer token.
func Example() {
	ctx := context.Background()
	api := httptest.NewServer(demo.New(demo.Options{RequireAuth: true}))
	defer api.Close()

	doc, err := openapi.Parse(ctx, demo.OpenAPI(), "demo", openapi.LoadOptions{})
	if err != nil {
		panic(err)
	}
	gen, err := openapi.Generate(doc, openapi.GenerateOptions{})
	if err != nil {
		panic(err)
	}
	base, _ := url.Parse(api.URL) // the configured upstream, not the document's servers
	px, err := proxy.New(proxy.Config{BaseURL: base, Auth: proxy.Passthrough()})
	if err != nil {
		panic(err)
	}
	endpoints, err := px.Endpoints(gen.Tools) // once per tool-set change
	if err != nil {
		panic(err)
	}

	srv := mcp.NewServer(mcp.Implementation{Name: "gateway", Version: "0"}, nil)
	for i := range gen.Tools {
		t := &gen.Tools[i]
		e := endpoints[t.Name]
		if e == nil {
			continue
		}
		a := t.Annotations
		err := srv.AddTool(&mcp.Tool{
			Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
			Annotations: &mcp.ToolAnnotations{Title: a.Title, ReadOnlyHint: &a.ReadOnlyHint,
				DestructiveHint: &a.DestructiveHint, IdempotentHint: &a.IdempotentHint, OpenWorldHint: &a.OpenWorldHint},
		}, px.Handler(e))
		if err != nil {
			panic(err)
		}
	}

	// The transport's auth layer puts the caller in the context; the
	// in-process client does the same with its Principal.
	c := mcp.NewClient(srv)
	c.Principal = mcp.Principal{Subject: "demo-user", Credential: mcp.NewSecret("demo-token")}
	res, err := c.CallTool(ctx, "getCurrentUser", map[string]any{"theme": "dark"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.IsError, res.Content[0].Text)

	c.Principal = mcp.Principal{} // anonymous: the upstream answers 401
	res, err = c.CallTool(ctx, "getPet", map[string]any{"petId": 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.IsError, res.Content[0].Text[:45])
	// Output:
	// false {"subject":"demo-user","authenticated":true,"preferences":{"theme":"dark"}}
	// true Authentication failed (HTTP 401 Unauthorized)
}
