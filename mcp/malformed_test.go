package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/mcp"
)

// admissionFixture is a server with one of everything the malformed table
// needs: a plain tool, a tool with x-mcp-header arguments, a tool that
// pauses for input, a prompt with a required argument, a resource and a
// resource template. It has no completion handler, so completion/complete is
// a capability-gated method it does not advertise.
func admissionFixture(t testing.TB) *mcp.Server {
	t.Helper()
	s := mcp.NewServer(mcp.Implementation{Name: "admission", Version: "1"}, nil)
	must(t, mcp.AddTool(s, &mcp.Tool{Name: "echo"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Text string `json:"text,omitempty"`
		}) (*mcp.CallToolResult, error) {
			return mcp.TextResult("echo: " + in.Text), nil
		}))
	must(t, s.AddTool(&mcp.Tool{Name: "regional", InputSchema: json.RawMessage(`{
		"type":"object",
		"properties":{
			"region":{"type":"string","x-mcp-header":"Region"},
			"count":{"type":"integer","x-mcp-header":"Count"},
			"query":{"type":"string"}
		}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.TextResult("ok"), nil
		}))
	must(t, mcp.AddTool(s, &mcp.Tool{Name: "ask"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
			if ans, ok := req.Elicitation("q"); ok {
				return mcp.TextResult("answer: " + ans.Action), nil
			}
			return nil, mcp.RequireInput(map[string]mcp.InputRequest{
				"q": mcp.ElicitForm("Why?", json.RawMessage(`{"type":"object","properties":{}}`)),
			}, nil)
		}))
	must(t, s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []mcp.PromptArgument{{Name: "who", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("Hello " + req.Arguments["who"])}}}, nil
		}))
	must(t, s.AddResource(&mcp.Resource{URI: "test://a", Name: "a"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: req.URI, Text: "A"}}}, nil
		}))
	must(t, s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///tmp/{name}", Name: "tmp"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: req.URI, Text: req.Vars["name"]}}}, nil
		}))
	return s
}

const (
	metaOK      = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	metaElicit  = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	metaVersion = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
	metaCaps    = `"io.modelcontextprotocol/clientCapabilities":{}`
)

// rpc builds a request with id 7; members are extra params members (a JSON
// fragment without braces); _meta is added unless members already has one.
func rpc(method, members string) string {
	if !strings.Contains(members, `"_meta"`) {
		if members != "" {
			members += ","
		}
		members += metaOK
	}
	return `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":{` + members + `}}`
}

// malformedCase is one HTTP exchange with the admission path. The request
// carries Content-Type: application/json, Accept for JSON and SSE, and
// MCP-Protocol-Version: 2026-07-28, plus Mcp-Method and Mcp-Name from hm and
// hn when set; hdr adds or overrides headers ("" deletes one).
type malformedCase struct {
	name   string
	verb   string // HTTP method, POST when empty
	body   string
	hm, hn string
	hdr    map[string]string
	host   string

	status int
	code   int    // expected JSON-RPC error code; 0 expects a result
	id     string // expected raw id of the response; "" expects no id member
	check  func(t *testing.T, resp map[string]json.RawMessage)
}

func hdr(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func malformedCases() []malformedCase {
	const tc = "tools/call"
	echo := func(members string) string { return rpc(tc, `"name":"echo"`+members) }
	regional := func(args string) string { return rpc(tc, `"name":"regional","arguments":`+args) }
	return []malformedCase{
		// Framing: JSON, batches, message shape. The id is unreadable, so
		// the error omits it.
		{name: "invalid JSON", body: `{"jsonrpc":"2.0","id":7,`, status: 400, code: mcp.CodeParseError},
		{name: "invalid JSON scalar", body: `nul`, status: 400, code: mcp.CodeParseError},
		{name: "two messages in one body", body: rpc("tools/list", "") + rpc("tools/list", ""), hm: "tools/list", status: 400, code: mcp.CodeParseError},
		{name: "empty body", body: ``, status: 400, code: mcp.CodeInvalidRequest},
		{name: "whitespace body", body: " \n\t ", status: 400, code: mcp.CodeInvalidRequest},
		{name: "batch", body: `[` + rpc("tools/list", "") + `]`, hm: "tools/list", status: 400, code: mcp.CodeInvalidRequest},
		{name: "empty batch", body: `[]`, status: 400, code: mcp.CodeInvalidRequest},
		{name: "string message", body: `"tools/list"`, status: 400, code: mcp.CodeInvalidRequest},
		{name: "number message", body: `42`, status: 400, code: mcp.CodeInvalidRequest},
		{name: "null message", body: `null`, status: 400, code: mcp.CodeInvalidRequest},

		// Envelope: the id is readable and echoed.
		{name: "jsonrpc missing", body: `{"id":7,"method":"tools/list","params":{` + metaOK + `}}`, hm: "tools/list", status: 400, code: mcp.CodeInvalidRequest, id: "7"},
		{name: "jsonrpc 1.0", body: `{"jsonrpc":"1.0","id":7,"method":"tools/list","params":{` + metaOK + `}}`, hm: "tools/list", status: 400, code: mcp.CodeInvalidRequest, id: "7"},
		{name: "jsonrpc number", body: `{"jsonrpc":2.0,"id":"s-1","method":"tools/list","params":{` + metaOK + `}}`, hm: "tools/list", status: 400, code: mcp.CodeInvalidRequest, id: `"s-1"`},
		{name: "method missing", body: `{"jsonrpc":"2.0","id":7,"params":{` + metaOK + `}}`, status: 400, code: mcp.CodeInvalidRequest, id: "7"},
		{name: "method number", body: `{"jsonrpc":"2.0","id":7,"method":5,"params":{` + metaOK + `}}`, status: 400, code: mcp.CodeInvalidRequest, id: "7"},
		{name: "method empty", body: `{"jsonrpc":"2.0","id":7,"method":"","params":{` + metaOK + `}}`, status: 400, code: mcp.CodeInvalidRequest, id: "7"},
		{name: "response posted by client", body: `{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete"}}`, status: 400, code: mcp.CodeInvalidRequest, id: "7"},
		{name: "error response posted by client", body: `{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m"}}`, status: 400, code: mcp.CodeInvalidRequest, id: `"x"`},

		// Ids that are not a string or an integer are unreadable.
		{name: "id null", body: `{"jsonrpc":"2.0","id":null,"method":"tools/list","params":{` + metaOK + `}}`, hm: "tools/list", status: 400, code: mcp.CodeInvalidRequest},
		{name: "id bool", body: `{"jsonrpc":"2.0","id":true,"method":"tools/list","params":{` + metaOK + `}}`, hm: "tools/list", status: 400, code: mcp.CodeInvalidRequest},
		{name: "id float", body: `{"jsonrpc":"2.0","id":1.5,"method":"tools/list","params":{` + metaOK + `}}`, hm: "tools/list", status: 400, code: mcp.CodeInvalidRequest},
		{name: "id object", body: `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list","params":{` + metaOK + `}}`, hm: "tools/list", status: 400, code: mcp.CodeInvalidRequest},
		{name: "id array", body: `{"jsonrpc":"2.0","id":[1],"method":"tools/list","params":{` + metaOK + `}}`, hm: "tools/list", status: 400, code: mcp.CodeInvalidRequest},
		{name: "id beyond int64", body: `{"jsonrpc":"2.0","id":100000000000000000000000,"method":"tools/list","params":{` + metaOK + `}}`, hm: "tools/list", status: 400, code: mcp.CodeInvalidRequest},

		// params and _meta: -32602 with HTTP 400.
		{name: "params array", body: `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":[1]}`, hm: "tools/list", status: 400, code: mcp.CodeInvalidParams, id: "7"},
		{name: "params string", body: `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":"x"}`, hm: "tools/list", status: 400, code: mcp.CodeInvalidParams, id: "7"},
		{name: "params missing", body: `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, hm: "tools/list", status: 400, code: mcp.CodeInvalidParams, id: "7"},
		{name: "_meta missing", body: `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`, hm: "tools/list", status: 400, code: mcp.CodeInvalidParams, id: "7"},
		{name: "_meta null", body: rpc("tools/list", `"_meta":null`), hm: "tools/list", status: 400, code: mcp.CodeInvalidParams, id: "7"},
		{name: "_meta not an object", body: rpc("tools/list", `"_meta":"2026-07-28"`), hm: "tools/list", status: 400, code: mcp.CodeInvalidParams, id: "7"},
		{name: "_meta missing with ill-typed name", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":5}}`, hm: "tools/call", hn: "5", status: 400, code: mcp.CodeInvalidParams, id: "7"},
		{name: "protocolVersion missing", body: rpc("tools/list", `"_meta":{`+metaCaps+`}`), hm: "tools/list", status: 400, code: mcp.CodeInvalidParams, id: "7"},
		{name: "protocolVersion number", body: rpc("tools/list", `"_meta":{"io.modelcontextprotocol/protocolVersion":20260728,`+metaCaps+`}`), hm: "tools/list", status: 400, code: mcp.CodeInvalidParams, id: "7"},
		{name: "clientCapabilities missing", body: rpc("tools/list", `"_meta":{`+metaVersion+`}`), hm: "tools/list", status: 400, code: mcp.CodeInvalidParams, id: "7"},
		{name: "clientCapabilities array", body: rpc("tools/list", `"_meta":{`+metaVersion+`,"io.modelcontextprotocol/clientCapabilities":[]}`), hm: "tools/list", status: 400, code: mcp.CodeInvalidParams, id: "7"},
		{name: "clientCapabilities null", body: rpc("tools/list", `"_meta":{`+metaVersion+`,"io.modelcontextprotocol/clientCapabilities":null}`), hm: "tools/list", status: 400, code: mcp.CodeInvalidParams, id: "7"},

		// Versions and the version header.
		{name: "unsupported version", body: rpc("tools/list", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01",`+metaCaps+`}`), hm: "tools/list",
			hdr: hdr("MCP-Protocol-Version", "2099-01-01"), status: 400, code: mcp.CodeUnsupportedProtocolVersion, id: "7",
			check: wantData(`{"requested":"2099-01-01","supported":["2026-07-28"]}`)},
		{name: "legacy version in _meta", body: rpc("server/discover", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25",`+metaCaps+`}`), hm: "server/discover",
			hdr: hdr("MCP-Protocol-Version", "2025-11-25"), status: 400, code: mcp.CodeUnsupportedProtocolVersion, id: "7",
			check: wantData(`{"requested":"2025-11-25","supported":["2026-07-28"]}`)},
		{name: "header version != body version", body: rpc("tools/list", `"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0",`+metaCaps+`}`), hm: "tools/list", status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "header version != body version with ill-typed name", body: rpc("tools/call", `"name":5,"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0",`+metaCaps+`}`), hm: "tools/call", hn: "5", status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "version header missing", body: rpc("tools/list", ""), hm: "tools/list", hdr: hdr("MCP-Protocol-Version", ""), status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "version header with trailing whitespace", body: rpc("tools/list", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",`+metaCaps+`}`), hm: "tools/list",
			hdr: hdr("MCP-Protocol-Version", "2026-07-28 "), status: 200}, // trailing whitespace is trimmed by net/http: accepted

		// Mcp-Method.
		{name: "Mcp-Method missing", body: rpc("tools/list", ""), status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "Mcp-Method mismatched", body: rpc("tools/list", ""), hm: "prompts/list", status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "Mcp-Method case differs", body: rpc("tools/list", ""), hm: "TOOLS/LIST", status: 400, code: mcp.CodeHeaderMismatch, id: "7"},

		// Mcp-Name on the three methods that carry it.
		{name: "Mcp-Name missing tools/call", body: echo(""), hm: tc, status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "Mcp-Name mismatched tools/call", body: echo(""), hm: tc, hn: "regional", status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "Mcp-Name case differs", body: echo(""), hm: tc, hn: "ECHO", status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "Mcp-Name base64 accepted", body: echo(""), hm: tc, hn: "=?base64?ZWNobw==?=", status: 200},
		{name: "Mcp-Name base64 mismatched", body: echo(""), hm: tc, hn: "=?base64?ZWNobzI=?=", status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "Mcp-Name base64 invalid", body: echo(""), hm: tc, hn: "=?base64?!!!?=", status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "Mcp-Name base64 unpadded", body: echo(""), hm: tc, hn: "=?base64?ZWNobw?=", status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "tools/call without params.name", body: rpc(tc, ""), hm: tc, hn: "echo", status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "Mcp-Name missing prompts/get", body: rpc("prompts/get", `"name":"greet","arguments":{"who":"x"}`), hm: "prompts/get", status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "Mcp-Name mismatched prompts/get", body: rpc("prompts/get", `"name":"greet","arguments":{"who":"x"}`), hm: "prompts/get", hn: "gree", status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "Mcp-Name missing resources/read", body: rpc("resources/read", `"uri":"test://a"`), hm: "resources/read", status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "Mcp-Name mismatched resources/read", body: rpc("resources/read", `"uri":"test://a"`), hm: "resources/read", hn: "test://b", status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "Mcp-Name base64 URI accepted", body: rpc("resources/read", `"uri":"file:///tmp/ü.txt"`), hm: "resources/read", hn: "=?base64?ZmlsZTovLy90bXAvw7wudHh0?=", status: 200},
		{name: "Mcp-Name base64 URI invalid", body: rpc("resources/read", `"uri":"file:///tmp/ü.txt"`), hm: "resources/read", hn: "=?base64?ZmlsZTovLy90bXAvw7wudHh0=?=", status: 400, code: mcp.CodeHeaderMismatch, id: "7"},

		// Mcp-Param-* for x-mcp-header arguments.
		{name: "Mcp-Param missing", body: regional(`{"region":"us-west1"}`), hm: tc, hn: "regional", status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "Mcp-Param mismatched", body: regional(`{"region":"us-west1"}`), hm: tc, hn: "regional", hdr: hdr("Mcp-Param-Region", "eu-west1"), status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "Mcp-Param bad base64", body: regional(`{"region":"us-west1"}`), hm: tc, hn: "regional", hdr: hdr("Mcp-Param-Region", "=?base64?***?="), status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "Mcp-Param base64 accepted", body: regional(`{"region":"Hello, 世界"}`), hm: tc, hn: "regional", hdr: hdr("Mcp-Param-Region", "=?base64?SGVsbG8sIOS4lueVjA==?="), status: 200},
		{name: "Mcp-Param header name case-insensitive", body: regional(`{"region":"us-west1"}`), hm: tc, hn: "regional", hdr: hdr("mcp-param-region", "us-west1"), status: 200},
		{name: "Mcp-Param integer compared numerically", body: regional(`{"count":42}`), hm: tc, hn: "regional", hdr: hdr("Mcp-Param-Count", "42.0"), status: 200},
		{name: "Mcp-Param integer mismatched", body: regional(`{"count":42}`), hm: tc, hn: "regional", hdr: hdr("Mcp-Param-Count", "43"), status: 400, code: mcp.CodeHeaderMismatch, id: "7"},
		{name: "Mcp-Param not expected for null argument", body: regional(`{"region":null,"query":"q"}`), hm: tc, hn: "regional", status: 200},

		// Methods: unknown, removed, capability-gated. 404 + -32601.
		{name: "unknown method", body: rpc("tools/frobnicate", ""), hm: "tools/frobnicate", status: 404, code: mcp.CodeMethodNotFound, id: "7"},
		{name: "removed initialize", body: rpc("initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}`), hm: "initialize", status: 404, code: mcp.CodeMethodNotFound, id: "7"},
		{name: "removed ping", body: rpc("ping", ""), hm: "ping", status: 404, code: mcp.CodeMethodNotFound, id: "7"},
		{name: "removed logging/setLevel", body: rpc("logging/setLevel", `"level":"info"`), hm: "logging/setLevel", status: 404, code: mcp.CodeMethodNotFound, id: "7"},
		{name: "removed resources/subscribe", body: rpc("resources/subscribe", `"uri":"test://a"`), hm: "resources/subscribe", status: 404, code: mcp.CodeMethodNotFound, id: "7"},
		{name: "removed resources/unsubscribe", body: rpc("resources/unsubscribe", `"uri":"test://a"`), hm: "resources/unsubscribe", status: 404, code: mcp.CodeMethodNotFound, id: "7"},
		{name: "unknown method with ill-typed params", body: rpc("tools/frobnicate", `"cursor":5`), hm: "tools/frobnicate", status: 404, code: mcp.CodeMethodNotFound, id: "7"},
		{name: "unadvertised completion/complete", body: rpc("completion/complete", `"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"a"}`), hm: "completion/complete", status: 404, code: mcp.CodeMethodNotFound, id: "7"},

		// Method-level params errors: -32602 under HTTP 200.
		{name: "unknown tool", body: rpc(tc, `"name":"nope"`), hm: tc, hn: "nope", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "arguments array", body: echo(`,"arguments":[1]`), hm: tc, hn: "echo", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "arguments string", body: echo(`,"arguments":"text"`), hm: tc, hn: "echo", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "name not a string", body: rpc(tc, `"name":5`), hm: tc, hn: "5", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "bad logLevel", body: echo(`,"_meta":{` + metaVersion + `,` + metaCaps + `,"io.modelcontextprotocol/logLevel":"loud"}`), hm: tc, hn: "echo", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "progressToken bool", body: echo(`,"_meta":{` + metaVersion + `,` + metaCaps + `,"progressToken":true}`), hm: tc, hn: "echo", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "progressToken float", body: echo(`,"_meta":{` + metaVersion + `,` + metaCaps + `,"progressToken":1.5}`), hm: tc, hn: "echo", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "bad cursor", body: rpc("tools/list", `"cursor":"!!not-a-cursor"`), hm: "tools/list", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "cursor of unknown item", body: rpc("tools/list", `"cursor":"bm9wZQ"`), hm: "tools/list", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "cursor not a string", body: rpc("tools/list", `"cursor":5`), hm: "tools/list", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "prompt missing required argument", body: rpc("prompts/get", `"name":"greet","arguments":{}`), hm: "prompts/get", hn: "greet", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "prompt arguments not strings", body: rpc("prompts/get", `"name":"greet","arguments":{"who":1}`), hm: "prompts/get", hn: "greet", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "unknown prompt", body: rpc("prompts/get", `"name":"nope"`), hm: "prompts/get", hn: "nope", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "unknown resource", body: rpc("resources/read", `"uri":"test://missing"`), hm: "resources/read", hn: "test://missing", status: 200, code: mcp.CodeInvalidParams, id: "7",
			check: wantData(`{"uri":"test://missing"}`)},
		{name: "tampered requestState", body: rpc(tc, `"name":"ask","requestState":"AAAAtampered",`+metaElicit), hm: tc, hn: "ask", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "inputResponses number", body: rpc(tc, `"name":"ask","inputResponses":12345,`+metaElicit), hm: tc, hn: "ask", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "inputResponses entry a number", body: rpc(tc, `"name":"ask","inputResponses":{"q":12345},`+metaElicit), hm: tc, hn: "ask", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "inputResponses array", body: rpc(tc, `"name":"ask","inputResponses":[{}],`+metaElicit), hm: tc, hn: "ask", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "inputResponses null asks again", body: rpc(tc, `"name":"ask","inputResponses":null,`+metaElicit), hm: tc, hn: "ask", status: 200,
			check: wantResultType(mcp.ResultInputRequired)},
		{name: "elicitation capability missing", body: rpc(tc, `"name":"ask"`), hm: tc, hn: "ask", status: 400, code: mcp.CodeMissingRequiredClientCapability, id: "7",
			check: wantData(`{"requiredCapabilities":{"elicitation":{}}}`)},
		{name: "listen without filter", body: rpc("subscriptions/listen", ""), hm: "subscriptions/listen", status: 200, code: mcp.CodeInvalidParams, id: "7"},
		{name: "listen taskIds without tasks extension", body: rpc("subscriptions/listen", `"notifications":{"taskIds":["t1"]}`), hm: "subscriptions/listen", status: 400, code: mcp.CodeMissingRequiredClientCapability, id: "7"},

		// HTTP layer: content type, verbs, size, Host and Origin.
		{name: "Content-Type text/plain", body: rpc("tools/list", ""), hm: "tools/list", hdr: hdr("Content-Type", "text/plain"), status: 415, code: mcp.CodeInvalidRequest},
		{name: "Content-Type missing", body: rpc("tools/list", ""), hm: "tools/list", hdr: hdr("Content-Type", ""), status: 415, code: mcp.CodeInvalidRequest},
		{name: "Content-Type unparsable", body: rpc("tools/list", ""), hm: "tools/list", hdr: hdr("Content-Type", "application/json; ===="), status: 415, code: mcp.CodeInvalidRequest},
		{name: "Content-Type with charset accepted", body: rpc("tools/list", ""), hm: "tools/list", hdr: hdr("Content-Type", "application/json; charset=utf-8"), status: 200},
		{name: "GET", verb: "GET", status: 405, code: mcp.CodeInvalidRequest, check: wantAllow},
		{name: "DELETE", verb: "DELETE", status: 405, code: mcp.CodeInvalidRequest, check: wantAllow},
		{name: "PUT", verb: "PUT", body: rpc("tools/list", ""), hm: "tools/list", status: 405, code: mcp.CodeInvalidRequest, check: wantAllow},
		{name: "body over the limit", body: rpc(tc, `"name":"echo","arguments":{"text":"`+strings.Repeat("x", 4<<20)+`"}`), hm: tc, hn: "echo", status: 413, code: mcp.CodeInvalidRequest},
		{name: "Host not allowed", body: rpc("tools/list", ""), hm: "tools/list", host: "evil.example", status: 403, code: mcp.CodeInvalidRequest},
		{name: "Host localhost with port allowed", body: rpc("tools/list", ""), hm: "tools/list", host: "localhost:8080", status: 200},
		{name: "Origin not allowed", body: rpc("tools/list", ""), hm: "tools/list", hdr: hdr("Origin", "http://evil.example"), status: 403, code: mcp.CodeInvalidRequest},
		{name: "Origin null", body: rpc("tools/list", ""), hm: "tools/list", hdr: hdr("Origin", "null"), status: 403, code: mcp.CodeInvalidRequest},
		{name: "Origin localhost allowed", body: rpc("tools/list", ""), hm: "tools/list", hdr: hdr("Origin", "http://localhost:5173"), status: 200},

		// Notifications are accepted with 202 and no body.
		{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`, status: 202},
	}
}

func wantData(want string) func(t *testing.T, resp map[string]json.RawMessage) {
	return func(t *testing.T, resp map[string]json.RawMessage) {
		t.Helper()
		var e struct{ Data json.RawMessage }
		if err := json.Unmarshal(resp["error"], &e); err != nil {
			t.Fatal(err)
		}
		if !jsonEqual(e.Data, []byte(want)) {
			t.Errorf("error.data = %s, want %s", e.Data, want)
		}
	}
}

func wantResultType(rt string) func(t *testing.T, resp map[string]json.RawMessage) {
	return func(t *testing.T, resp map[string]json.RawMessage) {
		t.Helper()
		var r struct{ ResultType string }
		if err := json.Unmarshal(resp["result"], &r); err != nil || r.ResultType != rt {
			t.Errorf("resultType = %q (%v), want %q", r.ResultType, err, rt)
		}
	}
}

// wantAllow is checked on the raw response by runMalformed (it needs the
// headers); this marker only documents it in the table.
func wantAllow(t *testing.T, resp map[string]json.RawMessage) {}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func TestMalformedRequests(t *testing.T) {
	ts := httptest.NewServer(mcp.NewHTTPHandler(admissionFixture(t), nil))
	defer ts.Close()
	client := ts.Client()
	cases := malformedCases()
	errorRows := 0
	for _, tc := range cases {
		if tc.code != 0 {
			errorRows++
		}
	}
	if errorRows < 40 {
		t.Fatalf("only %d error rows", errorRows)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runMalformed(t, client, ts.URL, tc)
		})
	}
	// The server keeps serving after all of that.
	ok := malformedCase{name: "valid", body: rpc("tools/call", `"name":"echo","arguments":{"text":"still here"}`), hm: "tools/call", hn: "echo", status: 200,
		check: func(t *testing.T, resp map[string]json.RawMessage) {
			if !strings.Contains(string(resp["result"]), `"text":"echo: still here"`) {
				t.Errorf("result = %s", resp["result"])
			}
		}}
	runMalformed(t, client, ts.URL, ok)
}

func runMalformed(t *testing.T, client *http.Client, url string, tc malformedCase) {
	t.Helper()
	verb := tc.verb
	if verb == "" {
		verb = http.MethodPost
	}
	req, err := http.NewRequest(verb, url, strings.NewReader(tc.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion)
	if tc.hm != "" {
		req.Header.Set(mcp.HeaderMethod, tc.hm)
	}
	if tc.hn != "" {
		req.Header.Set(mcp.HeaderName, tc.hn)
	}
	for k, v := range tc.hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	if tc.host != "" {
		req.Host = tc.host
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != tc.status {
		t.Errorf("status = %d, want %d (body %s)", resp.StatusCode, tc.status, body)
	}
	if tc.status == http.StatusMethodNotAllowed && resp.Header.Get("Allow") != http.MethodPost {
		t.Errorf("Allow = %q, want POST", resp.Header.Get("Allow"))
	}
	if tc.status == http.StatusAccepted {
		if len(body) != 0 {
			t.Errorf("202 with body %q", body)
		}
		return
	}
	// Every other answer is one JSON-RPC message with a JSON content type,
	// so a dual-era client can classify it.
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("body is not a JSON object: %v: %q", err, body)
	}
	if string(msg["jsonrpc"]) != `"2.0"` {
		t.Errorf("jsonrpc = %s", msg["jsonrpc"])
	}
	if tc.code == 0 {
		if msg["error"] != nil || msg["result"] == nil {
			t.Errorf("want a result, got %s", body)
		}
	} else {
		var e struct {
			Code    *int    `json:"code"`
			Message *string `json:"message"`
		}
		if err := json.Unmarshal(msg["error"], &e); err != nil || e.Code == nil || e.Message == nil || *e.Message == "" {
			t.Fatalf("no well-formed error object in %s", body)
		}
		if *e.Code != tc.code {
			t.Errorf("code = %d, want %d (%s)", *e.Code, tc.code, *e.Message)
		}
		if msg["result"] != nil {
			t.Errorf("both result and error in %s", body)
		}
		id, hasID := msg["id"]
		switch {
		case tc.id == "" && hasID:
			t.Errorf("id = %s, want none (the request id was unreadable)", id)
		case tc.id != "" && string(id) != tc.id:
			t.Errorf("id = %s, want %s", id, tc.id)
		}
	}
	if tc.check != nil {
		tc.check(t, msg)
	}
}
