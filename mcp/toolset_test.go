package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/tasks"
)

func textTool(t *testing.T, ts *ToolSet, name, text string) {
	t.Helper()
	must(t, ts.Add(&Tool{Name: name}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
		return TextResult(text), nil
	}))
}

func listedNames(t *testing.T, c *Client) []string {
	t.Helper()
	tools, err := c.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	return names
}

func callText(t *testing.T, c *Client, name string) (string, *Error) {
	t.Helper()
	r, err := c.Do(t.Context(), "tools/call", map[string]any{"name": name})
	if err != nil {
		t.Fatal(err)
	}
	if r.Error != nil {
		return "", r.Error
	}
	var res CallToolResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	return res.Content[0].Text, nil
}

func TestToolSetSwap(t *testing.T) {
	var changes atomic.Int32
	s := NewServer(Implementation{Name: "swap", Version: "1"}, &ServerOptions{ToolsChanged: func() { changes.Add(1) }})
	c := NewClient(s)

	v1 := s.NewToolSet()
	textTool(t, v1, "search", "v1 search")
	textTool(t, v1, "getPet", "v1 getPet")
	textTool(t, v1, "deletePet", "v1 deletePet")
	must(t, v1.Unlist("getPet", "deletePet"))
	if err := v1.Unlist("nope"); err == nil {
		t.Error("unlisting an unknown tool is an error")
	}
	must(t, s.SetTools(v1))
	if got := listedNames(t, c); !slices.Equal(got, []string{"search"}) {
		t.Errorf("listed %v, want only search", got)
	}
	if text, jerr := callText(t, c, "deletePet"); jerr != nil || text != "v1 deletePet" {
		t.Errorf("an unlisted tool must stay callable: %q %v", text, jerr)
	}
	if s.ToolsVersion() != v1.Version() || changes.Load() != 1 {
		t.Errorf("version %s (set %s), %d change callbacks", s.ToolsVersion(), v1.Version(), changes.Load())
	}

	v2 := s.NewToolSet()
	textTool(t, v2, "search", "v2 search")
	textTool(t, v2, "listPets", "v2 listPets")
	must(t, s.SetTools(v2))
	if got := listedNames(t, c); !slices.Equal(got, []string{"search", "listPets"}) {
		t.Errorf("after the swap: listed %v", got)
	}
	if text, _ := callText(t, c, "search"); text != "v2 search" {
		t.Errorf("search after the swap: %q", text)
	}
	if _, jerr := callText(t, c, "getPet"); jerr == nil || jerr.Code != CodeInvalidParams || !strings.Contains(jerr.Message, "Unknown tool") {
		t.Errorf("a tool of the old set: %+v", jerr)
	}
	if v1.Version() == v2.Version() || s.ToolsVersion() != v2.Version() || changes.Load() != 2 {
		t.Errorf("versions %s %s (in service %s), %d callbacks", v1.Version(), v2.Version(), s.ToolsVersion(), changes.Load())
	}

	// Same content, same version; a set serves once.
	v3 := s.NewToolSet()
	textTool(t, v3, "search", "v2 search")
	textTool(t, v3, "listPets", "v2 listPets")
	if v3.Version() != v2.Version() {
		t.Error("equal sets have different versions")
	}
	if err := s.SetTools(v2); err == nil {
		t.Error("a set in service was swapped in again")
	}
	if err := v2.Add(&Tool{Name: "late"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil }); err == nil {
		t.Error("a set in service changed")
	}
	other := NewServer(Implementation{Name: "other", Version: "1"}, nil)
	if err := other.SetTools(v3); err == nil {
		t.Error("a set of another server was accepted")
	}
	// The list pages of a set are encoded by the swap, not by a request.
	if snap := s.toolSnapshot(); snap.pages[modern].pages == nil {
		t.Error("list pages not encoded by SetTools")
	}
}

