package mcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Duplicate member names are refused everywhere in a request, on both
// transports and in both eras, before anything in the message is used: a
// reader in front of the server (a proxy, a WAF) may take the first of two
// members where this server would take the last.

// confirmServer has a tool that asks the user to confirm and reports the
// action it was given.
func confirmServer(t *testing.T) *Server {
	t.Helper()
	s := NewServer(Implementation{Name: "dup", Version: "1"}, nil)
	must(t, s.AddTool(&Tool{Name: "confirm"}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
		if res, ok := r.Elicitation("ok"); ok {
			return TextResult("action=" + res.Action), nil
		}
		return nil, RequireInput(map[string]InputRequest{"ok": ElicitForm("Delete everything?", json.RawMessage(`{"type":"object","properties":{}}`))}, nil)
	}))
	return s
}

const dupMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

func dupPost(t *testing.T, url string, hdr map[string]string, body string) (int, map[string]json.RawMessage) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]json.RawMessage
	if len(b) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("answer is not one JSON object: %s", b)
		}
	}
	return resp.StatusCode, m
}

// wantDuplicateError checks a -32700 answer without an id (HTTP) or with
// "id": null (stdio) whose message names the duplicated member.
func wantDuplicateError(t *testing.T, m map[string]json.RawMessage, pointer string, stdio bool) {
	t.Helper()
	var e Error
	if err := json.Unmarshal(m["error"], &e); err != nil {
		t.Fatalf("no error in %v", m)
	}
	if e.Code != CodeParseError || !strings.Contains(e.Message, "duplicate member name") || !strings.Contains(e.Message, pointer) {
		t.Errorf("error %d %q, want -32700 naming %s", e.Code, e.Message, pointer)
	}
	if id, ok := m["id"]; ok != stdio || (stdio && string(id) != "null") {
		t.Errorf("parse error id = %s (present %v), want it %s", id, ok, map[bool]string{false: "absent", true: "null"}[stdio])
	}
	if m["result"] != nil {
		t.Errorf("a result beside the error: %s", m["result"])
	}
}

func TestDuplicateNamesModernHTTP(t *testing.T) {
	ts := httptest.NewServer(NewHTTPHandler(confirmServer(t), nil))
	defer ts.Close()
	hdr := map[string]string{HeaderProtocolVersion: ProtocolVersion, HeaderMethod: "tools/call", HeaderName: "confirm"}

	// The first round yields a sealed requestState.
	status, m := dupPost(t, ts.URL, hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"confirm",`+dupMeta+`}}`)
	var ir struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
	}
	if status != 200 || json.Unmarshal(m["result"], &ir) != nil || ir.ResultType != ResultInputRequired {
		t.Fatalf("first round: %d %v", status, m)
	}
	state := `"requestState":"` + ir.RequestState + `"`
	retry := func(answer string) string {
		return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"confirm",` + state + `,"inputResponses":{"ok":` + answer + `},` + dupMeta + `}}`
	}

	for _, tc := range []struct{ name, body, pointer string }{
		{"elicitation answer", retry(`{"action":"decline","action":"accept"}`), "/params/inputResponses/ok/action"},
		{"elicitation answer, escaped name", retry(`{"action":"decline","\u0061ction":"accept"}`), "/params/inputResponses/ok/action"},
		{"input response key", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"confirm",` + state + `,"inputResponses":{"ok":{"action":"decline"},"ok":{"action":"accept"}},` + dupMeta + `}}`, "/params/inputResponses/ok"},
		{"requestState", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"confirm",` + state + `,` + state + `,"inputResponses":{"ok":{"action":"accept"}},` + dupMeta + `}}`, "/params/requestState"},
		{"method", `{"jsonrpc":"2.0","id":3,"method":"tools/list","method":"tools/call","params":{"name":"confirm",` + dupMeta + `}}`, "/method"},
		{"jsonrpc", `{"jsonrpc":"2.0","jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"confirm",` + dupMeta + `}}`, "/jsonrpc"},
		{"id", `{"jsonrpc":"2.0","id":3,"id":4,"method":"tools/call","params":{"name":"confirm",` + dupMeta + `}}`, "/id"},
		{"params", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x",` + dupMeta + `},"params":{"name":"confirm",` + dupMeta + `}}`, "/params"},
		{"name", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","name":"confirm",` + dupMeta + `}}`, "/params/name"},
		{"_meta", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"confirm",` + dupMeta + `,` + dupMeta + `}}`, "/params/_meta"},
		{"_meta member", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"confirm","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}`, "/params/_meta/io.modelcontextprotocol~1protocolVersion"},
		{"argument", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"confirm","arguments":{"id":1,"x":{},"id":2},` + dupMeta + `}}`, "/params/arguments/id"},
		{"nested argument", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"confirm","arguments":{"list":[{"a":1,"a":2}]},` + dupMeta + `}}`, "/params/arguments/list/0/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, m := dupPost(t, ts.URL, hdr, tc.body)
			if status != http.StatusBadRequest {
				t.Errorf("status %d, want 400", status)
			}
			wantDuplicateError(t, m, tc.pointer, false)
		})
	}

	// The same retry without the duplicate is served, and the answer is the
	// one sent: the refusal above is about the duplicate alone.
	status, m = dupPost(t, ts.URL, hdr, retry(`{"action":"decline"}`))
	if status != 200 || !strings.Contains(string(m["result"]), "action=decline") {
		t.Fatalf("retry without a duplicate: %d %v", status, m)
	}
}

