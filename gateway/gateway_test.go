package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
)

func newDemo(t *testing.T, cfg Config) *Gateway {
	t.Helper()
	cfg.Demo = true
	if cfg.Store == "" {
		cfg.Store = "memory"
	}
	g, err := New(context.Background(), cfg, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func TestDemoTools(t *testing.T) {
	g := newDemo(t, Config{})
	c := mcp.NewClient(g.Server())
	c.Principal = g.callers.principal("demo-token")
	tools, err := c.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != len(g.Tools()) || len(tools) < 15 {
		t.Fatalf("listed %d tools, generated %d", len(tools), len(g.Tools()))
	}
	for _, tl := range tools {
		if tl.Name != "getPet" {
			continue
		}
		// The operation a tool calls travels in its _meta (not the address).
		op, _ := json.Marshal(tl.Meta[openapi.OperationMetaKey])
		if string(op) != `{"method":"GET","operationId":"getPet","path":"/pets/{petId}"}` {
			t.Errorf("getPet's _meta: %s", op)
		}
	}
	res, err := c.CallTool(context.Background(), "getPet", map[string]any{"petId": 1})
	if err != nil || res.IsError || !strings.Contains(text(res), `"name":"Rex"`) {
		t.Fatalf("getPet: %v %+v", err, res)
	}
	res, err = c.CallTool(context.Background(), "getCurrentUser", nil)
	if err != nil || !strings.Contains(text(res), "demo-user") {
		t.Fatalf("the caller's bearer did not reach the upstream: %v %s", err, text(res))
	}
	res, err = c.CallTool(context.Background(), "listPets", map[string]any{"limit": 1000})
	if err != nil || !res.IsError || !strings.Contains(text(res), "/limit") {
		t.Fatalf("invalid arguments: %v %s", err, text(res))
	}
}

func TestConfirmDestructive(t *testing.T) {
	g := newDemo(t, Config{})
	ctx := context.Background()
	newClient := func(answer any) *mcp.Client {
		c := mcp.NewClient(g.Server())
		c.Principal = g.callers.principal("demo-token")
		c.Capabilities.Elicitation = &mcp.ElicitationCapability{}
		c.AnswerInput = func(ctx context.Context, key string, req mcp.InputRequest) (any, error) {
			if key != confirmKey || req.Method != mcp.MethodElicit {
				t.Errorf("unexpected input request %q %s", key, req.Method)
			}
			return answer, nil
		}
		return c
	}
	// Declined: nothing is deleted.
	res, err := newClient(map[string]any{"action": "decline"}).CallTool(ctx, "deletePet", map[string]any{"petId": 3})
	if err != nil || !res.IsError || !strings.Contains(text(res), "did not allow") {
		t.Fatalf("declined: %v %s", err, text(res))
	}
	plain := mcp.NewClient(g.Server())
	plain.Principal = g.callers.principal("demo-token")
	if r, _ := plain.CallTool(ctx, "getPet", map[string]any{"petId": 3}); r == nil || r.IsError {
		t.Fatalf("pet 3 is gone after a declined delete: %+v", r)
	}
	// A made-up answer without the server's sealed state is not a
	// confirmation: the server asks.
	forged := newClient(nil)
	forged.AnswerInput = nil
	resp, err := forged.Do(ctx, "tools/call", map[string]any{"name": "deletePet", "arguments": map[string]any{"petId": 3},
		"inputResponses": map[string]any{confirmKey: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}})
	if err != nil || resp.Error != nil || !strings.Contains(string(resp.Result), `"resultType":"input_required"`) {
		t.Fatalf("forged confirmation: %v %+v %s", err, resp.Error, resp.Result)
	}
	// Accepted: the call goes through.
	res, err = newClient(map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}).CallTool(ctx, "deletePet", map[string]any{"petId": 3})
	if err != nil || res.IsError {
		t.Fatalf("accepted: %v %s", err, text(res))
	}
	if r, _ := plain.CallTool(ctx, "getPet", map[string]any{"petId": 3}); r == nil || !r.IsError {
		t.Fatalf("pet 3 still there after a confirmed delete: %s", text(r))
	}
	// A client without elicitation is not asked.
	if r, _ := plain.CallTool(ctx, "deletePet", map[string]any{"petId": 3}); r == nil || !strings.Contains(text(r), "404") {
		t.Fatalf("delete without elicitation should reach the upstream (404 now): %s", text(r))
	}
	// With confirm_fallback deny, it is refused with -32021 and nothing is sent.
	strict := newDemo(t, Config{ConfirmFallback: "deny"})
	sc := mcp.NewClient(strict.Server())
	sc.Principal = g.callers.principal("demo-token")
	resp, err = sc.Do(ctx, "tools/call", map[string]any{"name": "deletePet", "arguments": map[string]any{"petId": 1}})
	if err != nil || resp.Error == nil || resp.Error.Code != mcp.CodeMissingRequiredClientCapability ||
		!strings.Contains(resp.Error.Message, "confirm_fallback: deny") {
		t.Fatalf("deny fallback: %v %+v", err, resp.Error)
	}
	if r, _ := sc.CallTool(ctx, "getPet", map[string]any{"petId": 1}); r == nil || r.IsError {
		t.Fatalf("pet 1 is gone after a refused delete: %+v", r)
	}
}

func TestHealthzAndHTTP(t *testing.T) {
	g := newDemo(t, Config{})
	ts := httptest.NewServer(g.Handler())
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Status string `json:"status"`
		Tools  int    `json:"tools"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if h.Status != "ok" || h.Tools != len(g.Tools()) {
		t.Fatalf("healthz: %+v", h)
	}
}

// TestConfigDefaults: a Config built in Go gets the table's defaults, and
// bad values are refused. (Precedence of flags, variables and the file is
// the CLI's: cmd/mcpgate's settings tests.)
func TestConfigDefaults(t *testing.T) {
	c, err := Config{Spec: "x", Upstream: "https://x"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.GCHeadroom != 32<<20 || c.TaskLease != 30*time.Second || c.Confirm != ConfirmDestructive ||
		c.Credentials.Mode != "passthrough" || c.Log.Level != "info" || c.Tools.MaxNameLength != 64 || c.Addr != "127.0.0.1:8080" {
		t.Errorf("defaults not applied: %+v", c)
	}
	if c, _ := (Config{Spec: "x", Upstream: "https://x", GCHeadroom: -1}).withDefaults(); c.GCHeadroom != -1 {
		t.Errorf("an explicit -1 was replaced: %d", c.GCHeadroom)
	}
	for _, bad := range []Config{
		{Spec: "x", Upstream: "ftp://x"},
		{Spec: "x"},
		{Upstream: "https://x"},
		{Spec: "x", Upstream: "https://x", Credentials: Credentials{Mode: "magic"}},
		{Spec: "x", Upstream: "https://x", Confirm: "sometimes"},
		{Spec: "x", Upstream: "https://x", ConfirmFallback: "maybe"},
		{Spec: "x", Upstream: "https://x", Tools: ServedTools{ToolsConfig: ToolsConfig{GenerateSettings: GenerateSettings{MaxNameLength: 8}}}},
	} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("config %+v accepted", bad)
		}
	}
}

// TestReportTask: createReport answers 202 + Location; the demo document
// marks it x-mcp-task, so a client that supports tasks gets a durable task
// whose worker polls the report until it is done.
func TestReportTask(t *testing.T) {
	g := newDemo(t, Config{})
	ctx := context.Background()
	c := mcp.NewClient(g.Server())
	c.Principal = g.callers.principal("demo-token")
	c.Capabilities.Extensions = map[string]json.RawMessage{mcp.ExtensionTasks: json.RawMessage("{}")}
	stop := g.startRunner(ctx)
	defer stop()
	resp, err := c.Do(ctx, "tools/call", map[string]any{"name": "createReport", "arguments": map[string]any{"kind": "inventory"}})
	if err != nil || resp.Error != nil {
		t.Fatalf("createReport: %v %+v", err, resp.Error)
	}
	var created struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
		Status     string `json:"status"`
	}
	_ = json.Unmarshal(resp.Result, &created)
	if created.ResultType != mcp.ResultTask || created.TaskID == "" || created.Status != "working" {
		t.Fatalf("expected a task handle: %s", resp.Result)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := c.Do(ctx, "tasks/get", map[string]any{"taskId": created.TaskID})
		if err != nil || r.Error != nil {
			t.Fatalf("tasks/get: %v %+v", err, r.Error)
		}
		var got struct {
			Status string          `json:"status"`
			Result json.RawMessage `json:"result"`
		}
		_ = json.Unmarshal(r.Result, &got)
		if got.Status == "completed" {
			if !strings.Contains(string(got.Result), `done`) {
				t.Fatalf("the task should end with the finished report: %s", got.Result)
			}
			break
		}
		if got.Status != "working" || time.Now().After(deadline) {
			t.Fatalf("task status %q: %s", got.Status, r.Result)
		}
		time.Sleep(100 * time.Millisecond) // polling, as a client would
	}
	// Another caller cannot see it.
	other := mcp.NewClient(g.Server())
	other.Principal = g.callers.principal("someone-else")
	other.Capabilities = c.Capabilities
	r, _ := other.Do(ctx, "tasks/get", map[string]any{"taskId": created.TaskID})
	if r.Error == nil || r.Error.Code != mcp.CodeInvalidParams {
		t.Fatalf("a foreign task must look unknown: %s %+v", r.Result, r.Error)
	}
	// Without the extension the call runs inline and waits for the report
	// (TestInlineWait covers the rest), never naming the upstream's URL.
	plain := mcp.NewClient(g.Server())
	plain.Principal = g.callers.principal("demo-token")
	res, err := plain.CallTool(ctx, "createReport", map[string]any{"kind": "inventory"})
	if err != nil || res.IsError || !strings.Contains(text(res), `"done"`) || strings.Contains(text(res), "http://") {
		t.Fatalf("inline createReport: %v %s", err, text(res))
	}
}

func TestMetrics(t *testing.T) {
	g := newDemo(t, Config{})
	ts := httptest.NewServer(g.Handler())
	defer ts.Close()
	call := func(name, args string) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":`+args+`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", name)
		req.Header.Set("Authorization", "Bearer demo-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	call("getPet", `{"petId":1}`)
	call("getPet", `{"petId":999999}`) // 404 upstream: a tool error
	call("listPets", `{"limit":1000}`) // invalid arguments: a tool error
	for i := range 3 {                 // made-up methods must not become labels
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Method", fmt.Sprintf("made/up%d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	b := wantMetrics(t, ts.URL,
		`mcpgate_requests_total{method="tools/call",status="200"} 3`,
		`mcpgate_tool_calls_total{outcome="ok",tool="getPet"} 1`,
		`mcpgate_tool_calls_total{outcome="tool_error",tool="getPet"} 1`,
		`mcpgate_tool_calls_total{outcome="tool_error",tool="listPets"} 1`,
		`mcpgate_tool_call_duration_seconds_count{tool="getPet"} 2`,
		`mcpgate_requests_total{method="other",status="400"} 3`,
	)
	if strings.Contains(string(b), "made/up") {
		t.Error("a client-chosen Mcp-Method became a metric label")
	}
}

// TestReadyz: ready while the store and the upstream answer; 503 naming
// the API (not its address) once the upstream is gone.
func TestReadyz(t *testing.T) {
	up := newRecording(t)
	g, err := New(context.Background(), Config{Store: "memory", Spec: writeDoc(t, "A"), Upstream: up.srv.URL}, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ts := httptest.NewServer(g.Handler())
	defer ts.Close()
	get := func() (int, string) {
		resp, err := http.Get(ts.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(); code != 200 || !strings.Contains(body, `"ready":true`) {
		t.Fatalf("readyz %d %s", code, body)
	}
	up.srv.Close()
	g.ready.ttl = 0 // the verdict is kept for 2 s otherwise
	code, body := get()
	if code != 503 || !strings.Contains(body, `"api":"unreachable"`) || strings.Contains(body, strings.TrimPrefix(up.srv.URL, "http://")) {
		t.Fatalf("readyz with the upstream gone: %d %s", code, body)
	}
}

// wantMetrics reads /metrics and fails for each wanted line it lacks.
func wantMetrics(t *testing.T, base string, want ...string) []byte {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, w := range want {
		if !strings.Contains(string(b), w) {
			t.Errorf("/metrics lacks %s", w)
		}
	}
	return b
}