// TestToolSetSwapInFlight: a call in flight finishes with the handler it
// started with; listeners of both eras are told the list changed.
func TestToolSetSwapInFlight(t *testing.T) {
	s := NewServer(Implementation{Name: "swap", Version: "1"}, nil)
	started, release := make(chan struct{}), make(chan struct{})
	v1 := s.NewToolSet()
	must(t, v1.Add(&Tool{Name: "slow"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
		close(started)
		<-release
		return TextResult("v1"), nil
	}))
	must(t, s.SetTools(v1))

	h := NewHTTPHandler(s, nil)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	w := newStreamWriter()
	r := listenRequestFor(ctx)
	wg.Add(1)
	go func() { defer wg.Done(); h.ServeHTTP(w, r) }()
	<-w.first

	// A legacy session on stdio gets list changes as notifications.
	legacyOut := startLegacyStdio(t, s)

	c := NewClient(s)
	done := make(chan string, 1)
	go func() { text, _ := callText(t, c, "slow"); done <- text }()
	<-started
	v2 := s.NewToolSet()
	textTool(t, v2, "slow", "v2")
	must(t, s.SetTools(v2))
	close(release)
	if got := <-done; got != "v1" {
		t.Errorf("the call in flight finished with %q, want its own handler's v1", got)
	}
	if text, _ := callText(t, c, "slow"); text != "v2" {
		t.Errorf("a new call: %q", text)
	}
	waitFor(t, func() bool {
		_, body := w.result()
		return strings.Contains(body, "notifications/tools/list_changed")
	}, "the listen stream was not told the list changed")
	select {
	case line := <-legacyOut:
		if !strings.Contains(line, `"method":"notifications/tools/list_changed"`) {
			t.Errorf("legacy session got %s", line)
		}
	case <-time.After(5 * time.Second):
		t.Error("the legacy session was not told the list changed")
	}
}

func listenRequestFor(ctx context.Context) *http.Request {
	return listenHTTPRequest(ctx, "192.0.2.1")
}

