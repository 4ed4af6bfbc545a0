package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/demo"
)

// TestConfirmedNumberIsSentNumber is issue 13 item 3 through the real MCP
// HTTP handler: deletePet (petId: integer, format int64, minimum 1) is
// confirmed by the user for one spelling of petId and submitted with
// another, with the sealed requestState of the question. For each pair the
// call reaches the upstream exactly when the request it sends is
// byte-for-byte the one the confirmed spelling sends.
func TestConfirmedNumberIsSentNumber(t *testing.T) {
	var mu sync.Mutex
	var got []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.RequestURI+"\n"+string(body))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(upstream.Close)
	spec := filepath.Join(t.TempDir(), "demo.json")
	if err := os.WriteFile(spec, demo.OpenAPI(), 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), Config{Spec: spec, Upstream: upstream.URL, Store: "memory"}, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	h := g.Handler()
	post := func(params string) map[string]json.RawMessage {
		t.Helper()
		req := toolCallRequest("deletePet", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		var msg map[string]json.RawMessage
		if err := json.Unmarshal(w.Body.Bytes(), &msg); err != nil {
			t.Fatalf("status %d: %v: %.300s", w.Code, err, w.Body.Bytes())
		}
		return msg
	}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	// confirmThenSubmit confirms deletePet for petId=confirmed and submits
	// petId=submitted; it returns the upstream request ("" if none).
	confirmThenSubmit := func(confirmed, submitted string) string {
		t.Helper()
		first := post(`{"name":"deletePet","arguments":{"petId":` + confirmed + `},` + meta + `}`)
		var question struct {
			ResultType   string `json:"resultType"`
			RequestState string `json:"requestState"`
		}
		if err := json.Unmarshal(first["result"], &question); err != nil {
			t.Fatalf("petId %s: %s %s", confirmed, first["result"], first["error"])
		}
		if question.ResultType != "input_required" || question.RequestState == "" {
			// Arguments the proxy refuses are not asked about: the call
			// is refused at once and nothing is sent.
			if !bytes.Contains(first["result"], []byte("Invalid arguments")) {
				t.Fatalf("petId %s: neither a question nor a refusal: %s %s", confirmed, first["result"], first["error"])
			}
			return ""
		}
		mu.Lock()
		got = nil
		mu.Unlock()
		state, _ := json.Marshal(question.RequestState)
		post(`{"name":"deletePet","arguments":{"petId":` + submitted + `},"requestState":` + string(state) +
			`,"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},` + meta + `}`)
		mu.Lock()
		defer mu.Unlock()
		switch len(got) {
		case 0:
			return ""
		case 1:
			return got[0]
		}
		t.Fatalf("confirmed %s, submitted %s: %d upstream requests", confirmed, submitted, len(got))
		return ""
	}
	spellings := []string{
		"28", "28.0", "2.8e1", "280E-1", "28.5", "28.000000000000000000001",
		"9007199254740992", "9007199254740993", "9007199254740992.0", "9.007199254740993e15",
		"1234567890123456789", "1.234567890123456789e18", "1234567890123456788",
		"9223372036854775807", "9223372036854775808", "-0", "0.0", "-5", "1e400", "1" + strings.Repeat("0", 800),
	}
	sent := map[string]string{} // spelling → the request it sends once confirmed; "" refused
	for _, s := range spellings {
		sent[s] = confirmThenSubmit(s, s)
	}
	for _, want := range []struct{ spelling, request string }{
		{"28", "DELETE /pets/28\n"},
		{"2.8e1", "DELETE /pets/28\n"},
		{"9007199254740993", "DELETE /pets/9007199254740993\n"},
		{"1.234567890123456789e18", "DELETE /pets/1234567890123456789\n"},
		{"28.5", ""}, {"9223372036854775808", ""}, {"-0", ""}, {"1e400", ""},
	} {
		if sent[want.spelling] != want.request {
			t.Errorf("petId %s sent %q, want %q", want.spelling, sent[want.spelling], want.request)
		}
	}
	for _, a := range spellings {
		for _, b := range spellings {
			if a == b {
				continue
			}
			r := confirmThenSubmit(a, b)
			identical := sent[a] != "" && sent[a] == sent[b]
			if (r != "") != identical || r != "" && r != sent[a] {
				t.Errorf("confirmed %s, submitted %s: sent %q; the confirmed request is %q", a, b, r, sent[a])
			}
		}
	}
	if !bytes.Contains([]byte(sent["9007199254740992.0"]), []byte("/pets/9007199254740992\n")) {
		t.Errorf("9007199254740992.0 sent %q", sent["9007199254740992.0"])
	}
}

// toolCallRequest is an HTTP tools/call of tool with the demo's bearer.
func toolCallRequest(tool string, body []byte) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	req.Header.Set("Authorization", "Bearer demo-token")
	return req
}
