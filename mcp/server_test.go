package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/mrtr"
)

func quietServer(opts *mcp.ServerOptions) *mcp.Server {
	if opts == nil {
		opts = &mcp.ServerOptions{}
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	return mcp.NewServer(mcp.Implementation{Name: "unit", Version: "0.1"}, opts)
}

func addText(t testing.TB, s *mcp.Server, name, text string) {
	t.Helper()
	must(t, s.AddTool(&mcp.Tool{Name: name}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.TextResult(text), nil
	}))
}

func doRPC(t *testing.T, c *mcp.Client, method string, params map[string]any) *mcp.Response {
	t.Helper()
	resp, err := c.Do(t.Context(), method, params)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func decodeObj(t *testing.T, raw json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not an object: %v: %s", err, raw)
	}
	return m
}

// listPage returns the names and nextCursor of one tools/list page.
func listPage(t *testing.T, c *mcp.Client, cursor string) ([]string, string, *mcp.Error) {
	t.Helper()
	params := map[string]any{}
	if cursor != "" {
		params["cursor"] = cursor
	}
	resp := doRPC(t, c, "tools/list", params)
	if resp.Error != nil {
		return nil, "", resp.Error
	}
	var page struct {
		Tools      []mcp.Tool `json:"tools"`
		NextCursor string     `json:"nextCursor"`
	}
	if err := json.Unmarshal(resp.Result, &page); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range page.Tools {
		names = append(names, tl.Name)
	}
	return names, page.NextCursor, nil
}

func TestPagination(t *testing.T) {
	s := quietServer(&mcp.ServerOptions{PageSize: 2})
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		addText(t, s, n, n)
	}
	c := mcp.NewClient(s)

	// Walk every page.
	var pages []string
	cursor := ""
	var cursors []string
	for {
		names, next, jerr := listPage(t, c, cursor)
		if jerr != nil {
			t.Fatal(jerr)
		}
		pages = append(pages, strings.Join(names, ","))
		if next == "" {
			break
		}
		cursors = append(cursors, next)
		cursor = next
	}
	if got := strings.Join(pages, "|"); got != "a,b|c,d|e" {
		t.Fatalf("pages = %s", got)
	}
	all, err := c.ListTools(t.Context())
	if err != nil || len(all) != 5 {
		t.Fatalf("ListTools = %d, %v", len(all), err)
	}

	for _, tc := range []struct{ name, cursor string }{
		{"not base64", "!!"},
		{"unknown key", "eg"}, // "z"
		{"empty", ""},
	} {
		t.Run("invalid cursor "+tc.name, func(t *testing.T) {
			resp := doRPC(t, c, "tools/list", map[string]any{"cursor": tc.cursor})
			if resp.Error == nil || resp.Error.Code != mcp.CodeInvalidParams {
				t.Fatalf("got %+v, want -32602", resp.Error)
			}
			if resp.Error.HTTPStatus() != http.StatusOK {
				t.Errorf("status %d", resp.Error.HTTPStatus())
			}
		})
	}

	// The cursor of a removed item is invalid; the cursor of an item that
	// moved still continues from that item.
	s.RemoveTools("c")
	if _, _, jerr := listPage(t, c, cursors[0]); jerr == nil || jerr.Code != mcp.CodeInvalidParams {
		t.Errorf("cursor of removed item: %v", jerr)
	}
	names, next, jerr := listPage(t, c, cursors[1]) // "e", now at index 3
	if jerr != nil || strings.Join(names, ",") != "e" || next != "" {
		t.Errorf("moved cursor: %v %q %v", names, next, jerr)
	}
	names, next, _ = listPage(t, c, "")
	if strings.Join(names, ",") != "a,b" || next == "" {
		t.Errorf("first page after removal: %v %q", names, next)
	}
	names, _, _ = listPage(t, c, next)
	if strings.Join(names, ",") != "d,e" {
		t.Errorf("second page after removal: %v", names)
	}
}

func TestListPagesCached(t *testing.T) {
	s := quietServer(nil)
	addText(t, s, "a", "a")
	c := mcp.NewClient(s)
	r1 := doRPC(t, c, "tools/list", nil)
	r2 := doRPC(t, c, "tools/list", nil)
	if r1.Error != nil || r2.Error != nil {
		t.Fatal(r1.Error, r2.Error)
	}
	if &r1.Result[0] != &r2.Result[0] {
		t.Error("tools/list re-encoded an unchanged page")
	}
	addText(t, s, "b", "b")
	r3 := doRPC(t, c, "tools/list", nil)
	if &r3.Result[0] == &r1.Result[0] || !strings.Contains(string(r3.Result), `"name":"b"`) {
		t.Errorf("page not invalidated by AddTool: %s", r3.Result)
	}
	r4 := doRPC(t, c, "tools/list", nil)
	if &r4.Result[0] != &r3.Result[0] {
		t.Error("new page not cached")
	}
	// Replacing a tool keeps its position and invalidates the page too.
	must(t, s.AddTool(&mcp.Tool{Name: "a", Description: "new"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.TextResult("a2"), nil
	}))
	names, _, _ := listPage(t, c, "")
	r5 := doRPC(t, c, "tools/list", nil)
	if strings.Join(names, ",") != "a,b" || !strings.Contains(string(r5.Result), `"description":"new"`) {
		t.Errorf("after replace: %v %s", names, r5.Result)
	}
	// server/discover is cached and reset when capabilities change.
	d1 := doRPC(t, c, "server/discover", nil)
	if strings.Contains(string(d1.Result), `"prompts"`) {
		t.Fatalf("prompts advertised too early: %s", d1.Result)
	}
	must(t, s.AddPrompt(&mcp.Prompt{Name: "p"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	}))
	d2 := doRPC(t, c, "server/discover", nil)
	if !strings.Contains(string(d2.Result), `"prompts":{"listChanged":true}`) {
		t.Errorf("discover not refreshed: %s", d2.Result)
	}
}

