package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/policy"
	"github.com/mcpgate/mcpgate/sqlite"
)

// taskClient is a client of g that declares the Tasks extension.
func taskClient(g *Gateway, token string) *mcp.Client {
	c := mcp.NewClient(g.Server())
	c.Principal = g.callers.principal(token)
	c.Capabilities.Extensions = map[string]json.RawMessage{mcp.ExtensionTasks: json.RawMessage("{}")}
	return c
}

// createTask calls a task tool and returns the task id.
func createTask(t *testing.T, c *mcp.Client, tool string, args map[string]any) string {
	t.Helper()
	resp, err := c.Do(context.Background(), "tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil || resp.Error != nil {
		t.Fatalf("%s: %v %+v", tool, err, resp.Error)
	}
	var created struct{ TaskID string }
	if json.Unmarshal(resp.Result, &created); created.TaskID == "" {
		t.Fatalf("%s: no task: %s", tool, resp.Result)
	}
	return created.TaskID
}

// awaitTask polls tasks/get until the task is terminal and returns the
// tasks/get result.
func awaitTask(t *testing.T, c *mcp.Client, id string) (status string, raw json.RawMessage) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		r, err := c.Do(context.Background(), "tasks/get", map[string]any{"taskId": id})
		if err != nil || r.Error != nil {
			t.Fatalf("tasks/get: %v %+v", err, r.Error)
		}
		var got struct{ Status string }
		_ = json.Unmarshal(r.Result, &got)
		switch got.Status {
		case "completed", "failed", "cancelled":
			return got.Status, r.Result
		}
	}
	t.Fatalf("task %s did not end", id)
	return "", nil
}

// storedSecret reads the secret column of a task from a SQLite store.
func storedSecret(t *testing.T, g *Gateway, id string) []byte {
	t.Helper()
	var secret []byte
	if err := g.backend.Tasks.(*sqlite.Manager).DB().QueryRow(`SELECT secret FROM tasks WHERE id = ?`, id).Scan(&secret); err != nil {
		t.Fatal(err)
	}
	return secret
}

// TestTaskCredentialSurvivesItsProcess: a task created on one gateway
// process and run by another (a replica taking over, the next start after
// a crash) calls the upstream with its creator's credential, kept sealed
// with the task; with task_credentials memory it cannot, and says so.
func TestTaskCredentialSurvivesItsProcess(t *testing.T) {
	key := make([]byte, 32)
	rand.Read(key)
	for _, tc := range []struct {
		name       string
		memoryOnly bool
	}{{"Sealed", false}, {"MemoryOnly", true}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Demo: true, Store: "sqlite:" + filepath.Join(t.TempDir(), "mcpgate.db"),
				StateKeys: "k1:" + base64.StdEncoding.EncodeToString(key)}
			if tc.memoryOnly {
				cfg.TaskCredentials = "memory"
			}
			first, err := New(context.Background(), cfg, discardLogger())
			if err != nil {
				t.Fatal(err)
			}
			// Created on the first process, which never runs it.
			id := createTask(t, taskClient(first, "demo-token"), "createReport", map[string]any{"kind": "inventory"})
			sealed := storedSecret(t, first, id)
			if tc.memoryOnly != (sealed == nil) || bytes.Contains(sealed, []byte("demo-token")) {
				t.Fatalf("stored secret %q (memory only: %v)", sealed, tc.memoryOnly)
			}
			first.Close()

			second, err := New(context.Background(), cfg, discardLogger())
			if err != nil {
				t.Fatal(err)
			}
			defer second.Close()
			ctx, cancel := context.WithCancel(context.Background())
			stop := second.startRunner(ctx)
			defer func() { cancel(); stop() }()
			c := taskClient(second, "demo-token")
			status, res := awaitTask(t, c, id)
			if status != "completed" {
				t.Fatalf("task %s: %s", status, res)
			}
			if bytes.Contains(res, []byte("demo-token")) || bytes.Contains(res, sealed) && sealed != nil {
				t.Fatalf("tasks/get shows the credential: %s", res)
			}
			var got struct {
				Result mcp.CallToolResult `json:"result"`
			}
			if err := json.Unmarshal(res, &got); err != nil {
				t.Fatal(err)
			}
			if tc.memoryOnly {
				if !got.Result.IsError || !strings.Contains(text(&got.Result), "lost the caller's credential") {
					t.Fatalf("memory only: %s", res)
				}
			} else if got.Result.IsError || !strings.Contains(string(res), `done`) {
				t.Fatalf("the taken-over task did not run as its caller: %s", res)
			}
			if s := storedSecret(t, second, id); s != nil {
				t.Fatalf("the finished task keeps its credential: %q", s)
			}
		})
	}
}