func waitFor(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startLegacyStdio opens a legacy stdio session on s and returns its
// output lines after the initialize answer.
func startLegacyStdio(t *testing.T, s *Server) <-chan string {
	t.Helper()
	p := openStdio(t, s)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`)
	p.next()
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		for p.lines.Scan() {
			lines <- p.lines.Text()
		}
	}()
	return lines
}

func TestListFilter(t *testing.T) {
	s := NewServer(Implementation{Name: "filters", Version: "1"}, &ServerOptions{
		ToolFilter: func(ctx context.Context, p Principal, tool *Tool) bool {
			return tool.Name != "admin" || p.Subject == "root"
		},
		ListFilter: func(ctx context.Context, p Principal, tool *Tool) bool {
			return tool.Name != "risky" || p.Subject == "root"
		},
	})
	for _, n := range []string{"read", "risky", "admin"} {
		must(t, s.AddTool(&Tool{Name: n}, func(context.Context, *CallToolRequest) (*CallToolResult, error) { return TextResult(n), nil }))
	}
	user, root := NewClient(s), NewClient(s)
	user.Principal, root.Principal = Principal{Subject: "u"}, Principal{Subject: "root"}
	if got := listedNames(t, user); !slices.Equal(got, []string{"read"}) {
		t.Errorf("user lists %v", got)
	}
	if got := listedNames(t, root); !slices.Equal(got, []string{"read", "risky", "admin"}) {
		t.Errorf("root lists %v", got)
	}
	if text, jerr := callText(t, user, "risky"); jerr != nil || text != "risky" {
		t.Errorf("a tool the list filter hides is still callable: %q %v", text, jerr)
	}
	if _, jerr := callText(t, user, "admin"); jerr == nil || !strings.Contains(jerr.Message, "Unknown tool") {
		t.Errorf("a tool the call filter hides: %v", jerr)
	}
	r, _ := user.Do(t.Context(), "tools/list", nil)
	if !strings.Contains(string(r.Result), `"cacheScope":"private"`) {
		t.Errorf("a filtered list must be private: %s", r.Result)
	}
}

// TestToolSetTaskTools: a task tool swapped in runs as a task with the
// definition in service when the task starts.
func TestToolSetTaskTools(t *testing.T) {
	mgr := tasks.NewMemory(100, tasks.Options{})
	runner, err := tasks.NewRunner(tasks.RunnerConfig{Manager: mgr, Poll: 10 * time.Millisecond, Scan: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(Implementation{Name: "tasks", Version: "1"}, nil)
	must(t, s.EnableTasks(TaskConfig{Runner: runner}))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = runner.Run(ctx) }()

	report := func(version string) *TaskTool {
		return &TaskTool{Tool: Tool{Name: "report"}, Support: TaskOptional,
			Run: func(ctx context.Context, r *TaskRequest) (*CallToolResult, error) {
				return TextResult("report " + version), nil
			}}
	}
	for _, version := range []string{"v1", "v2"} {
		ts := s.NewToolSet()
		must(t, ts.AddTask(report(version)))
		must(t, s.SetTools(ts))
		c := NewClient(s)
		c.Capabilities.Extensions = map[string]json.RawMessage{ExtensionTasks: json.RawMessage("{}")}
		r, err := c.Do(ctx, "tools/call", map[string]any{"name": "report"})
		if err != nil || r.Error != nil {
			t.Fatalf("%s: %v %+v", version, err, r.Error)
		}
		var created struct {
			TaskID string `json:"taskId"`
		}
		if err := json.Unmarshal(r.Result, &created); err != nil || created.TaskID == "" {
			t.Fatalf("%s: not a task: %s", version, r.Result)
		}
		waitFor(t, func() bool {
			r, _ := c.Do(ctx, "tasks/get", map[string]any{"taskId": created.TaskID})
			return r.Error == nil && strings.Contains(string(r.Result), fmt.Sprintf(`"text":"report %s"`, version))
		}, version+": the task did not complete with its definition")
	}
}

// TestToolSetVersionCoversDefinitions checks that the version changes with
// every part of a tool's definition, its schemas included (they are hashed
// by digest, once per distinct schema), and with nothing else.
func TestToolSetVersionCoversDefinitions(t *testing.T) {
	s := NewServer(Implementation{Name: "versions", Version: "1"}, nil)
	noop := func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil }
	in := json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)
	out := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)
	base := Tool{Name: "getPet", Description: "Get a pet", InputSchema: in, OutputSchema: out}
	version := func(tools ...Tool) string {
		ts := s.NewToolSet()
		for i := range tools {
			must(t, ts.Add(&tools[i], noop))
		}
		return ts.Version()
	}
	other := func(change func(*Tool)) Tool {
		tl := base
		change(&tl)
		return tl
	}
	want := version(base, other(func(tl *Tool) { tl.Name = "getPet2" }))
	// The same definitions, written another way (the set compacts schemas),
	// have the same version.
	spaced := other(func(tl *Tool) { tl.InputSchema = json.RawMessage(" " + string(in) + "\n") })
	if got := version(spaced, other(func(tl *Tool) { tl.Name = "getPet2" })); got != want {
		t.Errorf("the same definitions, schemas spaced: version %s, want %s", got, want)
	}
	for _, tc := range []struct {
		name  string
		tools []Tool
	}{
		{"another input schema", []Tool{other(func(tl *Tool) { tl.InputSchema = out }), other(func(tl *Tool) { tl.Name = "getPet2" })}},
		{"another output schema", []Tool{other(func(tl *Tool) { tl.OutputSchema = in }), other(func(tl *Tool) { tl.Name = "getPet2" })}},
		{"no output schema", []Tool{other(func(tl *Tool) { tl.OutputSchema = nil }), other(func(tl *Tool) { tl.Name = "getPet2" })}},
		{"schemas swapped", []Tool{other(func(tl *Tool) { tl.InputSchema, tl.OutputSchema = out, in }), other(func(tl *Tool) { tl.Name = "getPet2" })}},
		{"another description", []Tool{other(func(tl *Tool) { tl.Description = "Get one pet" }), other(func(tl *Tool) { tl.Name = "getPet2" })}},
		{"another order", []Tool{other(func(tl *Tool) { tl.Name = "getPet2" }), base}},
		{"one tool fewer", []Tool{base}},
	} {
		if got := version(tc.tools...); got == want {
			t.Errorf("%s: the version did not change", tc.name)
		}
	}
}