func TestResultEnvelope(t *testing.T) {
	s := quietServer(&mcp.ServerOptions{ListTTL: 90 * time.Second, CacheScope: mcp.CachePrivate, ResourceTTL: 2 * time.Second, Instructions: "Be nice."})
	addText(t, s, "t", "x")
	must(t, mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
		return nil, mcp.RequireInput(map[string]mcp.InputRequest{"r": mcp.ListRoots()}, nil)
	}))
	must(t, s.AddTool(&mcp.Tool{Name: "own-meta"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("m")}, Meta: map[string]any{"com.example/x": 1}}, nil
	}))
	must(t, s.AddPrompt(&mcp.Prompt{Name: "p"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	}))
	must(t, s.AddResource(&mcp.Resource{URI: "test://r", Name: "r"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: req.URI, Text: "r"}}}, nil
	}))
	must(t, s.AddResource(&mcp.Resource{URI: "test://live", Name: "live"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		ttl := int64(0)
		return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: req.URI, Text: "now"}}, TTLMs: &ttl, Scope: mcp.CachePublic}, nil
	}))
	must(t, s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://t/{x}", Name: "t"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: req.URI, Text: req.Vars["x"]}}}, nil
	}))
	s.SetCompletionHandler(func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.Completion, error) {
		return &mcp.Completion{Values: []string{"a"}}, nil
	})
	c := mcp.NewClient(s)
	c.Capabilities.Roots = &struct{}{}

	const serverInfo = `{"io.modelcontextprotocol/serverInfo":{"name":"unit","version":"0.1"}}`
	for _, tc := range []struct {
		method     string
		params     map[string]any
		resultType string
		ttl        string // "" means the result must not carry ttlMs/cacheScope
		scope      string
		meta       string
	}{
		{"server/discover", nil, "complete", "90000", "private", serverInfo},
		{"tools/list", nil, "complete", "90000", "private", serverInfo},
		{"prompts/list", nil, "complete", "90000", "private", serverInfo},
		{"resources/list", nil, "complete", "90000", "private", serverInfo},
		{"resources/templates/list", nil, "complete", "90000", "private", serverInfo},
		{"resources/read", map[string]any{"uri": "test://r"}, "complete", "2000", "private", serverInfo},
		{"resources/read", map[string]any{"uri": "test://live"}, "complete", "0", "public", serverInfo},
		{"resources/read", map[string]any{"uri": "test://t/9"}, "complete", "2000", "private", serverInfo},
		{"tools/call", map[string]any{"name": "t"}, "complete", "", "", serverInfo},
		{"tools/call", map[string]any{"name": "ask"}, "input_required", "", "", serverInfo},
		{"tools/call", map[string]any{"name": "own-meta"}, "complete", "", "", `{"com.example/x":1,"io.modelcontextprotocol/serverInfo":{"name":"unit","version":"0.1"}}`},
		{"prompts/get", map[string]any{"name": "p"}, "complete", "", "", serverInfo},
		{"completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "p"}, "argument": map[string]any{"name": "a", "value": ""}}, "complete", "", "", serverInfo},
	} {
		t.Run(tc.method+fmt.Sprint(tc.params), func(t *testing.T) {
			resp := doRPC(t, c, tc.method, tc.params)
			if resp.Error != nil {
				t.Fatal(resp.Error)
			}
			m := decodeObj(t, resp.Result)
			if string(m["resultType"]) != `"`+tc.resultType+`"` {
				t.Errorf("resultType = %s", m["resultType"])
			}
			if !strings.HasPrefix(string(resp.Result), `{"resultType":`) {
				t.Errorf("resultType is not first: %.40s", resp.Result)
			}
			if !jsonEqual(m["_meta"], []byte(tc.meta)) {
				t.Errorf("_meta = %s, want %s", m["_meta"], tc.meta)
			}
			if string(m["ttlMs"]) != tc.ttl {
				t.Errorf("ttlMs = %s, want %q", m["ttlMs"], tc.ttl)
			}
			if tc.scope != "" && string(m["cacheScope"]) != `"`+tc.scope+`"` || tc.scope == "" && m["cacheScope"] != nil {
				t.Errorf("cacheScope = %s, want %q", m["cacheScope"], tc.scope)
			}
		})
	}
	d := doRPC(t, c, "server/discover", nil)
	var disc mcp.DiscoverResult
	must(t, json.Unmarshal(d.Result, &disc))
	if fmt.Sprint(disc.SupportedVersions) != "[2026-07-28]" || disc.Instructions != "Be nice." || disc.Capabilities.Completions == nil ||
		disc.Capabilities.Resources == nil || !disc.Capabilities.Resources.Subscribe || disc.Capabilities.Logging != nil {
		t.Errorf("discover = %s", d.Result)
	}
}

// notifMethods lists the methods of the notifications of a response.
func notifMethods(t *testing.T, resp *mcp.Response) []string {
	t.Helper()
	var out []string
	for _, n := range resp.Notifications {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Level         string          `json:"level"`
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"params"`
		}
		must(t, json.Unmarshal(n, &m))
		switch m.Method {
		case "notifications/message":
			out = append(out, "log:"+m.Params.Level)
		case "notifications/progress":
			out = append(out, "progress:"+string(m.Params.ProgressToken))
		default:
			out = append(out, m.Method)
		}
	}
	return out
}

func TestProgressAndLogFiltering(t *testing.T) {
	s := quietServer(nil)
	must(t, mcp.AddTool(s, &mcp.Tool{Name: "chatty"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
		must(t, req.Progress(1, 2, ""))
		for _, l := range []mcp.LogLevel{mcp.LevelDebug, mcp.LevelInfo, mcp.LevelWarning, mcp.LevelError, mcp.LevelEmergency} {
			must(t, req.Log(l, "", string(l)))
		}
		must(t, req.Progress(2, 2, ""))
		return mcp.TextResult("ok"), nil
	}))
	c := mcp.NewClient(s)
	for _, tc := range []struct {
		name string
		meta map[string]any
		want string
	}{
		{"nothing asked", nil, "[]"},
		{"progress only", map[string]any{"progressToken": 5}, "[progress:5 progress:5]"},
		{"string token", map[string]any{"progressToken": "p"}, `[progress:"p" progress:"p"]`},
		{"null token", map[string]any{"progressToken": nil}, "[]"},
		{"warning and up", map[string]any{mcp.MetaLogLevel: "warning"}, "[log:warning log:error log:emergency]"},
		{"debug", map[string]any{mcp.MetaLogLevel: "debug"}, "[log:debug log:info log:warning log:error log:emergency]"},
		{"emergency and progress", map[string]any{mcp.MetaLogLevel: "emergency", "progressToken": "x"}, `[progress:"x" log:emergency progress:"x"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := doRPC(t, c, "tools/call", map[string]any{"name": "chatty", "_meta": tc.meta})
			if resp.Error != nil {
				t.Fatal(resp.Error)
			}
			if got := fmt.Sprint(notifMethods(t, resp)); got != tc.want {
				t.Errorf("notifications = %s, want %s", got, tc.want)
			}
		})
	}
}