// TestInlineWait: a client without the Tasks extension calling a
// long-running operation gets its result when it finishes within the
// inline wait, else a note naming the tool call that reads its status;
// neither it nor a task's status message carries the upstream's address.
func TestInlineWait(t *testing.T) {
	short := newDemo(t, Config{TaskInlineWait: 300 * time.Millisecond})
	plain := mcp.NewClient(short.Server())
	plain.Principal = short.callers.principal("demo-token")
	res, err := plain.CallTool(context.Background(), "createReport", map[string]any{"kind": "inventory"})
	if err != nil || res.IsError {
		t.Fatalf("createReport: %v %s", err, text(res))
	}
	txt := text(res)
	if !strings.Contains(txt, "still running") || !strings.Contains(txt, `Call getReport with {"reportId":`) ||
		strings.Contains(txt, short.current().apis[0].cfg.Upstream) {
		t.Fatalf("a still-running operation: %s", txt)
	}
	var args struct{ ReportID int }
	if _, after, ok := strings.Cut(txt, "Call getReport with "); ok {
		_ = json.NewDecoder(strings.NewReader(after)).Decode(&args)
	}
	// The named call reads the status.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		got, err := plain.CallTool(context.Background(), "getReport", map[string]any{"reportId": args.ReportID})
		if err != nil || got.IsError {
			t.Fatalf("getReport %d: %v %s", args.ReportID, err, text(got))
		}
		if strings.Contains(text(got), `"done"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("getReport %d never done: %s", args.ReportID, text(got))
		}
	}

	// A task's status message says the operation was accepted, not where.
	ctx, cancel := context.WithCancel(context.Background())
	stop := short.startRunner(ctx)
	defer func() { cancel(); stop() }()
	c := taskClient(short, "demo-token")
	id := createTask(t, c, "createReport", map[string]any{"kind": "orders"})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r, err := c.Do(context.Background(), "tasks/get", map[string]any{"taskId": id})
		if err != nil || r.Error != nil {
			t.Fatalf("tasks/get: %v %+v", err, r.Error)
		}
		if strings.Contains(string(r.Result), "http://") {
			t.Fatalf("the task shows the upstream's address: %s", r.Result)
		}
		if strings.Contains(string(r.Result), "accepted the operation") || strings.Contains(string(r.Result), `"completed"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no status message: %s", r.Result)
		}
	}
}

// TestInlineWaitProgress: a client without Tasks that gave a progress
// token hears, while its call waits for the accepted operation, that the
// operation is running; one that gave none hears nothing; both get the
// finished operation's result.
func TestInlineWaitProgress(t *testing.T) {
	g := newDemo(t, Config{})
	c := mcp.NewClient(g.Server())
	c.Principal = g.callers.principal("demo-token")
	for _, token := range []any{"report-1", nil} {
		params := map[string]any{"name": "createReport", "arguments": map[string]any{"kind": "inventory"}}
		if token != nil {
			params["_meta"] = map[string]any{"progressToken": token}
		}
		resp, err := c.Do(context.Background(), "tools/call", params)
		if err != nil || resp.Error != nil || !strings.Contains(string(resp.Result), `\"status\":\"done\"`) {
			t.Fatalf("createReport (progress token %v): %v %+v %s", token, err, resp.Error, resp.Result)
		}
		var progress int
		for _, n := range resp.Notifications {
			var msg struct {
				Method string
				Params struct{ ProgressToken any }
			}
			_ = json.Unmarshal(n, &msg)
			if msg.Method == "notifications/progress" && msg.Params.ProgressToken == token {
				progress++
			}
		}
		if (token != nil) != (progress > 0) || len(resp.Notifications) != progress {
			t.Errorf("progress token %v: %d progress notifications of %d: %s", token, progress, len(resp.Notifications), resp.Notifications)
		}
	}
}

// TestTaskOperationsByEveryName: tools.tasks names an operation by its
// operationId, its tool name or "METHOD /path" (the method in any case);
// an entry naming nothing is reported instead of ignored.
func TestTaskOperationsByEveryName(t *testing.T) {
	for _, entry := range []string{"cancelOrder", "POST /orders/{orderId}/cancel", "post /orders/{orderId}/cancel", " POST  /orders/{orderId}/cancel "} {
		t.Run(entry, func(t *testing.T) {
			g := newDemo(t, Config{Tools: ServedTools{ToolsConfig: ToolsConfig{Tasks: []string{entry, "POST /nowhere"}}}})
			cat := g.current()
			if !cat.served["cancelOrder"].task {
				t.Errorf("tools.tasks %q did not make cancelOrder a task tool", entry)
			}
			if cat.served["listPets"].task {
				t.Error("listPets became a task tool")
			}
			if got := cat.apis[0].unmatchedTasks(); len(got) != 1 || got[0] != "POST /nowhere" {
				t.Errorf("unmatched entries: %q, want only POST /nowhere", got)
			}
		})
	}
}

// TestTaskToolRefusedLikeAnyTool: a policy's refusal of a task tool is a
// tool error, as for an ordinary tool (it was a JSON-RPC error), and no
// task handle.
func TestTaskToolRefusedLikeAnyTool(t *testing.T) {
	g := newDemo(t, Config{Policy: []policy.Rule{{When: `tool.name == "createReport" && args.kind == "orders"`, Effect: policy.Deny}}})
	c := taskClient(g, "demo-token")
	resp, err := c.Do(context.Background(), "tools/call", map[string]any{"name": "createReport", "arguments": map[string]any{"kind": "orders"}})
	if err != nil || resp.Error != nil {
		t.Fatalf("createReport: %v %+v", err, resp.Error)
	}
	var res struct {
		IsError bool   `json:"isError"`
		TaskID  string `json:"taskId"`
	}
	if json.Unmarshal(resp.Result, &res); !res.IsError || res.TaskID != "" || !strings.Contains(string(resp.Result), policy.DeniedMessage) {
		t.Fatalf("a refused task tool: %s", resp.Result)
	}
}

// TestTasksPerCaller: a caller past limits.tasks_per_caller gets a tool
// error that says to wait, and no task; another caller still gets one.
func TestTasksPerCaller(t *testing.T) {
	g := newDemo(t, Config{Limits: LimitsConfig{TasksPerCaller: 1}})
	c := taskClient(g, "demo-token")
	createTask(t, c, "createReport", map[string]any{"kind": "inventory"})
	res, err := c.CallTool(context.Background(), "createReport", map[string]any{"kind": "orders"})
	if err != nil || !res.IsError || !strings.Contains(text(res), "most tasks in progress") {
		t.Fatalf("a second task past the bound: %v %+v", err, res)
	}
	createTask(t, taskClient(g, "other-token"), "createReport", map[string]any{"kind": "inventory"})
}