func TestDuplicateNamesLegacyHTTP(t *testing.T) {
	ts := httptest.NewServer(NewHTTPHandler(confirmServer(t), nil))
	defer ts.Close()
	c := &legacyClient{t: t, url: ts.URL}

	// initialize itself: no session is opened.
	resp := c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","protocolVersion":"2026-07-28","capabilities":{}}}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(HeaderSessionID) != "" {
		t.Fatalf("initialize with a duplicate: %d, session %q", resp.StatusCode, resp.Header.Get(HeaderSessionID))
	}
	wantDuplicateError(t, m, "/params/protocolVersion", false)

	c.initialize()
	status, m := dupPost(t, ts.URL, map[string]string{HeaderSessionID: c.sid, HeaderProtocolVersion: "2025-11-25"},
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"confirm","arguments":{"a":1,"a":2}}}`)
	if status != http.StatusBadRequest {
		t.Errorf("session request with a duplicate: %d", status)
	}
	wantDuplicateError(t, m, "/params/arguments/a", false)

	// An elicitation answered with a duplicated action is refused; the
	// request waits for a well-formed answer and takes exactly that one.
	got := c.callAnswering(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"confirm","arguments":{}}}`,
		func(id json.RawMessage) string {
			r := c.post(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"action":"decline","action":"accept"}}`)
			rb, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if r.StatusCode != http.StatusBadRequest || !strings.Contains(string(rb), `"code":-32700`) {
				return "duplicated answer: " + r.Status + " " + string(rb)
			}
			r = c.post(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"action":"decline"}}`)
			r.Body.Close()
			return ""
		})
	if !strings.Contains(got, "action=decline") {
		t.Fatalf("elicitation round: %s", got)
	}
}

func TestDuplicateNamesStdio(t *testing.T) {
	p := openStdio(t, confirmServer(t))
	send, next := p.send, p.next

	// Modern: the whole line is refused and the server keeps serving.
	send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"confirm","arguments":{"x":1,"x":2},` + dupMeta + `}}`)
	m := next()
	wantDuplicateError(t, m, "/params/arguments/x", true)

	// Legacy: a session's elicitation answered with a duplicated action.
	send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}}}}`)
	if m := next(); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"confirm","arguments":{}}}`)
	m = next()
	if string(m["method"]) != `"elicitation/create"` {
		t.Fatalf("expected an elicitation, got %v", m)
	}
	send(`{"jsonrpc":"2.0","id":` + string(m["id"]) + `,"result":{"action":"decline","action":"accept"}}`)
	wantDuplicateError(t, next(), "/result/action", true)
	send(`{"jsonrpc":"2.0","id":` + string(m["id"]) + `,"result":{"action":"decline"}}`)
	if m := next(); string(m["id"]) != "3" || !strings.Contains(string(m["result"]), "action=decline") {
		t.Fatalf("after the refused answer: %v", m)
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
}
