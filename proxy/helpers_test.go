package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
)

// recorded is one request as the upstream saw it.
type recorded struct {
	Method     string
	RequestURI string // raw, exactly as sent on the wire
	RawPath    string // escaped path
	RawQuery   string
	Host       string
	Header     http.Header
	Body       []byte
}

// recorder is an httptest upstream that records every request and answers
// with reply (default: 200 {"ok":true}).
type recorder struct {
	srv   *httptest.Server
	mu    sync.Mutex
	reqs  []recorded
	reply http.HandlerFunc
}

func newRecorder(t testing.TB, reply http.HandlerFunc) *recorder {
	t.Helper()
	return newRecorderWith(t, reply, nil)
}

// newRecorderWith lets the test configure the server before it starts.
func newRecorderWith(t testing.TB, reply http.HandlerFunc, setup func(*http.Server)) *recorder {
	t.Helper()
	rec := &recorder{reply: reply}
	rec.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b)) // the reply may read it too
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, recorded{
			Method: r.Method, RequestURI: r.RequestURI, RawPath: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery,
			Host: r.Host, Header: r.Header.Clone(), Body: b,
		})
		rec.mu.Unlock()
		if rec.reply != nil {
			rec.reply(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	if setup != nil {
		setup(rec.srv.Config)
	}
	rec.srv.Start()
	t.Cleanup(rec.srv.Close)
	return rec
}

func (r *recorder) all() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

func (r *recorder) last(t testing.TB) recorded {
	t.Helper()
	all := r.all()
	if len(all) == 0 {
		t.Fatal("the upstream received no request")
	}
	return all[len(all)-1]
}

func (r *recorder) reset() {
	r.mu.Lock()
	r.reqs = nil
	r.mu.Unlock()
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func newProxy(t testing.TB, base string, mod func(*Config)) *Proxy {
	t.Helper()
	cfg := Config{BaseURL: mustURL(t, base)}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mkTool builds a tool by hand: props maps argument name → JSON schema.
func mkTool(name, method, path string, props map[string]any, required []string, args ...openapi.Argument) *openapi.Tool {
	if props == nil {
		props = map[string]any{}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	b, _ := json.Marshal(schema)
	return &openapi.Tool{Name: name, InputSchema: b, Route: openapi.Route{Method: method, Path: path, Arguments: args}}
}

func endpoint(t testing.TB, p *Proxy, tool *openapi.Tool) *Endpoint {
	t.Helper()
	e, err := p.Endpoint(tool)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func call(t testing.TB, p *Proxy, e *Endpoint, args string) *mcp.CallToolResult {
	t.Helper()
	return callCtx(t, context.Background(), p, e, args)
}

func callCtx(t testing.TB, ctx context.Context, p *Proxy, e *Endpoint, args string) *mcp.CallToolResult {
	t.Helper()
	res, err := p.Dispatch(ctx, e, json.RawMessage(args))
	if err != nil {
		t.Fatalf("Dispatch returned a Go error: %v", err)
	}
	if res == nil || len(res.Content) == 0 {
		t.Fatalf("empty result %#v", res)
	}
	return res
}

func text(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func structured(t testing.TB, r *mcp.CallToolResult) string {
	t.Helper()
	if r.StructuredContent == nil {
		return ""
	}
	b, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantOK(t testing.TB, r *mcp.CallToolResult) {
	t.Helper()
	if r.IsError {
		t.Fatalf("unexpected tool error: %s", text(r))
	}
}

func wantError(t testing.TB, r *mcp.CallToolResult, substrs ...string) {
	t.Helper()
	if !r.IsError {
		t.Fatalf("want a tool error, got success: %s", text(r))
	}
	for _, s := range substrs {
		if !strings.Contains(text(r), s) {
			t.Errorf("error %q does not contain %q", text(r), s)
		}
	}
}
