// Package mcptest is a tiny MCP 2026-07-28 client for the bench servers'
// tests: it POSTs one stateless tools/call with the required headers and
// _meta and decodes the JSON or SSE reply. It is test support only and
// holds no state.
package mcptest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"
)

// Result is the part of a CallToolResult the tests look at.
type Result struct {
	ResultType        string          `json:"resultType"`
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Content           []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// CallTool calls tool with args (a JSON object) at the MCP endpoint url and
// returns the result, failing the test on any transport or JSON-RPC error.
func CallTool(t testing.TB, url, tool, args string, header http.Header) Result {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":%s,`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, tool, args)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read reply: %v", err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d: %s", res.StatusCode, raw)
	}
	msg := raw
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "text/event-stream" {
		msg = nil
		sc := bufio.NewScanner(bytes.NewReader(raw))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok && strings.Contains(d, `"id":7`) {
				msg = []byte(strings.TrimSpace(d))
			}
		}
		if msg == nil {
			t.Fatalf("no response in event stream %s", raw)
		}
	}
	var rpc struct {
		ID     int             `json:"id"`
		Result *Result         `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(msg, &rpc); err != nil || rpc.ID != 7 || rpc.Result == nil {
		t.Fatalf("not a JSON-RPC result for id 7: %s (%v)", msg, err)
	}
	return *rpc.Result
}
