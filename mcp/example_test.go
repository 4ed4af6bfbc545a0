package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/mcpgate/mcpgate/mcp"
)

// A tool with typed arguments, called through the in-memory client: the
// request is encoded, admitted and dispatched exactly as over a transport.
func ExampleAddTool() {
	s := mcp.NewServer(mcp.Implementation{Name: "weather", Version: "1.0.0"}, nil)
	type forecastArgs struct {
		City string `json:"city" jsonschema:"the city to forecast"`
		Days int    `json:"days,omitempty"`
	}
	err := mcp.AddTool(s, &mcp.Tool{Name: "forecast", Description: "Forecast for a city"},
		func(ctx context.Context, req *mcp.CallToolRequest, in forecastArgs) (*mcp.CallToolResult, error) {
			if in.Days == 0 {
				in.Days = 1
			}
			return mcp.TextResult(fmt.Sprintf("Sunny in %s for %d day(s)", in.City, in.Days)), nil
		})
	if err != nil {
		log.Fatal(err)
	}

	c := mcp.NewClient(s)
	ctx := context.Background()
	tools, err := c.ListTools(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s\n", tools[0].Name, tools[0].InputSchema)

	res, err := c.CallTool(ctx, "forecast", map[string]any{"city": "Oslo", "days": 3})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].Text)

	// Arguments that do not fit the Go type are a tool error the model can
	// read, not a protocol error.
	res, err = c.CallTool(ctx, "forecast", map[string]any{"city": 42})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.IsError)
	// Output:
	// forecast: {"additionalProperties":false,"properties":{"city":{"description":"the city to forecast","type":"string"},"days":{"type":"integer"}},"required":["city"],"type":"object"}
	// Sunny in Oslo for 3 day(s)
	// true
}

// A handler that needs the user's input pauses with RequireInput; the
// client answers the input requests and retries, and the handler runs again
// with the answers and its sealed continuation.
func ExampleRequireInput() {
	s := mcp.NewServer(mcp.Implementation{Name: "shop", Version: "1.0.0"}, nil)
	type pending struct {
		Item string `json:"item"`
	}
	err := mcp.AddTool(s, &mcp.Tool{Name: "buy"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Item string `json:"item"`
		}) (*mcp.CallToolResult, error) {
			ans, ok := req.Elicitation("confirm")
			if !ok {
				return nil, mcp.RequireInput(map[string]mcp.InputRequest{
					"confirm": mcp.ElicitForm("Buy "+in.Item+"?", json.RawMessage(`{"type":"object","properties":{}}`)),
				}, pending{Item: in.Item})
			}
			p, err := mcp.ContinuationAs[pending](req.Request)
			if err != nil {
				return nil, err
			}
			return mcp.TextResult(fmt.Sprintf("%s: %s (round %d)", p.Item, ans.Action, req.Round)), nil
		})
	if err != nil {
		log.Fatal(err)
	}

	c := mcp.NewClient(s)
	c.Capabilities.Elicitation = &mcp.ElicitationCapability{}
	c.AnswerInput = func(ctx context.Context, key string, ir mcp.InputRequest) (any, error) {
		var p mcp.ElicitParams
		if err := json.Unmarshal(ir.Params.(json.RawMessage), &p); err != nil {
			return nil, err
		}
		fmt.Printf("asked %s: %q\n", key, p.Message)
		return mcp.ElicitResult{Action: "accept"}, nil
	}
	res, err := c.CallTool(context.Background(), "buy", map[string]any{"item": "tea"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// asked confirm: "Buy tea?"
	// tea: accept (round 1)
}

// A resource template serves every URI that matches it; the variables of the
// match arrive in ReadResourceRequest.Vars.
func ExampleServer_AddResourceTemplate() {
	s := mcp.NewServer(mcp.Implementation{Name: "notes", Version: "1.0.0"}, nil)
	err := s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "notes://{owner}/{+path}", Name: "note", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			text := fmt.Sprintf("note %s of %s", req.Vars["path"], req.Vars["owner"])
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: req.URI, MIMEType: "text/plain", Text: text}}}, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	c := mcp.NewClient(s)
	res, err := c.ReadResource(context.Background(), "notes://ada/2026/plans.txt")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Contents[0].Text)
	_, err = c.ReadResource(context.Background(), "other://x")
	fmt.Println(err)
	// Output:
	// note 2026/plans.txt of ada
	// jsonrpc error -32602: Resource not found
}