// httpPost posts one MCP request with the headers derived from method and
// name.
func httpPost(ctx context.Context, t *testing.T, url, method, name, params string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params
	if params != "" {
		body += ","
	}
	body += metaOK + `}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion)
	req.Header.Set(mcp.HeaderMethod, method)
	if name != "" {
		req.Header.Set(mcp.HeaderName, name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestHTTPResponseKind(t *testing.T) {
	s := quietServer(nil)
	must(t, mcp.AddTool(s, &mcp.Tool{Name: "chatty"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
		req.Progress(1, 1, "")
		return mcp.TextResult("ok"), nil
	}))
	addText(t, s, "quiet", "ok")
	ts := httptest.NewServer(mcp.NewHTTPHandler(s, nil))
	defer ts.Close()
	withToken := `"_meta":{` + metaVersion + `,` + metaCaps + `,"progressToken":"p"}`
	for _, tc := range []struct {
		name, tool, params string
		sse                bool
	}{
		{"no notifications", "quiet", `"name":"quiet"`, false},
		{"token but no notifications", "quiet", `"name":"quiet",` + withToken, false},
		{"progress without token", "chatty", `"name":"chatty"`, false},
		{"progress with token", "chatty", `"name":"chatty",` + withToken, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A case with its own _meta gets no default one.
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + tc.params
			if !strings.Contains(tc.params, "_meta") {
				body += "," + metaOK
			}
			body += `}}`
			req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion)
			req.Header.Set(mcp.HeaderMethod, "tools/call")
			req.Header.Set(mcp.HeaderName, tc.tool)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			ct := resp.Header.Get("Content-Type")
			if tc.sse {
				if ct != "text/event-stream" || resp.Header.Get("X-Accel-Buffering") != "no" || resp.Header.Get("Cache-Control") != "no-cache" {
					t.Errorf("headers %v", resp.Header)
				}
				events := strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n")
				if len(events) != 2 || !strings.HasPrefix(events[0], `data: {"jsonrpc":"2.0","method":"notifications/progress"`) ||
					!strings.HasPrefix(events[1], `data: {"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"`) {
					t.Errorf("events %q", events)
				}
			} else if ct != "application/json" || !strings.HasPrefix(string(out), `{"jsonrpc":"2.0","id":1,"result":`) {
				t.Errorf("%s: %s", ct, out)
			}
		})
	}
}

func TestHTTPClientGoneCancelsHandler(t *testing.T) {
	s := quietServer(nil)
	started, cancelled := make(chan struct{}), make(chan error, 1)
	must(t, s.AddTool(&mcp.Tool{Name: "block"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(started)
		<-ctx.Done()
		cancelled <- ctx.Err()
		return nil, ctx.Err()
	}))
	ts := httptest.NewServer(mcp.NewHTTPHandler(s, nil))
	defer ts.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(rpc("tools/call", `"name":"block"`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion)
		req.Header.Set(mcp.HeaderMethod, "tools/call")
		req.Header.Set(mcp.HeaderName, "block")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Error("request finished although the client went away")
		}
	}()
	<-started
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("handler context: %v", err)
	}
	<-done
}

func TestHandlerPanic(t *testing.T) {
	s := quietServer(nil)
	must(t, s.AddTool(&mcp.Tool{Name: "boom"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		panic("kaboom")
	}))
	must(t, s.AddPrompt(&mcp.Prompt{Name: "boom"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		var m map[string]int
		//lint:ignore SA5000 the nil map write is the panic under test
		m["x"]++
		return nil, nil
	}))
	addText(t, s, "ok", "fine")
	ts := httptest.NewServer(mcp.NewHTTPHandler(s, nil))
	defer ts.Close()
	for i := 0; i < 3; i++ {
		for _, tc := range []struct{ method, name string }{{"tools/call", "boom"}, {"prompts/get", "boom"}} {
			resp := httpPost(t.Context(), t, ts.URL, tc.method, tc.name, `"name":"`+tc.name+`"`)
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}`
			if resp.StatusCode != 200 || string(out) != want {
				t.Errorf("%s: %d %s", tc.method, resp.StatusCode, out)
			}
			if strings.Contains(string(out), "kaboom") {
				t.Error("panic value leaked to the client")
			}
		}
	}
	resp := httpPost(t.Context(), t, ts.URL, "tools/call", "ok", `"name":"ok"`)
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(out), `"text":"fine"`) {
		t.Errorf("after panics: %s", out)
	}
	// The in-memory client goes through the same recovery.
	r := doRPC(t, mcp.NewClient(s), "tools/call", map[string]any{"name": "boom"})
	if r.Error == nil || r.Error.Code != mcp.CodeInternalError {
		t.Errorf("in-memory: %+v", r.Error)
	}
}

func TestHandlerErrors(t *testing.T) {
	s := quietServer(nil)
	must(t, s.AddTool(&mcp.Tool{Name: "plain"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("the database is down")
	}))
	must(t, s.AddTool(&mcp.Tool{Name: "rpc"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, fmt.Errorf("wrapped: %w", mcp.ErrInvalidParams("bad %s", "thing"))
	}))
	must(t, s.AddTool(&mcp.Tool{Name: "nil"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, nil
	}))
	must(t, s.AddPrompt(&mcp.Prompt{Name: "secret"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return nil, errors.New("password=hunter2")
	}))
	must(t, s.AddResource(&mcp.Resource{URI: "test://empty", Name: "e"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	}))
	c := mcp.NewClient(s)
	for _, tc := range []struct {
		method, name string
		code         int
		want         string // substring of the result or the error message
	}{
		{"tools/call", "plain", 0, `"isError":true`},
		{"tools/call", "rpc", mcp.CodeInvalidParams, "bad thing"},
		{"tools/call", "nil", mcp.CodeInternalError, "Internal error"},
		{"prompts/get", "secret", mcp.CodeInternalError, "Internal error"},
		{"resources/read", "test://empty", mcp.CodeInvalidParams, "Resource not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "name"
			if tc.method == "resources/read" {
				key = "uri"
			}
			r := doRPC(t, c, tc.method, map[string]any{key: tc.name})
			switch {
			case tc.code == 0 && (r.Error != nil || !strings.Contains(string(r.Result), tc.want)):
				t.Errorf("%+v %s", r.Error, r.Result)
			case tc.code != 0 && (r.Error == nil || r.Error.Code != tc.code || !strings.Contains(r.Error.Message, tc.want)):
				t.Errorf("%+v, want %d %q", r.Error, tc.code, tc.want)
			}
			if r.Error != nil && strings.Contains(r.Error.Message, "hunter2") {
				t.Error("internal error text leaked")
			}
		})
	}
}

// stdioSession runs ServeStdio over pipes; lines delivers what the server
// writes, one message per line, and is closed when the server returns.
type stdioSession struct {
	in    *io.PipeWriter
	lines chan string
	done  chan error
}

func startStdio(t *testing.T, s *mcp.Server, opts *mcp.StdioOptions) *stdioSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss := &stdioSession{in: inW, lines: make(chan string, 64), done: make(chan error, 1)}
	go func() {
		err := mcp.ServeStdio(context.Background(), s, inR, outW, opts)
		outW.Close()
		ss.done <- err
	}()
	go func() {
		defer close(ss.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			ss.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { inW.Close() })
	return ss
}

func (ss *stdioSession) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(ss.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (ss *stdioSession) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-ss.lines:
		if !ok {
			t.Fatal("output ended")
		}
		return l
	case <-t.Context().Done():
		t.Fatal("no output")
	}
	return ""
}

// close ends the input and returns every remaining output line.
func (ss *stdioSession) close(t *testing.T) []string {
	t.Helper()
	ss.in.Close()
	var rest []string
	for l := range ss.lines {
		rest = append(rest, l)
	}
	if err := <-ss.done; err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
	return rest
}

func stdioReq(id, method, members string) string {
	return strings.Replace(rpc(method, members), `"id":7`, `"id":`+id, 1)
}

