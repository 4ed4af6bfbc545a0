package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestDispatcher: a dispatching tool's call runs the named tool exactly as
// a direct call (its input round included, bound to the dispatcher's own
// call); unknown, hidden and dispatcher names answer like an unknown tool.
func TestDispatcher(t *testing.T) {
	s := NewServer(Implementation{Name: "d", Version: "1"}, &ServerOptions{
		ToolFilter: func(_ context.Context, _ Principal, t *Tool) bool { return t.Name != "secret" },
	})
	ts := s.NewToolSet()
	textTool(t, ts, "echo", "echoed")
	textTool(t, ts, "secret", "hidden")
	must(t, ts.Add(&Tool{Name: "ask"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		if step, err := ContinuationAs[string](req.Request); err == nil && step == "q" {
			if ans, ok := req.Elicitation("q"); ok {
				return TextResult("answered " + ans.Action), nil
			}
		}
		return nil, RequireInput(map[string]InputRequest{"q": ElicitForm("?", json.RawMessage(`{"type":"object"}`))}, "q")
	}))
	dispatch := func(_ context.Context, req *CallToolRequest) (string, json.RawMessage, error) {
		var a struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(req.Arguments, &a); err != nil {
			return "", nil, err
		}
		return a.Name, a.Arguments, nil
	}
	must(t, ts.AddDispatcher(&Tool{Name: "call"}, dispatch))
	must(t, s.SetTools(ts))

	c := NewClient(s)
	c.Capabilities.Elicitation = &ElicitationCapability{}
	c.AnswerInput = func(context.Context, string, InputRequest) (any, error) {
		return map[string]any{"action": "accept", "content": map[string]any{}}, nil
	}
	res, err := c.CallTool(t.Context(), "call", map[string]any{"name": "echo"})
	if err != nil || res.Content[0].Text != "echoed" {
		t.Fatalf("call echo: %v %+v", err, res)
	}
	res, err = c.CallTool(t.Context(), "call", map[string]any{"name": "ask"})
	if err != nil || res.Content[0].Text != "answered accept" {
		t.Fatalf("call ask (one input round): %v %+v", err, res)
	}
	unknown, _ := c.Do(t.Context(), "tools/call", map[string]any{"name": "nope"})
	for _, inner := range []string{"nope", "secret", "call"} {
		r, err := c.Do(t.Context(), "tools/call", map[string]any{"name": "call", "arguments": map[string]any{"name": inner}})
		if err != nil || r.Error == nil || r.Error.Code != unknown.Error.Code || !strings.Contains(r.Error.Message, "Unknown tool: "+inner) {
			t.Errorf("call %s: %v %+v, want the unknown tool's error", inner, err, r.Error)
		}
	}
	// The state of a paused inner call is bound to the dispatcher's call:
	// it does not resume a call of the inner tool made directly.
	plain := NewClient(s)
	plain.Capabilities.Elicitation = &ElicitationCapability{}
	first, _ := plain.Do(t.Context(), "tools/call", map[string]any{"name": "call", "arguments": map[string]any{"name": "ask"}})
	var paused struct{ RequestState string }
	if json.Unmarshal(first.Result, &paused); paused.RequestState == "" {
		t.Fatalf("no pause: %s", first.Result)
	}
	r, _ := plain.Do(t.Context(), "tools/call", map[string]any{"name": "ask", "requestState": paused.RequestState,
		"inputResponses": map[string]any{"q": map[string]any{"action": "accept", "content": map[string]any{}}}})
	if r.Error == nil {
		t.Errorf("a dispatcher's state resumed a direct call: %s", r.Result)
	}
}
