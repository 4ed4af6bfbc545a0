package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
)

// The benchmarks compare a full tools/call round trip on a trivial tool
// between mcpgate and the official go-sdk's stateless Streamable HTTP
// handler, with the same 2026-07-28 request body and headers.
//
//	go test -run '^$' -bench . -benchmem -count 5 ./mcp/
//
// BenchmarkHTTPToolCall includes the loopback network and the client;
// BenchmarkServeHTTPToolCall calls ServeHTTP directly and is the cleanest
// measure of server CPU per call.

const benchCallBody = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`

type benchEchoIn struct {
	Text string `json:"text"`
}

func benchMCPGate(b *testing.B) http.Handler {
	s := mcp.NewServer(mcp.Implementation{Name: "bench", Version: "1"}, nil)
	must(b, mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text"},
		func(ctx context.Context, req *mcp.CallToolRequest, in benchEchoIn) (*mcp.CallToolResult, error) {
			return mcp.TextResult("echo: " + in.Text), nil
		}))
	return mcp.NewHTTPHandler(s, nil)
}

func benchGoSDK(b *testing.B, jsonResponse bool) http.Handler {
	s := sdk.NewServer(&sdk.Implementation{Name: "bench", Version: "1"}, &sdk.ServerOptions{Logger: nil})
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text"},
		func(ctx context.Context, req *sdk.CallToolRequest, in benchEchoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: jsonResponse})
}

type benchServer struct {
	name string
	make func(*testing.B) http.Handler
}

var benchServers = []benchServer{
	{"mcpgate", benchMCPGate},
	{"gosdk", func(b *testing.B) http.Handler { return benchGoSDK(b, false) }},
	{"gosdk-json", func(b *testing.B) http.Handler { return benchGoSDK(b, true) }},
}

func setBenchHeaders(h http.Header) {
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion)
	h.Set(mcp.HeaderMethod, "tools/call")
	h.Set(mcp.HeaderName, "echo")
}

// checkEcho fails unless body holds the echo result (as JSON or as an SSE
// event).
func checkEcho(b *testing.B, status int, body []byte) {
	b.Helper()
	if status != http.StatusOK || !bytes.Contains(body, []byte(`"text":"echo: hi"`)) {
		b.Fatalf("bad answer: %d %s", status, body)
	}
}

func BenchmarkHTTPToolCall(b *testing.B) {
	// One keep-alive client shared by both servers.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	for _, bs := range benchServers {
		b.Run(bs.name, func(b *testing.B) {
			ts := httptest.NewServer(bs.make(b))
			defer ts.Close()
			do := func() (int, []byte) {
				req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(benchCallBody))
				if err != nil {
					b.Fatal(err)
				}
				setBenchHeaders(req.Header)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					b.Fatal(err)
				}
				return resp.StatusCode, body
			}
			status, body := do()
			checkEcho(b, status, body)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if status, _ := do(); status != http.StatusOK {
					b.Fatalf("status %d", status)
				}
			}
		})
	}
}

// discardWriter is a minimal ResponseWriter that keeps the status and
// counts bytes; it supports Flush for SSE answers.
type discardWriter struct {
	h      http.Header
	status int
	n      int
	keep   *bytes.Buffer
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(p)
	if w.keep != nil {
		w.keep.Write(p)
	}
	return len(p), nil
}
func (w *discardWriter) Flush() {}

func (w *discardWriter) reset() {
	clear(w.h)
	w.status, w.n = 0, 0
}

func newBenchRequest(body string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
	req.Host = "127.0.0.1"
	setBenchHeaders(req.Header)
	return req
}

func BenchmarkServeHTTPToolCall(b *testing.B) {
	for _, bs := range benchServers {
		b.Run(bs.name, func(b *testing.B) {
			h := bs.make(b)
			w := &discardWriter{h: http.Header{}, keep: new(bytes.Buffer)}
			h.ServeHTTP(w, newBenchRequest(benchCallBody))
			checkEcho(b, w.status, w.keep.Bytes())
			w.keep = nil
			body := strings.NewReader(benchCallBody)
			req := newBenchRequest(benchCallBody)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				w.reset()
				body.Reset(benchCallBody)
				r := *req
				r.Body = io.NopCloser(body)
				h.ServeHTTP(w, &r)
				if w.status != http.StatusOK {
					b.Fatalf("status %d", w.status)
				}
			}
		})
	}
}

// serveOnce returns a function that serves req, with text as its body, to
// h through w and fails unless the status is 200. The request and its body
// reader are reused, so that a loop measures the handler alone.
func serveOnce(b *testing.B, h http.Handler, w *discardWriter, req *http.Request, text string) func() {
	body := strings.NewReader(text)
	return func() {
		w.reset()
		body.Reset(text)
		r := *req
		r.Body = io.NopCloser(body)
		h.ServeHTTP(w, &r)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
}

// BenchmarkToolsList lists 5,000 registered tools: with the default page
// size (1,000, the first page) and in one page of 5,000. Pages are encoded
// once per registry change, so each call is a copy of cached bytes.
func BenchmarkToolsList(b *testing.B) {
	for _, pageSize := range []int{0, 5000} {
		b.Run(fmt.Sprintf("page=%d", max(pageSize, 1000)), func(b *testing.B) {
			s := mcp.NewServer(mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ServerOptions{PageSize: pageSize})
			for i := range 5000 {
				must(b, s.AddTool(&mcp.Tool{
					Name:        fmt.Sprintf("tool_%04d", i),
					Description: "A tool that does one thing well.",
					InputSchema: []byte(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`),
				}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.TextResult(""), nil
				}))
			}
			h := mcp.NewHTTPHandler(s, nil)
			const listBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
			req := newBenchRequest(listBody)
			req.Header.Set(mcp.HeaderMethod, "tools/list")
			req.Header.Del(mcp.HeaderName)
			w := &discardWriter{h: http.Header{}}
			run := serveOnce(b, h, w, req, listBody)
			run()
			b.SetBytes(int64(w.n))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				run()
			}
		})
	}
}

