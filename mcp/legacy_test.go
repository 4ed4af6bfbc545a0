package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// legacyServer is a server with one tool that asks for a name (through the
// MRTR API) and one plain tool.
func legacyServer(t *testing.T) *Server {
	t.Helper()
	s := NewServer(Implementation{Name: "legacy-test", Version: "1"}, nil)
	must(t, s.AddTool(&Tool{Name: "hello", Description: "says hello"}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
		return TextResult("hello"), nil
	}))
	must(t, s.AddTool(&Tool{Name: "ask_name", Description: "asks a name"}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
		if res, ok := r.Elicitation("name"); ok && res.Action == "accept" {
			return TextResult("Hi " + res.Content["name"].(string)), nil
		}
		return nil, RequireInput(map[string]InputRequest{"name": ElicitForm("Name?", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`))}, nil)
	}))
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type legacyClient struct {
	t   *testing.T
	url string
	sid string
}

func (c *legacyClient) post(body string) *http.Response {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		req.Header.Set(HeaderSessionID, c.sid)
		req.Header.Set(HeaderProtocolVersion, "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

func (c *legacyClient) initialize() {
	c.t.Helper()
	resp := c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	defer resp.Body.Close()
	var out struct {
		Result struct {
			ProtocolVersion string         `json:"protocolVersion"`
			ServerInfo      Implementation `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		c.t.Fatal(err)
	}
	if out.Result.ProtocolVersion != "2025-11-25" {
		c.t.Fatalf("negotiated %q, want 2025-11-25", out.Result.ProtocolVersion)
	}
	c.sid = resp.Header.Get(HeaderSessionID)
	if c.sid == "" {
		c.t.Fatal("no Mcp-Session-Id")
	}
}

// callAnswering posts a legacy request and reads its SSE stream, handing
// each server-to-client elicitation's id to answer (which posts the
// client's responses; a non-empty return is a failure). It returns the
// final result, or what went wrong, within ten seconds.
func (c *legacyClient) callAnswering(body string, answer func(id json.RawMessage) string) string {
	done := make(chan string, 1)
	go func() {
		resp := c.post(body)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal([]byte(strings.TrimPrefix(sc.Text(), "data: ")), &m) != nil {
				continue
			}
			if m.Method == MethodElicit {
				if failed := answer(m.ID); failed != "" {
					done <- failed
					return
				}
			}
			if m.Result != nil {
				done <- string(m.Result)
				return
			}
		}
		done <- "stream ended"
	}()
	select {
	case got := <-done:
		return got
	case <-time.After(10 * time.Second):
		return "the request did not complete"
	}
}

func TestLegacyHTTPSession(t *testing.T) {
	ts := httptest.NewServer(NewHTTPHandler(legacyServer(t), nil))
	defer ts.Close()
	c := &legacyClient{t: t, url: ts.URL}

	// Negotiation never yields the modern revision.
	resp := c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{}}}`)
	var init struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&init)
	resp.Body.Close()
	if init.Result.ProtocolVersion != LegacyVersions[0] {
		t.Fatalf("initialize asking 2026-07-28 negotiated %q", init.Result.ProtocolVersion)
	}

	c.initialize()
	resp = c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d", resp.StatusCode)
	}
	resp = c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(b), "resultType") || strings.Contains(string(b), "ttlMs") || strings.Contains(string(b), MetaServerInfo) {
		t.Fatalf("legacy result carries modern members: %s", b)
	}
	if !strings.Contains(string(b), `"ask_name"`) {
		t.Fatalf("tools/list: %s", b)
	}

	// An elicitation round: the server asks on the POST's SSE stream, the
	// client answers with a POSTed response, the tool completes.
	got := c.callAnswering(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask_name","arguments":{}}}`,
		func(id json.RawMessage) string {
			r := c.post(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"action":"accept","content":{"name":"Ada"}}}`)
			r.Body.Close()
			if r.StatusCode != http.StatusAccepted {
				return "response POST answered " + r.Status
			}
			return ""
		})
	if !strings.Contains(got, "Hi Ada") || strings.Contains(got, "resultType") {
		t.Fatalf("elicitation round: %s", got)
	}

	// DELETE ends the session; then its id is unknown (404).
	req, _ := http.NewRequest(http.MethodDelete, ts.URL, nil)
	req.Header.Set(HeaderSessionID, c.sid)
	dresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	dresp.Body.Close()
	if dresp.StatusCode/100 != 2 {
		t.Fatalf("DELETE: %d", dresp.StatusCode)
	}
	resp = c.post(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("request on a deleted session: %d, want 404", resp.StatusCode)
	}
	c.sid = "never-issued"
	resp = c.post(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown session: %d, want 404", resp.StatusCode)
	}
}

func TestLegacySessionLimits(t *testing.T) {
	t.Run("cap", func(t *testing.T) {
		ts := httptest.NewServer(NewHTTPHandler(legacyServer(t), &HTTPOptions{Legacy: LegacyOptions{Sessions: Limits{Total: 2}}}))
		defer ts.Close()
		for range 2 {
			c := &legacyClient{t: t, url: ts.URL}
			c.initialize()
			resp := c.post(`{"jsonrpc":"2.0","id":2,"method":"ping"}`) // in use: it is not the one to go
			resp.Body.Close()
		}
		c := &legacyClient{t: t, url: ts.URL}
		resp := c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("third session: %d, want 503", resp.StatusCode)
		}
	})
	t.Run("idle expiry", func(t *testing.T) {
		// Long enough that a loaded machine serves the first ping in time.
		ts := httptest.NewServer(NewHTTPHandler(legacyServer(t), &HTTPOptions{Legacy: LegacyOptions{IdleTimeout: time.Second}}))
		defer ts.Close()
		c := &legacyClient{t: t, url: ts.URL}
		c.initialize()
		resp := c.post(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("fresh session: %d", resp.StatusCode)
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			time.Sleep(1200 * time.Millisecond) // let it go idle past the timeout
			resp = c.post(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
			resp.Body.Close()
			if resp.StatusCode == http.StatusNotFound {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the idle session never expired")
			}
		}
	})
	t.Run("disabled", func(t *testing.T) {
		ts := httptest.NewServer(NewHTTPHandler(legacyServer(t), &HTTPOptions{Legacy: LegacyOptions{Disable: true}}))
		defer ts.Close()
		c := &legacyClient{t: t, url: ts.URL}
		resp := c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(HeaderSessionID) != "" {
			t.Fatalf("legacy disabled: initialize answered %d (session %q)", resp.StatusCode, resp.Header.Get(HeaderSessionID))
		}
	})
}

// TestLegacyStdio drives both eras on one stdio process: a legacy session
// with an elicitation answered over stdin, and a modern request beside it.
func TestLegacyStdio(t *testing.T) {
	p := openStdio(t, legacyServer(t))
	send, next := p.send, p.next
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}}}}`)
	if m := next(); !strings.Contains(string(m["result"]), `"protocolVersion":"2025-06-18"`) {
		t.Fatalf("initialize: %s", m["result"])
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask_name","arguments":{}}}`)
	m := next()
	if string(m["method"]) != `"elicitation/create"` {
		t.Fatalf("expected a server-to-client elicitation, got %v", m)
	}
	send(`{"jsonrpc":"2.0","id":` + string(m["id"]) + `,"result":{"action":"accept","content":{"name":"Lin"}}}`)
	m = next()
	if string(m["id"]) != "2" || !strings.Contains(string(m["result"]), "Hi Lin") || strings.Contains(string(m["result"]), "resultType") {
		t.Fatalf("legacy tools/call: %v", m)
	}
	// A modern request on the same process stays modern.
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hello","_meta":{"` + MetaProtocolVersion + `":"2026-07-28","` + MetaClientCapabilities + `":{}}}}`)
	m = next()
	if string(m["id"]) != "3" || !strings.Contains(string(m["result"]), `"resultType":"complete"`) {
		t.Fatalf("modern request beside a legacy session: %v", m)
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
}

// stdioPipe serves a server on stdio through pipes, for the tests of this
// package: send writes a line, next reads one JSON message.
type stdioPipe struct {
	t     *testing.T
	in    *io.PipeWriter
	lines *bufio.Scanner
	done  chan error
}

func openStdio(t *testing.T, s *Server) *stdioPipe {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPipe{t: t, in: inW, lines: bufio.NewScanner(outR), done: make(chan error, 1)}
	go func() { p.done <- ServeStdio(context.Background(), s, inR, outW, nil); outW.Close() }()
	t.Cleanup(func() { inW.Close() })
	return p
}

func (p *stdioPipe) send(msg string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, msg+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

func (p *stdioPipe) next() map[string]json.RawMessage {
	p.t.Helper()
	if !p.lines.Scan() {
		p.t.Fatalf("stdout ended: %v", p.lines.Err())
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(p.lines.Bytes(), &m); err != nil {
		p.t.Fatalf("not JSON: %s", p.lines.Bytes())
	}
	return m
}

// close ends the input and returns ServeStdio's error.
func (p *stdioPipe) close() error {
	p.in.Close()
	return <-p.done
}

func TestOriginAllowList(t *testing.T) {
	configured := newOriginSet([]string{"https://app.example.com", "http://localhost:3000"})
	loopback := newOriginSet(nil)
	for _, tc := range []struct {
		set    originSet
		origin string
		want   bool
	}{
		{configured, "https://app.example.com", true},
		{configured, "https://app.example.com:443", true},
		{configured, "HTTPS://APP.EXAMPLE.COM", true},
		{configured, "http://app.example.com", false},
		{configured, "https://app.example.com:9999", false},
		{configured, "https://evil.example.com", false},
		{configured, "http://localhost:3000", true},
		{configured, "http://localhost:3001", false},
		{configured, "null", false},
		{loopback, "http://localhost:5173", true},
		{loopback, "https://127.0.0.1", true},
		{loopback, "http://[::1]:8080", true},
		{loopback, "http://evil.example.com", false},
		{loopback, "file://localhost", false},
	} {
		if got := tc.set.allow(tc.origin); got != tc.want {
			t.Errorf("allow(%q) = %v, want %v", tc.origin, got, tc.want)
		}
	}
}

func TestToolFilter(t *testing.T) {
	s := NewServer(Implementation{Name: "filter", Version: "1"}, &ServerOptions{
		PageSize: 1,
		ToolFilter: func(ctx context.Context, p Principal, tool *Tool) bool {
			return tool.Name != "admin" || slices.Contains(p.Scopes, "admin")
		},
	})
	for _, n := range []string{"a", "admin", "b"} {
		must(t, s.AddTool(&Tool{Name: n, Description: n}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
			return TextResult("ran"), nil
		}))
	}
	ctx := context.Background()
	user := NewClient(s)
	user.Principal = Principal{Subject: "u"}
	tools, err := user.ListTools(ctx)
	if err != nil || len(tools) != 2 || tools[0].Name != "a" || tools[1].Name != "b" {
		t.Fatalf("a user sees %v (%v)", tools, err)
	}
	resp, _ := user.Do(ctx, "tools/list", nil)
	if !strings.Contains(string(resp.Result), `"cacheScope":"private"`) {
		t.Fatalf("a filtered list must be private: %s", resp.Result)
	}
	_, err = user.CallTool(ctx, "admin", nil)
	_, unknownErr := user.CallTool(ctx, "no-such-tool", nil)
	if err == nil || unknownErr == nil || strings.ReplaceAll(err.Error(), "admin", "X") != strings.ReplaceAll(unknownErr.Error(), "no-such-tool", "X") {
		t.Fatalf("a hidden tool must look unknown: %v vs %v", err, unknownErr)
	}
	admin := NewClient(s)
	admin.Principal = Principal{Subject: "a", Scopes: []string{"admin"}}
	if tools, _ := admin.ListTools(ctx); len(tools) != 3 {
		t.Fatalf("an admin sees %d tools", len(tools))
	}
	if r, err := admin.CallTool(ctx, "admin", nil); err != nil || r.IsError {
		t.Fatalf("admin call: %v", err)
	}
}

// TestLegacyDisabledNamesTheCause: with legacy clients turned off, a
// 2025-11-25 client is told that only 2026-07-28 is served, not that a
// header is missing; a modern request without the header still hears
// about the header.
func TestLegacyDisabledNamesTheCause(t *testing.T) {
	ts := httptest.NewServer(NewHTTPHandler(legacyServer(t), &HTTPOptions{Legacy: LegacyOptions{Disable: true}}))
	defer ts.Close()
	for _, tc := range []struct {
		name, body string
		hdr        map[string]string
		code       int
		requested  string
	}{
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`,
			nil, CodeUnsupportedProtocolVersion, "2025-11-25"},
		{"initialize of an older revision", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{}}}`,
			nil, CodeUnsupportedProtocolVersion, "2024-11-05"},
		{"session request", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
			map[string]string{HeaderSessionID: "abc", HeaderProtocolVersion: "2025-11-25"}, CodeUnsupportedProtocolVersion, "2025-11-25"},
		{"legacy request without a session", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`,
			nil, CodeUnsupportedProtocolVersion, ""},
		{"modern request without the header", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			map[string]string{HeaderMethod: "tools/list"}, CodeHeaderMismatch, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, m := dupPost(t, ts.URL, tc.hdr, tc.body)
			var e struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Data    struct {
					Supported []string `json:"supported"`
					Requested *string  `json:"requested"`
				} `json:"data"`
			}
			if err := json.Unmarshal(m["error"], &e); err != nil {
				t.Fatalf("no error: %v", m)
			}
			if status != http.StatusBadRequest || e.Code != tc.code {
				t.Fatalf("%d %d %q, want 400 and %d", status, e.Code, e.Message, tc.code)
			}
			if tc.code != CodeUnsupportedProtocolVersion {
				return
			}
			if !strings.Contains(e.Message, "serves only 2026-07-28") || strings.Contains(e.Message, "header") {
				t.Errorf("message %q does not name the cause", e.Message)
			}
			if !slices.Equal(e.Data.Supported, []string{ProtocolVersion}) || e.Data.Requested == nil || *e.Data.Requested != tc.requested {
				t.Errorf("data %+v, want supported [2026-07-28] and requested %q", e.Data, tc.requested)
			}
		})
	}
}
