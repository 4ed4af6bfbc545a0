package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/policy"
	"github.com/mcpgate/mcpgate/quota"
)

// TestPolicyTable: rules × callers × calls, through the gateway's one way
// of a call: a denied call is a tool error that names no rule and sends
// nothing; a confirm rule asks even for a read; a tool no rule can allow is
// hidden from that caller (and its calls answered as an unknown tool's).
func TestPolicyTable(t *testing.T) {
	g := newDemo(t, Config{Policy: []policy.Rule{
		{When: `tool.name == "getPet" && args.petId == 2`, Effect: policy.Deny},
		{When: `tool.name == "listCategories"`, Effect: policy.Confirm},
		{When: `tool.name == "getOrder" && caller.subject != "` + "x" + `"`, Effect: policy.Deny},
	}})
	ctx := context.Background()
	client := func(token string, answer bool) *mcp.Client {
		c := mcp.NewClient(g.Server())
		c.Principal = g.callers.principal(token)
		c.Capabilities.Elicitation = &mcp.ElicitationCapability{}
		c.AnswerInput = func(ctx context.Context, key string, req mcp.InputRequest) (any, error) {
			return map[string]any{"action": "accept", "content": map[string]any{"confirm": answer}}, nil
		}
		return c
	}
	c := client("demo-token", true)
	cases := []struct {
		tool string
		args map[string]any
		want string // "ok", "denied", "declined"
		c    *mcp.Client
	}{
		{"getPet", map[string]any{"petId": 1}, "ok", c},
		{"getPet", map[string]any{"petId": 2}, "denied", c},
		{"listCategories", nil, "ok", c},                                 // asked, accepted
		{"listCategories", nil, "declined", client("demo-token", false)}, // asked, refused
	}
	for _, tc := range cases {
		res, err := tc.c.CallTool(ctx, tc.tool, tc.args)
		if err != nil {
			t.Fatalf("%s %v: %v", tc.tool, tc.args, err)
		}
		got := "ok"
		switch {
		case res.IsError && text(res) == policy.DeniedMessage:
			got = "denied"
		case res.IsError && strings.Contains(text(res), "did not allow"):
			got = "declined"
		case res.IsError:
			got = "error: " + text(res)
		}
		if got != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.tool, tc.args, got, tc.want)
		}
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if slices.Contains(names, "getOrder") || !slices.Contains(names, "getPet") {
		t.Errorf("tools/list %v: getOrder must be hidden, getPet (denied only for some arguments) listed", names)
	}
	resp, err := c.Do(ctx, "tools/call", map[string]any{"name": "getOrder", "arguments": map[string]any{"orderId": 1}})
	unknown, _ := c.Do(ctx, "tools/call", map[string]any{"name": "noSuchTool", "arguments": map[string]any{}})
	if err != nil || resp.Error == nil || unknown.Error == nil || resp.Error.Code != unknown.Error.Code {
		t.Errorf("a hidden tool's call %+v, an unknown tool's %+v: want the same error", resp.Error, unknown.Error)
	}
}

// TestQuotaPerCaller: a caller over its limit gets a tool error saying when
// to retry, counted as refused; another caller is not affected.
func TestQuotaPerCaller(t *testing.T) {
	g := newDemo(t, Config{Quotas: []quota.Rule{{When: `tool.annotations.readOnlyHint`, Per: quota.PerCaller, Limit: 2, Window: time.Hour}}})
	ctx := context.Background()
	a, b := mcp.NewClient(g.Server()), mcp.NewClient(g.Server())
	a.Principal, b.Principal = g.callers.principal("demo-token"), g.callers.principal("other-token")
	for i := range 3 {
		res, err := a.CallTool(ctx, "getPet", map[string]any{"petId": 1})
		if err != nil {
			t.Fatal(err)
		}
		if refused := res.IsError && strings.Contains(strings.ToLower(text(res)), "retry"); refused != (i == 2) {
			t.Errorf("call %d: %s", i+1, text(res))
		}
	}
	if res, _ := b.CallTool(ctx, "listCategories", nil); res == nil || strings.Contains(strings.ToLower(text(res)), "retry") {
		t.Errorf("another caller was refused: %+v", res)
	}
}