func TestStdio(t *testing.T) {
	t.Run("concurrent requests", func(t *testing.T) {
		s := quietServer(nil)
		release := make(chan struct{})
		must(t, s.AddTool(&mcp.Tool{Name: "wait"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-release
			return mcp.TextResult("waited"), nil
		}))
		must(t, s.AddTool(&mcp.Tool{Name: "release"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(release)
			return mcp.TextResult("released"), nil
		}))
		ss := startStdio(t, s, nil)
		// "wait" can only finish once "release" ran: a sequential server
		// would deadlock here.
		ss.send(t, stdioReq("1", "tools/call", `"name":"wait"`))
		ss.send(t, stdioReq("2", "tools/call", `"name":"release"`))
		got := map[string]bool{}
		for range 2 {
			l := ss.next(t)
			switch {
			case strings.HasPrefix(l, `{"jsonrpc":"2.0","id":1,"result":`) && strings.Contains(l, "waited"):
				got["1"] = true
			case strings.HasPrefix(l, `{"jsonrpc":"2.0","id":2,"result":`) && strings.Contains(l, "released"):
				got["2"] = true
			default:
				t.Errorf("unexpected %s", l)
			}
		}
		if len(got) != 2 {
			t.Errorf("got %v", got)
		}
		if rest := ss.close(t); len(rest) != 0 {
			t.Errorf("extra output %q", rest)
		}
	})

	t.Run("cancelled request gets no response", func(t *testing.T) {
		s := quietServer(nil)
		started, stopped := make(chan struct{}), make(chan struct{})
		must(t, s.AddTool(&mcp.Tool{Name: "block"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(started)
			<-ctx.Done()
			close(stopped)
			return mcp.TextResult("too late"), nil
		}))
		addText(t, s, "ok", "ok")
		ss := startStdio(t, s, nil)
		ss.send(t, stdioReq(`"b-1"`, "tools/call", `"name":"block"`))
		<-started
		// A cancel naming an unknown id, or the same id as a number, is
		// ignored.
		ss.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"other"}}`)
		ss.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		ss.send(t, stdioReq("2", "tools/call", `"name":"ok"`))
		if l := ss.next(t); !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":2,"result"`) {
			t.Fatalf("got %s", l)
		}
		select {
		case <-stopped:
			t.Fatal("handler cancelled by a cancel for another id")
		default:
		}
		ss.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b-1","reason":"stop"}}`)
		<-stopped
		if rest := ss.close(t); len(rest) != 0 {
			t.Errorf("output after cancel: %q", rest)
		}
	})

	t.Run("EOF ends listen streams and lets requests finish", func(t *testing.T) {
		s := quietServer(nil)
		release := make(chan struct{})
		must(t, s.AddTool(&mcp.Tool{Name: "slow"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-release
			return mcp.TextResult("slow done"), nil
		}))
		ss := startStdio(t, s, nil)
		ss.send(t, stdioReq(`"L"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true,"promptsListChanged":true}`))
		ack := ss.next(t)
		want := `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"},"notifications":{"toolsListChanged":true}}}`
		if ack != want {
			t.Errorf("ack = %s\nwant  %s", ack, want)
		}
		addText(t, s, "new", "x")
		if l := ss.next(t); l != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}` {
			t.Errorf("notification = %s", l)
		}
		ss.send(t, stdioReq("3", "tools/call", `"name":"slow"`))
		ss.in.Close()
		close(release)
		rest := ss.close(t)
		if len(rest) != 1 || !strings.Contains(rest[0], `"id":3,"result"`) || !strings.Contains(rest[0], "slow done") {
			t.Errorf("after EOF: %q", rest)
		}
	})

	t.Run("bad lines", func(t *testing.T) {
		s := quietServer(nil)
		addText(t, s, "ok", "ok")
		ss := startStdio(t, s, &mcp.StdioOptions{MaxMessageBytes: 512})
		for _, tc := range []struct{ line, want string }{
			// An id that cannot be read is answered as null (JSON-RPC 2.0 §5).
			{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok","arguments":{"pad":"` + strings.Repeat("x", 600) + `"}}}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`},
			{strings.Repeat("y", 200_000), `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`}, // longer than the read buffer
			{`{not json`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,`},
			{`[]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`},
			{stdioReq("4", "tools/list", `"_meta":{}`), `{"jsonrpc":"2.0","id":4,"error":{"code":-32602,`},
			{stdioReq("5", "ping", ""), `{"jsonrpc":"2.0","id":5,"error":{"code":-32601,`},
			{stdioReq("6", "tools/call", `"name":"ok"`), `{"jsonrpc":"2.0","id":6,"result":{"resultType":"complete"`},
		} {
			ss.send(t, tc.line)
			if l := ss.next(t); !strings.HasPrefix(l, tc.want) {
				t.Errorf("line %.30q: got %s, want prefix %s", tc.line, l, tc.want)
			}
		}
		// Blank lines are skipped.
		ss.send(t, "")
		ss.send(t, stdioReq("8", "tools/call", `"name":"ok"`))
		if l := ss.next(t); !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":8,"result"`) {
			t.Errorf("after blank: %s", l)
		}
		ss.close(t)
	})

	t.Run("duplicate in-flight id", func(t *testing.T) {
		s := quietServer(nil)
		started, release := make(chan struct{}), make(chan struct{})
		must(t, s.AddTool(&mcp.Tool{Name: "wait"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(started)
			<-release
			return mcp.TextResult("w"), nil
		}))
		ss := startStdio(t, s, nil)
		ss.send(t, stdioReq("9", "tools/call", `"name":"wait"`))
		<-started
		ss.send(t, stdioReq("9", "tools/list", ""))
		if l := ss.next(t); !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":9,"error":{"code":-32600`) {
			t.Errorf("duplicate id: %s", l)
		}
		close(release)
		if l := ss.next(t); !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":9,"result"`) {
			t.Errorf("original: %s", l)
		}
		ss.close(t)
	})
}

func TestListenHTTP(t *testing.T) {
	s := quietServer(nil)
	addText(t, s, "a", "a")
	must(t, s.AddResource(&mcp.Resource{URI: "file:///project/config.json", Name: "cfg"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: req.URI, Text: "{}"}}}, nil
	}))
	ts := httptest.NewServer(mcp.NewHTTPHandler(s, nil))
	defer ts.Close()
	resp := httpPost(t.Context(), t, ts.URL, "subscriptions/listen", "", `"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["file:///project/"]}`)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	rd := bufio.NewReader(resp.Body)
	event := func() string {
		t.Helper()
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended: %v", err)
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				return strings.TrimSuffix(data, "\n")
			}
		}
	}
	const sub = `"_meta":{"io.modelcontextprotocol/subscriptionId":1}`
	// Prompts are not advertised, so the ack leaves promptsListChanged out.
	if e := event(); e != `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{`+sub+`,"notifications":{"toolsListChanged":true,"resourceSubscriptions":["file:///project/"]}}}` {
		t.Fatalf("ack = %s", e)
	}
	// Only requested kinds arrive: a prompt change is filtered out; the
	// tool change and the update under the watched directory arrive, each
	// tagged with the subscription id.
	must(t, s.AddPrompt(&mcp.Prompt{Name: "p"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	}))
	s.ResourceUpdated("file:///elsewhere.txt")
	s.ResourceUpdated("file:///project/config.json")
	if e := event(); e != `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{`+sub+`,"uri":"file:///project/config.json"}}` {
		t.Errorf("event = %s", e)
	}
	addText(t, s, "b", "b")
	if e := event(); e != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{`+sub+`}}` {
		t.Errorf("event = %s", e)
	}
	// Closing the server ends the stream with the listen result.
	s.Close()
	if e := event(); e != `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"unit","version":"0.1"},"io.modelcontextprotocol/subscriptionId":1}}}` {
		t.Errorf("final = %s", e)
	}
}

func TestSchemaFor(t *testing.T) {
	type Inner struct {
		X float64 `json:"x"`
	}
	type Embedded struct {
		E string `json:"e,omitempty"`
	}
	type Args struct {
		Embedded
		Name    string           `json:"name" jsonschema:"who"`
		Age     int              `json:"age,omitempty"`
		Tags    []string         `json:"tags,omitzero"`
		Scores  map[string]uint8 `json:"scores,omitempty"`
		When    time.Time        `json:"when"`
		Maybe   *bool            `json:"maybe"`
		Blob    []byte           `json:"blob,omitempty"`
		Raw     json.RawMessage  `json:"raw,omitempty"`
		Any     any              `json:"any,omitempty"`
		Inner   Inner            `json:"inner"`
		List    []*Inner         `json:"list,omitempty"`
		NoTag   bool             // no json tag: named after the field, required
		Skipped string           `json:"-"`
		//lint:ignore U1000 an unexported field is what SchemaFor must leave out
		hidden int               // unexported: left out
		ByName map[string]string `json:"byName,omitempty"`
	}
	type Node struct {
		Next *Node `json:"next"`
	}
	type BadMap struct {
		M map[int]string `json:"m"`
	}
	type BadChan struct {
		C chan int `json:"c"`
	}
	for _, tc := range []struct {
		name string
		get  func() (json.RawMessage, error)
		want string // schema, or "error: substring"
	}{
		{"empty struct", mcp.SchemaFor[struct{}], `{"type":"object","properties":{},"additionalProperties":false}`},
		{"pointer to struct", mcp.SchemaFor[*Inner], `{"type":"object","properties":{"x":{"type":"number"}},"required":["x"],"additionalProperties":false}`},
		{"map", mcp.SchemaFor[map[string]int], `{"type":"object","additionalProperties":{"type":"integer"}}`},
		{"everything", mcp.SchemaFor[Args], `{"type":"object","additionalProperties":false,
			"required":["name","when","inner","NoTag"],
			"properties":{
				"e":{"type":"string"},
				"name":{"type":"string","description":"who"},
				"age":{"type":"integer"},
				"tags":{"type":"array","items":{"type":"string"}},
				"scores":{"type":"object","additionalProperties":{"type":"integer"}},
				"when":{"type":"string","format":"date-time"},
				"maybe":{"type":"boolean"},
				"blob":{"type":"string","contentEncoding":"base64"},
				"raw":{},
				"any":{},
				"inner":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"],"additionalProperties":false},
				"list":{"type":"array","items":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"],"additionalProperties":false}},
				"NoTag":{"type":"boolean"},
				"byName":{"type":"object","additionalProperties":{"type":"string"}}}}`},
		{"int", mcp.SchemaFor[int], "error: struct or a map"},
		{"slice", mcp.SchemaFor[[]string], "error: struct or a map"},
		{"recursive", mcp.SchemaFor[Node], "error: recursive"},
		{"int map key", mcp.SchemaFor[BadMap], "error: map key"},
		{"chan", mcp.SchemaFor[BadChan], "error: unsupported type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.get()
			if want, ok := strings.CutPrefix(tc.want, "error: "); ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want %q (schema %s)", err, want, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(got, []byte(tc.want)) {
				t.Errorf("schema = %s\nwant %s", got, tc.want)
			}
		})
	}
	// AddTool refuses argument types SchemaFor rejects.
	s := quietServer(nil)
	if err := mcp.AddTool(s, &mcp.Tool{Name: "bad"}, func(ctx context.Context, req *mcp.CallToolRequest, in Node) (*mcp.CallToolResult, error) {
		return nil, nil
	}); err == nil {
		t.Error("AddTool accepted a recursive argument type")
	}
}

func TestMRTR(t *testing.T) {
	type state struct {
		Answers []string `json:"answers"`
	}
	// quiz asks three questions, one per round, carrying the answers in its
	// continuation; it checks the round counter against the continuation.
	quiz := func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Topic string `json:"topic"`
	}) (*mcp.CallToolResult, error) {
		var st state
		if req.Round > 0 {
			var err error
			if st, err = mcp.ContinuationAs[state](req.Request); err != nil {
				return nil, err
			}
			ans, ok := req.Elicitation(fmt.Sprintf("q%d", req.Round))
			if !ok {
				return nil, errors.New("no answer")
			}
			st.Answers = append(st.Answers, fmt.Sprint(ans.Content["a"]))
		} else if _, err := mcp.ContinuationAs[state](req.Request); err == nil {
			return nil, errors.New("continuation on the first round")
		}
		if len(st.Answers) != req.Round {
			return nil, fmt.Errorf("round %d with %d answers", req.Round, len(st.Answers))
		}
		if req.Round == 3 {
			return mcp.TextResult(in.Topic + ": " + strings.Join(st.Answers, ",")), nil
		}
		key := fmt.Sprintf("q%d", req.Round+1)
		return nil, mcp.RequireInput(map[string]mcp.InputRequest{key: mcp.ElicitForm("Question "+key, nil)}, st)
	}
	newServer := func(opts *mcp.ServerOptions) *mcp.Server {
		s := quietServer(opts)
		must(t, mcp.AddTool(s, &mcp.Tool{Name: "quiz"}, quiz))
		must(t, mcp.AddTool(s, &mcp.Tool{Name: "needs"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Kind string `json:"kind"`
		}) (*mcp.CallToolResult, error) {
			var ir mcp.InputRequest
			switch in.Kind {
			case "url":
				ir = mcp.ElicitURL("Sign in", "https://example.com/login")
			case "sampling":
				ir = mcp.Sample(mcp.CreateMessageParams{MaxTokens: 10})
			case "roots":
				ir = mcp.ListRoots()
			default:
				ir = mcp.ElicitForm("?", nil)
			}
			return nil, mcp.RequireInput(map[string]mcp.InputRequest{"k": ir}, nil)
		}))
		return s
	}
	answer := func(ctx context.Context, key string, ir mcp.InputRequest) (any, error) {
		return mcp.ElicitResult{Action: "accept", Content: map[string]any{"a": "ans-" + key}}, nil
	}

	t.Run("rounds and continuation", func(t *testing.T) {
		c := mcp.NewClient(newServer(nil))
		c.Capabilities.Elicitation = &mcp.ElicitationCapability{}
		var asked []string
		c.AnswerInput = func(ctx context.Context, key string, ir mcp.InputRequest) (any, error) {
			asked = append(asked, key+":"+ir.Method)
			return answer(ctx, key, ir)
		}
		res, err := c.CallTool(t.Context(), "quiz", map[string]any{"topic": "go"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Content[0].Text != "go: ans-q1,ans-q2,ans-q3" {
			t.Errorf("result %q", res.Content[0].Text)
		}
		if fmt.Sprint(asked) != "[q1:elicitation/create q2:elicitation/create q3:elicitation/create]" {
			t.Errorf("asked %v", asked)
		}
	})

	t.Run("missing capability", func(t *testing.T) {
		for _, tc := range []struct {
			kind string
			caps mcp.ClientCapabilities
			want string
		}{
			{"form", mcp.ClientCapabilities{}, `{"requiredCapabilities":{"elicitation":{}}}`},
			{"url", mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}}}, `{"requiredCapabilities":{"elicitation":{"url":{}}}}`},
			{"sampling", mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}, `{"requiredCapabilities":{"sampling":{}}}`},
			{"roots", mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}, `{"requiredCapabilities":{"roots":{}}}`},
			{"url", mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &struct{}{}}}, ""},
			{"sampling", mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}, ""},
		} {
			t.Run(tc.kind, func(t *testing.T) {
				c := mcp.NewClient(newServer(nil))
				c.Capabilities = tc.caps
				r := doRPC(t, c, "tools/call", map[string]any{"name": "needs", "arguments": map[string]any{"kind": tc.kind}})
				if tc.want == "" {
					if r.Error != nil || !strings.Contains(string(r.Result), `"resultType":"input_required"`) {
						t.Errorf("declared capability refused: %+v %s", r.Error, r.Result)
					}
					return
				}
				if r.Error == nil || r.Error.Code != mcp.CodeMissingRequiredClientCapability || r.Error.HTTPStatus() != http.StatusBadRequest {
					t.Fatalf("got %+v", r.Error)
				}
				if !jsonEqual(r.Error.Data, []byte(tc.want)) {
					t.Errorf("data = %s, want %s", r.Error.Data, tc.want)
				}
			})
		}
	})

	t.Run("server round limit", func(t *testing.T) {
		codec, err := mrtr.NewCodec(mrtr.GenerateKeyRing(slog.New(slog.DiscardHandler)), mrtr.Options{MaxRounds: 2})
		must(t, err)
		c := mcp.NewClient(newServer(&mcp.ServerOptions{StateCodec: mcp.SealedState(codec)}))
		c.Capabilities.Elicitation = &mcp.ElicitationCapability{}
		c.AnswerInput = answer
		_, err = c.CallTool(t.Context(), "quiz", map[string]any{"topic": "go"})
		var je *mcp.Error
		if !errors.As(err, &je) || je.Code != mcp.CodeInvalidParams || !strings.Contains(je.Message, "Too many input rounds") {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("client round limit", func(t *testing.T) {
		c := mcp.NewClient(newServer(nil))
		c.Capabilities.Elicitation = &mcp.ElicitationCapability{}
		c.AnswerInput = answer
		c.MaxRounds = 2
		if _, err := c.CallTool(t.Context(), "quiz", map[string]any{"topic": "go"}); err == nil || !strings.Contains(err.Error(), "too many input rounds") {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("no AnswerInput", func(t *testing.T) {
		c := mcp.NewClient(newServer(nil))
		c.Capabilities.Elicitation = &mcp.ElicitationCapability{}
		_, err := c.CallTool(t.Context(), "quiz", map[string]any{"topic": "go"})
		var ire *mcp.UnansweredInputError
		if !errors.As(err, &ire) || ire.RequestState == "" || len(ire.InputRequests) != 1 || ire.InputRequests["q1"] == nil {
			t.Errorf("err = %#v", err)
		}
	})

	t.Run("state bound to request", func(t *testing.T) {
		s := newServer(nil)
		c := mcp.NewClient(s)
		c.Capabilities.Elicitation = &mcp.ElicitationCapability{}
		first := doRPC(t, c, "tools/call", map[string]any{"name": "quiz", "arguments": map[string]any{"topic": "go"}})
		var ir struct {
			RequestState string `json:"requestState"`
		}
		must(t, json.Unmarshal(first.Result, &ir))
		answers := map[string]any{"q1": map[string]any{"action": "accept", "content": map[string]any{"a": "x"}}}
		other := mcp.NewClient(s)
		other.Capabilities = c.Capabilities
		other.Principal = mcp.Principal{Subject: "mallory"}
		for _, tc := range []struct {
			name   string
			client *mcp.Client
			params map[string]any
			ok     bool
		}{
			{"same request", c, map[string]any{"name": "quiz", "arguments": map[string]any{"topic": "go"}}, true},
			{"changed arguments", c, map[string]any{"name": "quiz", "arguments": map[string]any{"topic": "rust"}}, false},
			{"other tool", c, map[string]any{"name": "needs", "arguments": map[string]any{"kind": "form"}}, false},
			{"other caller", other, map[string]any{"name": "quiz", "arguments": map[string]any{"topic": "go"}}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tc.params["requestState"] = ir.RequestState
				tc.params["inputResponses"] = answers
				r := doRPC(t, tc.client, "tools/call", tc.params)
				if tc.ok {
					if r.Error != nil || !strings.Contains(string(r.Result), `"requestState"`) {
						t.Errorf("%+v %s", r.Error, r.Result)
					}
					return
				}
				if r.Error == nil || r.Error.Code != mcp.CodeInvalidParams {
					t.Errorf("accepted: %+v %s", r.Error, r.Result)
				}
			})
		}
	})

	t.Run("concurrent calls", func(t *testing.T) {
		c := mcp.NewClient(newServer(nil))
		c.Capabilities.Elicitation = &mcp.ElicitationCapability{}
		c.AnswerInput = answer
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				res, err := c.CallTool(t.Context(), "quiz", map[string]any{"topic": fmt.Sprint(i)})
				if err != nil || res.Content[0].Text != fmt.Sprintf("%d: ans-q1,ans-q2,ans-q3", i) {
					t.Errorf("%d: %v %v", i, res, err)
				}
			})
		}
		wg.Wait()
	})
}

// syncWriter records what a handler writes, safely for concurrent reads.
type syncWriter struct {
	mu     sync.Mutex
	h      http.Header
	status int
	buf    strings.Builder
}

func (w *syncWriter) Header() http.Header { return w.h }
func (w *syncWriter) WriteHeader(s int) {
	w.mu.Lock()
	if w.status == 0 {
		w.status = s
	}
	w.mu.Unlock()
}
func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.buf.Write(p)
}
func (w *syncWriter) Flush() {}
func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func listenRequest(ctx context.Context, filter string) *http.Request {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://localhost/mcp", strings.NewReader(rpc("subscriptions/listen", `"notifications":`+filter)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion)
	req.Header.Set(mcp.HeaderMethod, "subscriptions/listen")
	return req
}

func TestListenKeepAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := quietServer(&mcp.ServerOptions{KeepAlive: 10 * time.Second})
		addText(t, s, "a", "a")
		h := mcp.NewHTTPHandler(s, nil)
		ctx, cancel := context.WithCancel(t.Context())
		w := &syncWriter{h: http.Header{}}
		done := make(chan struct{})
		go func() {
			h.ServeHTTP(w, listenRequest(ctx, `{"toolsListChanged":true}`))
			close(done)
		}()
		synctest.Wait()
		const ack = `data: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"notifications":{"toolsListChanged":true}}}` + "\n\n"
		if got := w.String(); got != ack {
			t.Fatalf("before any keep-alive: %q", got)
		}
		time.Sleep(9 * time.Second)
		synctest.Wait()
		if got := w.String(); got != ack {
			t.Fatalf("keep-alive too early: %q", got)
		}
		time.Sleep(21 * time.Second) // t = 30 s: three keep-alives
		synctest.Wait()
		if got := w.String(); got != ack+strings.Repeat(": keep-alive\n\n", 3) {
			t.Fatalf("after 30 s: %q", got)
		}
		// The client going away ends the stream without a final result.
		cancel()
		<-done
		if got := w.String(); strings.Contains(got, `"result"`) {
			t.Errorf("result after the client left: %q", got)
		}
		if w.status != http.StatusOK || w.h.Get("Content-Type") != "text/event-stream" {
			t.Errorf("%d %v", w.status, w.h)
		}
	})
}

func TestListenFilters(t *testing.T) {
	s := quietServer(nil)
	addText(t, s, "a", "a")
	must(t, s.AddPrompt(&mcp.Prompt{Name: "p"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	}))
	h := mcp.NewHTTPHandler(s, nil)
	type stream struct {
		w    *syncWriter
		done chan struct{}
	}
	ctx, cancel := context.WithCancel(t.Context())
	open := func(filter string) *stream {
		st := &stream{w: &syncWriter{h: http.Header{}}, done: make(chan struct{})}
		go func() { h.ServeHTTP(st.w, listenRequest(ctx, filter)); close(st.done) }()
		return st
	}
	// Resources are not advertised: resource subscriptions and
	// resourcesListChanged are dropped from the ack.
	tools := open(`{"toolsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["test://x"]}`)
	prompts := open(`{"promptsListChanged":true}`)
	none := open(`{}`)
	s.Close() // every stream ends with its result after its ack and what is pending
	for _, st := range []*stream{tools, prompts, none} {
		<-st.done
	}
	cancel()
	events := func(st *stream) []string {
		var out []string
		for _, ev := range strings.Split(strings.TrimSuffix(st.w.String(), "\n\n"), "\n\n") {
			var m struct {
				Method string
				Params struct {
					Notifications json.RawMessage
				}
			}
			must(t, json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &m))
			if m.Method == "" {
				out = append(out, "result")
			} else {
				out = append(out, m.Method+string(m.Params.Notifications))
			}
		}
		return out
	}
	for _, tc := range []struct {
		st   *stream
		want string
	}{
		{tools, `[notifications/subscriptions/acknowledged{"toolsListChanged":true} result]`},
		{prompts, `[notifications/subscriptions/acknowledged{"promptsListChanged":true} result]`},
		{none, `[notifications/subscriptions/acknowledged{} result]`},
	} {
		if got := fmt.Sprint(events(tc.st)); got != tc.want {
			t.Errorf("got %s\nwant %s", got, tc.want)
		}
	}
	// A closed server answers new listen requests with their result at once.
	w := &syncWriter{h: http.Header{}}
	h.ServeHTTP(w, listenRequest(t.Context(), `{"toolsListChanged":true}`))
	if !strings.Contains(w.String(), `"result":{"resultType":"complete"`) {
		t.Errorf("listen after Close: %q", w.String())
	}
}