// Client.Do shows the raw exchange, including the notifications a handler
// sent before its result.
func ExampleClient_Do() {
	s := mcp.NewServer(mcp.Implementation{Name: "jobs", Version: "1.0.0"}, nil)
	err := mcp.AddTool(s, &mcp.Tool{Name: "work"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
			req.Progress(1, 2, "halfway")
			req.Log(mcp.LevelDebug, "work", "not shown: the client asked for info and above")
			req.Log(mcp.LevelWarning, "work", "disk almost full")
			return mcp.TextResult("done"), nil
		})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := mcp.NewClient(s).Do(context.Background(), "tools/call", map[string]any{
		"name":  "work",
		"_meta": map[string]any{"progressToken": "job-1", mcp.MetaLogLevel: "info"},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, n := range resp.Notifications {
		fmt.Println(string(n))
	}
	fmt.Println(string(resp.Result))
	// Output:
	// {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"job-1","progress":1,"total":2,"message":"halfway"}}
	// {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","logger":"work","data":"disk almost full"}}
	// {"resultType":"complete","content":[{"type":"text","text":"done"}],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"jobs","version":"1.0.0"}}}
}

// Mounting the Streamable HTTP transport: one JSON-RPC message per POST,
// with the request metadata mirrored in headers.
func ExampleNewHTTPHandler() {
	s := mcp.NewServer(mcp.Implementation{Name: "hello", Version: "1.0.0"}, nil)
	err := mcp.AddTool(s, &mcp.Tool{Name: "greet"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Name string `json:"name"`
		}) (*mcp.CallToolResult, error) {
			return mcp.TextResult("Hello, " + in.Name), nil
		})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(s, nil)) // loopback Host and Origin only by default
	ts := httptest.NewServer(mux)
	defer ts.Close()

	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "greet")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"))
	fmt.Println(string(out))

	// Without the Mcp-Name header the request is refused with -32020.
	req, _ = http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp2.Body.Close()
	out, _ = io.ReadAll(resp2.Body)
	fmt.Println(resp2.StatusCode, string(out))
	// Output:
	// 200 application/json
	// {"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"Hello, Ada"}],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"hello","version":"1.0.0"}}}}
	// 400 {"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Name header is required for tools/call"}}
}

// A Principal's credential prints redacted; Reveal is the one way to read it.
func ExampleSecret() {
	p := mcp.Principal{Subject: "user-1", Credential: mcp.NewSecret("s3cr3t")}
	fmt.Printf("%+v\n", p)
	fmt.Println(p.Credential.Reveal() == "s3cr3t")
	// Output:
	// {Subject:user-1 Tenant: Scopes:[] Claims:map[] Credential:[REDACTED]}
	// true
}

// methodCounter counts requests by method and outcome: what a metrics
// observer does.
type methodCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (m *methodCounter) Begin(ctx context.Context, r *mcp.RequestInfo) context.Context { return ctx }

func (m *methodCounter) End(ctx context.Context, r *mcp.RequestInfo, o mcp.Outcome) {
	outcome := "ok"
	switch {
	case o.ErrorCode != 0:
		outcome = fmt.Sprint("error ", o.ErrorCode)
	case o.ToolError:
		outcome = "tool error"
	}
	m.mu.Lock()
	m.counts[r.Method+" "+r.Name+": "+outcome]++
	m.mu.Unlock()
}

// An Observer sees every request, whatever the transport or era.
func ExampleObserver() {
	counter := &methodCounter{counts: map[string]int{}}
	s := mcp.NewServer(mcp.Implementation{Name: "observed", Version: "1"}, &mcp.ServerOptions{Observer: counter})
	_ = s.AddTool(&mcp.Tool{Name: "lookup"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.ToolError("not found"), nil
	})
	c := mcp.NewClient(s)
	_, _ = c.CallTool(context.Background(), "lookup", nil)
	_, _ = c.CallTool(context.Background(), "missing", nil)
	fmt.Println(counter.counts)
	// Output:
	// map[tools/call lookup: tool error:1 tools/call missing: error -32602:1]
}

// A reload builds a whole new tool set off the request path and swaps it
// in at once; an unlisted tool stays callable by name.
func ExampleServer_SetTools() {
	s := mcp.NewServer(mcp.Implementation{Name: "reloading", Version: "1"}, nil)
	text := func(t string) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.TextResult(t), nil
		}
	}
	ts := s.NewToolSet()
	_ = ts.Add(&mcp.Tool{Name: "search", Description: "Find a tool"}, text("found"))
	_ = ts.Add(&mcp.Tool{Name: "getPet", Description: "Get a pet"}, text("a cat"))
	_ = ts.Unlist("getPet")
	if err := s.SetTools(ts); err != nil {
		fmt.Println(err)
	}
	c := mcp.NewClient(s)
	tools, _ := c.ListTools(context.Background())
	res, _ := c.CallTool(context.Background(), "getPet", nil)
	fmt.Println(len(tools), tools[0].Name, res.Content[0].Text)
	// Output:
	// 1 search a cat
}
