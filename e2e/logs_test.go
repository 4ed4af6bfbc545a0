package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestJSONLogs: with --log-format json every line on stderr is one JSON
// object: the start (store, URL, allowed hosts), one line per tool call
// (tool, outcome, upstream status, duration, a hash of the caller; never
// the arguments or the credential) and the shutdown; a startup failure
// too.
func TestJSONLogs(t *testing.T) {
	g := startDemo(t, "--log-format", "json")
	cs := connectHTTP(t, g.URL, connectOptions{Bearer: "demo-token"})
	wantOK(t, "getPet", call(t, cs, "getPet", map[string]any{"petId": 1}))
	call(t, cs, "getPet", map[string]any{"petId": 987654})
	g.stop(t)

	msgs := map[string][]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(g.Log.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		msg, _ := rec["msg"].(string)
		msgs[msg] = append(msgs[msg], rec)
	}
	for _, want := range []string{"store opened", "serving MCP", "tool call", "shut down"} {
		if len(msgs[want]) == 0 {
			t.Errorf("no %q record:\n%s", want, g.Log.String())
		}
	}
	if s := msgs["serving MCP"]; len(s) == 1 && (s[0]["allowed_hosts"] == nil || s[0]["url"] == nil) {
		t.Errorf("the serving record lacks the URL or the allowed hosts: %v", s[0])
	}
	calls := msgs["tool call"]
	if len(calls) != 2 {
		t.Fatalf("%d tool call records, want 2", len(calls))
	}
	for i, want := range []struct {
		outcome string
		status  float64
	}{{"ok", 200}, {"tool_error", 404}} {
		c := calls[i]
		if c["tool"] != "getPet" || c["outcome"] != want.outcome || c["upstream_status"] != want.status || c["duration"] == nil || c["caller"] == nil {
			t.Errorf("tool call record %d: %v", i, c)
		}
	}
	if strings.Contains(g.Log.String(), "demo-token") || strings.Contains(g.Log.String(), "987654") {
		t.Error("a credential or an argument was logged")
	}

	code, stderr := runToExit(t, nil, "serve", "--log-format", "json", "--spec", "/nonexistent/openapi.yaml", "--upstream", "https://api.example.com")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("a line of a failed start is not JSON: %q", l)
		}
	}
	var rec map[string]any
	if code == 0 || json.Unmarshal([]byte(lines[len(lines)-1]), &rec) != nil || rec["level"] != "ERROR" || !strings.Contains(rec["msg"].(string), "openapi.yaml") {
		t.Errorf("a startup failure with JSON logs: exit %d, %q", code, stderr)
	}
}