func TestCompletion(t *testing.T) {
	s := quietServer(nil)
	must(t, s.AddPrompt(&mcp.Prompt{Name: "p", Arguments: []mcp.PromptArgument{{Name: "lang"}}}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent(req.Arguments["lang"])}}}, nil
	}))
	s.SetCompletionHandler(func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.Completion, error) {
		switch req.Argument.Value {
		case "many":
			vals := make([]string, 150)
			for i := range vals {
				vals[i] = fmt.Sprint(i)
			}
			return &mcp.Completion{Values: vals, Total: 150}, nil
		case "none":
			return nil, nil
		case "fail":
			return nil, errors.New("backend down")
		}
		return &mcp.Completion{Values: []string{req.Ref.Type + ":" + req.Ref.Name + req.Ref.URI + ":" + req.Argument.Name + "=" + req.Argument.Value + ":" + req.Context["x"]}}, nil
	})
	c := mcp.NewClient(s)
	promptRef := map[string]any{"type": "ref/prompt", "name": "p"}
	arg := func(v string) map[string]any { return map[string]any{"name": "lang", "value": v} }
	for _, tc := range []struct {
		name   string
		params map[string]any
		code   int
		want   string
	}{
		{"prompt", map[string]any{"ref": promptRef, "argument": arg("g")}, 0, `{"values":["ref/prompt:p:lang=g:"]}`},
		{"resource with context", map[string]any{"ref": map[string]any{"type": "ref/resource", "uri": "file:///{x}"}, "argument": arg("g"), "context": map[string]any{"arguments": map[string]any{"x": "y"}}}, 0, `{"values":["ref/resource:file:///{x}:lang=g:y"]}`},
		{"truncated to 100", map[string]any{"ref": promptRef, "argument": arg("many")}, 0, ""},
		{"nil completion", map[string]any{"ref": promptRef, "argument": arg("none")}, 0, `{"values":[]}`},
		{"handler error", map[string]any{"ref": promptRef, "argument": arg("fail")}, mcp.CodeInternalError, ""},
		{"unknown prompt", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "q"}, "argument": arg("g")}, mcp.CodeInvalidParams, ""},
		{"bad ref type", map[string]any{"ref": map[string]any{"type": "ref/tool", "name": "p"}, "argument": arg("g")}, mcp.CodeInvalidParams, ""},
		{"resource without uri", map[string]any{"ref": map[string]any{"type": "ref/resource"}, "argument": arg("g")}, mcp.CodeInvalidParams, ""},
		{"ref missing", map[string]any{"argument": arg("g")}, mcp.CodeInvalidParams, ""},
		{"argument missing", map[string]any{"ref": promptRef}, mcp.CodeInvalidParams, ""},
		{"context not strings", map[string]any{"ref": promptRef, "argument": arg("g"), "context": map[string]any{"arguments": map[string]any{"x": 1}}}, mcp.CodeInvalidParams, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := doRPC(t, c, "completion/complete", tc.params)
			if tc.code != 0 {
				if r.Error == nil || r.Error.Code != tc.code {
					t.Errorf("got %+v %s, want %d", r.Error, r.Result, tc.code)
				}
				return
			}
			if r.Error != nil {
				t.Fatal(r.Error)
			}
			var res struct {
				Completion json.RawMessage `json:"completion"`
			}
			must(t, json.Unmarshal(r.Result, &res))
			if tc.want != "" {
				if !jsonEqual(res.Completion, []byte(tc.want)) {
					t.Errorf("completion = %s, want %s", res.Completion, tc.want)
				}
				return
			}
			var comp mcp.Completion
			must(t, json.Unmarshal(res.Completion, &comp))
			if len(comp.Values) != 100 || !comp.HasMore || comp.Total != 150 || comp.Values[99] != "99" {
				t.Errorf("truncation: %d values, hasMore %v, total %d", len(comp.Values), comp.HasMore, comp.Total)
			}
		})
	}
	// The typed client helpers.
	d, err := c.Discover(t.Context())
	if err != nil || d.Capabilities.Completions == nil || d.Capabilities.Prompts == nil || d.ResultType != "complete" {
		t.Errorf("Discover = %+v, %v", d, err)
	}
	p, err := c.GetPrompt(t.Context(), "p", map[string]string{"lang": "go"})
	if err != nil || len(p.Messages) != 1 || p.Messages[0].Content.Text != "go" {
		t.Errorf("GetPrompt = %+v, %v", p, err)
	}
}

