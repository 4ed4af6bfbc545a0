package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Run briefly in CI:
//
//	go test -run '^$' -fuzz FuzzDecodeMessage -fuzztime 15s ./mcp/
//	go test -run '^$' -fuzz FuzzServeHTTP -fuzztime 15s ./mcp/

const fuzzMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

var fuzzSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + fuzzMeta + `}}`,
	`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},` + fuzzMeta + `}}`,
	`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"test://a",` + fuzzMeta + `}}`,
	`{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + fuzzMeta + `}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
	`{"jsonrpc":"2.0","id":7,"result":{}}`,
	`{"jsonrpc":"2.0","id":null,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"x"}`,
	`{"jsonrpc":"1.0","id":1,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":"s"}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"x"}]`,
	`{"jsonrpc":"2.0",`,
	`"x"`,
	``,
	`{"id":99999999999999999999}`,
	"{\"jsonrpc\":\"2.0\",\"id\":\"\\ud800\",\"method\":\"\\u0000\"}",
}

func FuzzDecodeMessage(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		msg, id, jerr := decodeMessage(b)
		if jerr != nil {
			if msg != nil {
				t.Fatalf("both a message and an error")
			}
			if id != nil && checkID(id) != nil {
				t.Fatalf("error echoes an invalid id %q", id)
			}
			out := appendError(nil, id, jerr)
			if !json.Valid(out) {
				t.Fatalf("error response is not JSON: %s", out)
			}
			if s := jerr.HTTPStatus(); s != http.StatusBadRequest {
				t.Fatalf("decode error with HTTP status %d", s)
			}
			return
		}
		if msg != nil && msg.response {
			// A response to a server-to-client request (legacy sessions):
			// an id, and exactly one of result and error.
			if msg.id == nil || checkID(msg.id) != nil || (msg.result == nil) == (msg.errObj == nil) {
				t.Fatalf("accepted a malformed response: %+v", msg)
			}
			return
		}
		if msg == nil || msg.method == "" {
			t.Fatalf("accepted a message without a method: %+v", msg)
		}
		if !bytes.Equal(msg.id, id) {
			t.Fatalf("id %q vs %q", msg.id, id)
		}
		if msg.params != nil && (msg.params[0] != '{' || !json.Valid(msg.params)) {
			t.Fatalf("params not an object: %q", msg.params)
		}
		if msg.isNotification() {
			return
		}
		if checkID(msg.id) != nil {
			t.Fatalf("accepted id %q", msg.id)
		}
		for _, out := range [][]byte{
			appendResponse(nil, msg.id, []byte(`{"resultType":"complete"}`)),
			appendError(nil, msg.id, ErrInvalidParams("x")),
		} {
			var resp struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal(out, &resp); err != nil {
				t.Fatalf("response is not JSON: %v: %s", err, out)
			}
			if resp.JSONRPC != "2.0" || !bytes.Equal(resp.ID, msg.id) {
				t.Fatalf("response %s does not echo id %s", out, msg.id)
			}
		}
		// Params decode (or fail) without panicking.
		if p, jerr := decodeParams(msg.params); jerr == nil && p == nil {
			t.Fatal("nil params without error")
		}
	})
}

func fuzzServer(t testing.TB) *Server {
	s := NewServer(Implementation{Name: "fuzz", Version: "1"}, &ServerOptions{PageSize: 2})
	for _, name := range []string{"echo", "b", "c"} {
		if err := AddTool(s, &Tool{Name: name}, func(ctx context.Context, req *CallToolRequest, in struct {
			Text   string `json:"text,omitempty"`
			Region string `json:"region,omitempty"`
		}) (*CallToolResult, error) {
			_ = req.Progress(1, 2, "half")
			_ = req.Log(LevelInfo, "fuzz", "hello")
			return TextResult(in.Text), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddTool(&Tool{Name: "regional", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
		func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			return nil, RequireInput(map[string]InputRequest{"q": ElicitForm("?", nil)}, map[string]int{"n": 1})
		}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddResource(&Resource{URI: "test://a", Name: "a"}, func(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []ResourceContents{{URI: req.URI, Text: "a"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	// A closed server ends every subscriptions/listen right after its
	// acknowledgement, so a fuzzed listen request cannot block.
	s.Close()
	return s
}

func FuzzServeHTTP(f *testing.F) {
	for _, s := range fuzzSeeds {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"params"`
		}
		_ = json.Unmarshal([]byte(s), &m)
		f.Add(s, ProtocolVersion, m.Method, m.Params.Name+m.Params.URI, "")
	}
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"regional","arguments":{"region":"eu"},`+fuzzMeta+`}}`, ProtocolVersion, "tools/call", "regional", "eu")
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"progressToken":"p","io.modelcontextprotocol/logLevel":"debug"}}}`, ProtocolVersion, "tools/call", "=?base64?ZWNobw==?=", "")
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"Yg",`+fuzzMeta+`}}`, ProtocolVersion, "tools/list", "", "")

	s := fuzzServer(f)
	h := NewHTTPHandler(s, &HTTPOptions{MaxBodyBytes: 1 << 16})
	f.Fuzz(func(t *testing.T, body, version, method, name, region string) {
		req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range map[string]string{HeaderProtocolVersion: version, HeaderMethod: method, HeaderName: name, "Mcp-Param-Region": region} {
			if v != "" && validHeaderValue(v) {
				req.Header.Set(k, v)
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		out := rec.Body.Bytes()
		switch rec.Code {
		case http.StatusAccepted:
			if len(out) != 0 {
				t.Fatalf("202 with a body: %q", out)
			}
			return
		case http.StatusOK, http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("unexpected status %d: %s", rec.Code, out)
		}
		var msgs [][]byte
		if ct := rec.Header().Get("Content-Type"); ct == "text/event-stream" {
			if rec.Code != http.StatusOK {
				t.Fatalf("SSE with status %d", rec.Code)
			}
			for _, ev := range strings.Split(strings.TrimSpace(string(out)), "\n\n") {
				data, ok := strings.CutPrefix(ev, "data: ")
				if !ok || strings.Contains(data, "\n") {
					t.Fatalf("bad SSE event %q", ev)
				}
				msgs = append(msgs, []byte(data))
			}
		} else if ct == "application/json" {
			msgs = [][]byte{out}
		} else {
			t.Fatalf("Content-Type %q", ct)
		}
		for i, m := range msgs {
			var env struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Method  string          `json:"method"`
				Result  json.RawMessage `json:"result"`
				Error   *Error          `json:"error"`
			}
			if err := json.Unmarshal(m, &env); err != nil || env.JSONRPC != "2.0" {
				t.Fatalf("message %d is not JSON-RPC: %v: %s", i, err, m)
			}
			last := i == len(msgs)-1
			switch {
			case !last && env.Method == "":
				t.Fatalf("non-final SSE message is not a notification: %s", m)
			case last && (env.Result == nil) == (env.Error == nil):
				t.Fatalf("final message is not a response: %s", m)
			case last && env.Result != nil:
				var r struct {
					ResultType string `json:"resultType"`
				}
				if json.Unmarshal(env.Result, &r) != nil || r.ResultType == "" {
					t.Fatalf("result without resultType: %s", m)
				}
			}
		}
	})
}

// validHeaderValue reports whether net/http would send v (the recorder path
// does not validate, so keep the inputs realistic).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return strings.TrimSpace(v) == v
}