// TestAuditAndCallLog: a file audit sink gets one record per call with the
// outcome, the upstream status and the confirmation, and the info log one
// line per call; neither carries the bearer or the arguments.
func TestAuditAndCallLog(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	var logs bytes.Buffer
	cfg := Config{Demo: true, Store: "memory", Audit: AuditConfig{Sink: "file:" + file}}
	g, err := New(context.Background(), cfg, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(g.Server())
	c.Principal = g.callers.principal("demo-token")
	c.Capabilities.Elicitation = &mcp.ElicitationCapability{}
	c.AnswerInput = func(context.Context, string, mcp.InputRequest) (any, error) {
		return map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}, nil
	}
	ctx := context.Background()
	c.CallTool(ctx, "getPet", map[string]any{"petId": 1})
	c.CallTool(ctx, "getPet", map[string]any{"petId": 424242})
	c.CallTool(ctx, "deletePet", map[string]any{"petId": 3})
	g.Close() // flushes the record
	recs, err := audit.ReadFile(ctx, file, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(file)
	if len(recs) != 4 { // getPet ×2, deletePet: the question, then the confirmed call
		t.Fatalf("%d records:\n%s", len(recs), raw)
	}
	for _, secret := range []string{"demo-token", "424242"} {
		if bytes.Contains(raw, []byte(secret)) || bytes.Contains(logs.Bytes(), []byte(secret)) {
			t.Errorf("%q is in the audit record or the log", secret)
		}
	}
	var lines int
	for _, l := range bytes.Split(logs.Bytes(), []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(l, &m) == nil && m["msg"] == "tool call" {
			lines++
			if m["tool"] == nil || m["outcome"] == nil || m["caller"] == nil || m["duration"] == nil {
				t.Errorf("call log line lacks a field: %s", l)
			}
		}
	}
	if lines != 4 {
		t.Errorf("%d call log lines, want 4:\n%s", lines, logs.String())
	}
	for _, want := range []string{`"http_status":404`, `"http_status":204`, `"answer":"accept"`, `"outcome":"input_required"`} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("the audit record lacks %s:\n%s", want, raw)
		}
	}
}

// TestMetricsCountEverything: 2025-11-25 requests are counted by method,
// task tools like any tool, and a call that paused to ask the user as
// input_required, not as an error.
func TestMetricsCountEverything(t *testing.T) {
	g := newDemo(t, Config{})
	ts := httptest.NewServer(g.Handler())
	defer ts.Close()
	post := func(h map[string]string, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer demo-token")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	// A legacy session: initialize, then a call named only in the body.
	init := post(nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := init.Header.Get("Mcp-Session-Id")
	legacy := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	post(legacy, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	post(legacy, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"getPet","arguments":{"petId":1}}}`)
	// A task tool (createReport) and a destructive call that asks first.
	meta := func(caps string) string {
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	}
	modern := func(name string) map[string]string {
		return map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name}
	}
	post(modern("createReport"), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"createReport","arguments":{"kind":"inventory"},`+
		meta(`{"extensions":{"io.modelcontextprotocol/tasks":{}}}`)+`}}`)
	post(modern("deletePet"), `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"deletePet","arguments":{"petId":1},`+meta(`{"elicitation":{}}`)+`}}`)
	b := wantMetrics(t, ts.URL,
		`mcpgate_requests_total{method="initialize",status="200"} 1`,
		`mcpgate_tool_calls_total{outcome="ok",tool="getPet"} 1`,
		`mcpgate_tool_calls_total{outcome="task",tool="createReport"} 1`,
		`mcpgate_tool_calls_total{outcome="input_required",tool="deletePet"} 1`,
	)
	if t.Failed() {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "mcpgate_requests_total") || strings.HasPrefix(l, "mcpgate_tool_calls_total") {
				t.Log(l)
			}
		}
	}
	if strings.Contains(string(b), `outcome="error",tool="deletePet"`) {
		t.Error("a call that asked the user was counted as an error")
	}
}

// TestAuditTaskChanges: a task's worker records each state change it
// makes (working, then completed) beside the call that created it.
func TestAuditTaskChanges(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	g, err := New(context.Background(), Config{Demo: true, Store: "memory", Audit: AuditConfig{Sink: "file:" + file}}, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop := g.startRunner(ctx)
	c := taskClient(g, "demo-token")
	id := createTask(t, c, "createReport", map[string]any{"kind": "inventory"})
	if status, res := awaitTask(t, c, id); status != "completed" {
		t.Fatalf("task %s: %s", status, res)
	}
	cancel()
	stop()
	g.Close()
	recs, err := audit.ReadFile(context.Background(), file, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for _, r := range recs {
		if r.TaskID == id && r.Kind != audit.KindToolCall {
			statuses = append(statuses, r.TaskStatus)
		}
	}
	slices.Sort(statuses)
	if !slices.Equal(statuses, []string{"completed", "working"}) {
		raw, _ := os.ReadFile(file)
		t.Fatalf("the task's changes recorded: %v\n%s", statuses, raw)
	}
}

// TestAuditLossIsCounted: records the sink refuses (here /dev/full, where
// every write fails) show in /metrics, as the dropped ones do.
func TestAuditLossIsCounted(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	g := newDemo(t, Config{Audit: AuditConfig{Sink: "file:/dev/full"}})
	ts := httptest.NewServer(g.Handler())
	defer ts.Close()
	c := mcp.NewClient(g.Server())
	c.Principal = g.callers.principal("demo-token")
	for range 3 {
		if _, err := c.CallTool(context.Background(), "getPet", map[string]any{"petId": 1}); err != nil {
			t.Fatal(err)
		}
	}
	wantMetrics(t, ts.URL, "mcpgate_audit_records_dropped_total 0")
	for deadline := time.Now().Add(10 * time.Second); g.ops.audit.Failed() < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the sink's failures were not counted: %d", g.ops.audit.Failed())
		}
	}
	wantMetrics(t, ts.URL, "mcpgate_audit_records_failed_total 3")
}