func TestInputAccessors(t *testing.T) {
	s := quietServer(nil)
	must(t, mcp.AddTool(s, &mcp.Tool{Name: "gather"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
		if req.Round == 0 {
			return nil, mcp.RequireInput(map[string]mcp.InputRequest{
				"s": mcp.Sample(mcp.CreateMessageParams{Messages: []mcp.SamplingMessage{{Role: "user", Content: mcp.TextContent("hi")}}, MaxTokens: 5}),
				"r": mcp.ListRoots(),
				"e": mcp.ElicitForm("ok?", nil),
			}, nil)
		}
		sm, okS := req.Sampling("s")
		roots, okR := req.Roots("r")
		el, okE := req.Elicitation("e")
		_, wrongKind := req.Roots("s") // a sampling answer is not a roots answer
		_, missing := req.Sampling("nope")
		return mcp.TextResult(fmt.Sprintf("%v %s %s|%v %d %s|%v %s|%v %v", okS, sm.Model, sm.Content, okR, len(roots.Roots), roots.Roots[0].URI, okE, el.Action, wrongKind, missing)), nil
	}))
	c := mcp.NewClient(s)
	c.Capabilities = mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}, Roots: &struct{}{}, Elicitation: &mcp.ElicitationCapability{}}
	c.AnswerInput = func(ctx context.Context, key string, ir mcp.InputRequest) (any, error) {
		switch ir.Method {
		case mcp.MethodCreateMessage:
			return mcp.CreateMessageResult{Role: "assistant", Model: "m1", Content: json.RawMessage(`{"type":"text","text":"yo"}`)}, nil
		case mcp.MethodListRoots:
			return mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///src"}}}, nil
		}
		return mcp.ElicitResult{Action: "decline"}, nil
	}
	res, err := c.CallTool(t.Context(), "gather", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].Text; got != `true m1 {"type":"text","text":"yo"}|true 1 file:///src|true decline|false false` {
		t.Errorf("got %s", got)
	}
}