// parityTools is the large tool set of BenchmarkLegacyParity: GitHub's
// 1,223 operations from the corpus when MCPGATE_CORPUS is set, or a
// generated set of the same number and about the same size (8 MiB of
// tools/list), with object-rooted, $ref-rooted and array-rooted output
// schemas (the 2025-11-25 shape keeps, adapts and drops them).
func parityTools(b *testing.B) []mcp.Tool {
	if dir := os.Getenv("MCPGATE_CORPUS"); dir != "" {
		path := filepath.Join(dir, "github", "api.github.com.json")
		if _, err := os.Stat(path); err == nil {
			doc, err := openapi.Load(context.Background(), path, openapi.LoadOptions{})
			if err != nil {
				b.Fatal(err)
			}
			res, err := openapi.Generate(doc, openapi.GenerateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			tools := make([]mcp.Tool, len(res.Tools))
			for i, t := range res.Tools {
				tools[i] = mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema}
			}
			return tools
		}
	}
	props := func(n int, prefix string) string {
		var sb strings.Builder
		for i := range n {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `"%s_%d":{"type":"string","description":"The %s field number %d of the resource, as the API documents it in a sentence or two."}`, prefix, i, prefix, i)
		}
		return sb.String()
	}
	object := `{"type":"object","properties":{` + props(30, "field") + `,"owner":{"type":"object","properties":{` + props(10, "owner") + `}}}}`
	tools := make([]mcp.Tool, 1223)
	for i := range tools {
		var out string
		switch i % 4 {
		case 0, 1:
			out = object
		case 2:
			out = `{"$ref":"#/$defs/item","$defs":{"item":` + object + `}}`
		case 3:
			out = `{"type":"array","items":` + object + `}`
		}
		tools[i] = mcp.Tool{
			Name:         fmt.Sprintf("repos_operation_%04d", i),
			Title:        fmt.Sprintf("Operation %d", i),
			Description:  strings.Repeat("Does one thing to a repository, as documented. ", 6),
			InputSchema:  json.RawMessage(`{"type":"object","properties":{` + props(8, "param") + `},"required":["param_0"]}`),
			OutputSchema: json.RawMessage(out),
		}
	}
	return tools
}

// BenchmarkLegacyParity compares a 2025-11-25 session with 2026-07-28
// requests, side by side in one run: a tools/call of a trivial tool, and
// the first tools/list page (1,000 tools) of a large tool set.
//
//	go test -run '^$' -bench LegacyParity -benchmem -count 5 ./mcp/
func BenchmarkLegacyParity(b *testing.B) {
	s := mcp.NewServer(mcp.Implementation{Name: "bench", Version: "1"}, nil)
	ts := s.NewToolSet()
	for _, t := range parityTools(b) {
		must(b, ts.Add(&t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.TextResult("ok"), nil
		}))
	}
	must(b, ts.Add(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in benchEchoIn
			if err := req.Bind(&in); err != nil {
				return nil, err
			}
			return mcp.TextResult("echo: " + in.Text), nil
		}))
	must(b, s.SetTools(ts))
	h := mcp.NewHTTPHandler(s, nil)

	w := &discardWriter{h: http.Header{}, keep: new(bytes.Buffer)}
	init := newBenchRequest(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	init.Header.Del(mcp.HeaderProtocolVersion)
	init.Header.Del(mcp.HeaderMethod)
	init.Header.Del(mcp.HeaderName)
	h.ServeHTTP(w, init)
	sid := w.h.Get(mcp.HeaderSessionID)
	if sid == "" {
		b.Fatalf("no session: %d %s", w.status, w.keep)
	}

	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	cases := []struct {
		name, body, method, want string
		legacy                   bool
	}{
		{"call/modern", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + meta + `}}`, "tools/call", `"text":"echo: hi"`, false},
		{"call/legacy", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, "tools/call", `"text":"echo: hi"`, true},
		{"list/modern", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{` + meta + `}}`, "tools/list", `"nextCursor"`, false},
		{"list/legacy", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`, "tools/list", `"nextCursor"`, true},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			req := newBenchRequest(tc.body)
			req.Header.Set(mcp.HeaderMethod, tc.method)
			if tc.method == "tools/call" {
				req.Header.Set(mcp.HeaderName, "echo")
			} else {
				req.Header.Del(mcp.HeaderName)
			}
			if tc.legacy {
				req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
				req.Header.Set(mcp.HeaderSessionID, sid)
			}
			w := &discardWriter{h: http.Header{}, keep: new(bytes.Buffer)}
			run := serveOnce(b, h, w, req, tc.body)
			run()
			if !bytes.Contains(w.keep.Bytes(), []byte(tc.want)) || !bytes.Contains(w.keep.Bytes()[:40], []byte(`,"result":{`)) {
				b.Fatalf("bad answer: %.300s", w.keep.Bytes())
			}
			w.keep = nil
			b.SetBytes(int64(w.n))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				run()
			}
		})
	}
}