func TestHostAndOriginAllowLists(t *testing.T) {
	s := quietServer(nil)
	addText(t, s, "a", "a")
	for _, tc := range []struct {
		name           string
		opts           mcp.HTTPOptions
		host, origin   string
		wantStatusCode int
	}{
		{"default loopback v4", mcp.HTTPOptions{}, "127.0.0.1:9", "", 200},
		{"default loopback v6", mcp.HTTPOptions{}, "[::1]:9", "http://[::1]:9", 200},
		{"default localhost upper case", mcp.HTTPOptions{}, "LOCALHOST", "", 200},
		{"default rejects public host", mcp.HTTPOptions{}, "mcp.example.com", "", 403},
		{"default rejects rebinding name", mcp.HTTPOptions{}, "localhost.evil.example", "", 403},
		{"default rejects file origin", mcp.HTTPOptions{}, "localhost", "file://", 403},
		{"listed host", mcp.HTTPOptions{AllowedHosts: []string{"mcp.example.com"}}, "mcp.example.com:443", "", 200},
		{"listed host:port only that port", mcp.HTTPOptions{AllowedHosts: []string{"mcp.example.com:8443"}}, "mcp.example.com:443", "", 403},
		{"listed host:port", mcp.HTTPOptions{AllowedHosts: []string{"mcp.example.com:8443"}}, "mcp.example.com:8443", "", 200},
		{"listed host replaces loopback", mcp.HTTPOptions{AllowedHosts: []string{"mcp.example.com"}}, "localhost", "", 403},
		{"any host", mcp.HTTPOptions{AllowedHosts: []string{"*"}}, "whatever.example", "", 200},
		{"listed origin", mcp.HTTPOptions{AllowedHosts: []string{"*"}, AllowedOrigins: []string{"https://app.example.com"}}, "x", "https://app.example.com", 200},
		{"unlisted origin", mcp.HTTPOptions{AllowedHosts: []string{"*"}, AllowedOrigins: []string{"https://app.example.com"}}, "x", "https://evil.example.com", 403},
		{"listed origin with port", mcp.HTTPOptions{AllowedHosts: []string{"*"}, AllowedOrigins: []string{"https://app.example.com:8443"}}, "x", "https://app.example.com:8443", 200},
		{"listed origin with port, other port", mcp.HTTPOptions{AllowedHosts: []string{"*"}, AllowedOrigins: []string{"https://app.example.com:8443"}}, "x", "https://app.example.com:9443", 403},
		{"listed IPv6 host:port", mcp.HTTPOptions{AllowedHosts: []string{"[fd00::1]:8080"}}, "[fd00::1]:8080", "", 200},
		{"any origin", mcp.HTTPOptions{AllowedHosts: []string{"*"}, AllowedOrigins: []string{"*"}}, "x", "https://evil.example.com", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := mcp.NewHTTPHandler(s, &tc.opts)
			req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(rpc("tools/list", "")))
			req.Host = tc.host
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion)
			req.Header.Set(mcp.HeaderMethod, "tools/list")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.wantStatusCode {
				t.Errorf("status %d, want %d: %s", rec.Code, tc.wantStatusCode, rec.Body)
			}
			if rec.Code == 403 && strings.Contains(rec.Body.String(), `"id"`) {
				t.Errorf("403 body carries an id: %s", rec.Body)
			}
		})
	}
}

func TestAddToolValidation(t *testing.T) {
	h := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.TextResult(""), nil
	}
	for _, tc := range []struct {
		name, tool, schema string
		ok                 bool
	}{
		{"no schema", "t", ``, true},
		{"dotted name", "a.b-c_D9", `{"type":"object"}`, true},
		{"empty name", "", `{"type":"object"}`, false},
		{"name with space", "a b", `{"type":"object"}`, false},
		{"name too long", strings.Repeat("n", 129), `{"type":"object"}`, false},
		{"root not an object schema", "t", `{"type":"string"}`, false},
		{"schema not JSON object", "t", `[1]`, false},
		{"header on string", "t", `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Region"}}}`, true},
		{"header on nested property", "t", `{"type":"object","properties":{"o":{"type":"object","properties":{"r":{"type":"integer","x-mcp-header":"R"}}}}}`, true},
		{"header on number", "t", `{"type":"object","properties":{"r":{"type":"number","x-mcp-header":"R"}}}`, false},
		{"header on object", "t", `{"type":"object","properties":{"r":{"type":"object","x-mcp-header":"R"}}}`, false},
		{"header not a token", "t", `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Bad Name"}}}`, false},
		{"header empty", "t", `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":""}}}`, false},
		{"header not a string", "t", `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":5}}}`, false},
		{"header duplicated ignoring case", "t", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"region"}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := quietServer(nil).AddTool(&mcp.Tool{Name: tc.tool, InputSchema: json.RawMessage(tc.schema)}, h)
			if (err == nil) != tc.ok {
				t.Errorf("err = %v, want ok=%v", err, tc.ok)
			}
		})
	}
	// A nested x-mcp-header argument is checked against its header.
	s := quietServer(nil)
	must(t, s.AddTool(&mcp.Tool{Name: "nested", InputSchema: json.RawMessage(`{"type":"object","properties":{"o":{"type":"object","properties":{"flag":{"type":"boolean","x-mcp-header":"Flag"}}}}}`)}, h))
	ts := httptest.NewServer(mcp.NewHTTPHandler(s, nil))
	defer ts.Close()
	for _, tc := range []struct {
		args, header string
		status       int
	}{
		{`{"o":{"flag":true}}`, "true", 200},
		{`{"o":{"flag":true}}`, "True", 400},
		{`{"o":{"flag":false}}`, "", 400},
		{`{"o":{}}`, "", 200},
		{`{"o":5}`, "", 200},
	} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(rpc("tools/call", `"name":"nested","arguments":`+tc.args)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion)
		req.Header.Set(mcp.HeaderMethod, "tools/call")
		req.Header.Set(mcp.HeaderName, "nested")
		if tc.header != "" {
			req.Header.Set("Mcp-Param-Flag", tc.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s with %q: status %d, want %d", tc.args, tc.header, resp.StatusCode, tc.status)
		}
	}
}
