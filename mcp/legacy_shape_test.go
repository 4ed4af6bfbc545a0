package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// Legacy results used to be made by decoding each 2026-07-28 result into a
// map, deleting the modern members and encoding it again. They are now
// encoded in the 2025-11-25 shape directly (lists from cached pages). The
// old conversion is kept here as the reference: for every method a legacy
// session serves, the new result must be the same JSON as the old
// conversion of the modern result.

func refLegacyResult(method string, res []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(res, &m) != nil {
		return res
	}
	delete(m, "resultType")
	delete(m, "ttlMs")
	delete(m, "cacheScope")
	if raw, ok := m["_meta"]; ok {
		var meta map[string]json.RawMessage
		if json.Unmarshal(raw, &meta) == nil {
			delete(meta, MetaServerInfo)
			if len(meta) == 0 {
				delete(m, "_meta")
			} else {
				m["_meta"], _ = json.Marshal(meta)
			}
		}
	}
	switch method {
	case "tools/list":
		var tools []map[string]json.RawMessage
		if json.Unmarshal(m["tools"], &tools) == nil {
			for _, t := range tools {
				raw, ok := t["outputSchema"]
				if !ok {
					continue
				}
				if fixed, ok := objectRootedSchema(raw); !ok {
					delete(t, "outputSchema")
				} else if fixed != nil {
					t["outputSchema"] = fixed
				}
			}
			m["tools"], _ = json.Marshal(tools)
		}
	case "tools/call":
		if sc, ok := m["structuredContent"]; ok && (len(sc) == 0 || sc[0] != '{') {
			delete(m, "structuredContent")
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return res
	}
	return b
}

// shapeServer has a tool for each outputSchema and structuredContent case,
// a prompt, a resource and a completion handler.
func shapeServer(t *testing.T) *Server {
	t.Helper()
	s := NewServer(Implementation{Name: "shapes", Version: "1"}, &ServerOptions{PageSize: 2, ResourceTTL: 1000})
	object := `{"type":"object","properties":{"id":{"type":"integer"}}}`
	for _, tc := range []struct {
		name, schema string
		result       *CallToolResult
	}{
		{"object", object, &CallToolResult{Content: []Content{TextContent("{}")}, StructuredContent: json.RawMessage(`{"id": 1}`)}},
		{"ref_to_object", `{"$ref":"#/$defs/item","$defs":{"item":` + object + `}}`, &CallToolResult{Content: []Content{TextContent("x")}, StructuredContent: map[string]any{"id": 2}}},
		{"ref_to_array", `{"$ref":"#/$defs/list","$defs":{"list":{"type":"array"}}}`, &CallToolResult{Content: []Content{TextContent("[]")}, StructuredContent: json.RawMessage(`[1,2]`)}},
		{"array", `{"type":"array","items":` + object + `}`, &CallToolResult{Content: []Content{TextContent("[]")}, StructuredContent: []int{1}, IsError: true}},
		{"none", "", &CallToolResult{Content: []Content{TextContent("plain <b>")}, Meta: map[string]any{"k": "v", MetaServerInfo: "theirs"}}},
		{"scalar", `{"type":"string"}`, &CallToolResult{Content: []Content{TextContent("s")}, StructuredContent: "s", Meta: map[string]any{"trace": 1}}},
	} {
		res := tc.result
		must(t, s.AddTool(&Tool{Name: tc.name, Description: "case " + tc.name, OutputSchema: json.RawMessage(tc.schema)},
			func(context.Context, *CallToolRequest) (*CallToolResult, error) { return res, nil }))
	}
	must(t, s.AddPrompt(&Prompt{Name: "greet", Arguments: []PromptArgument{{Name: "who"}}}, func(ctx context.Context, r *GetPromptRequest) (*GetPromptResult, error) {
		return &GetPromptResult{Messages: []PromptMessage{{Role: "user", Content: TextContent("hi " + r.Arguments["who"])}}, Meta: map[string]any{"p": 1}}, nil
	}))
	must(t, s.AddResource(&Resource{URI: "test://a", Name: "a"}, func(ctx context.Context, r *ReadResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []ResourceContents{{URI: r.URI, Text: "A"}}}, nil
	}))
	must(t, s.AddResourceTemplate(&ResourceTemplate{URITemplate: "test://t/{x}", Name: "t"}, func(ctx context.Context, r *ReadResourceRequest) (*ReadResourceResult, error) {
		ttl := int64(5)
		return &ReadResourceResult{Contents: []ResourceContents{{URI: r.URI, Text: r.Vars["x"]}}, TTLMs: &ttl, Scope: CachePrivate}, nil
	}))
	s.SetCompletionHandler(func(ctx context.Context, r *CompleteRequest) (*Completion, error) {
		return &Completion{Values: []string{"ada", "alan"}}, nil
	})
	return s
}

func TestLegacyShapesMatchTheConversion(t *testing.T) {
	ts := httptest.NewServer(NewHTTPHandler(shapeServer(t), nil))
	defer ts.Close()
	c := &legacyClient{t: t, url: ts.URL}
	c.initialize()

	var cursors []string
	requests := []struct{ method, params string }{
		{"tools/list", `{}`},
		{"prompts/list", `{}`},
		{"resources/list", `{}`},
		{"resources/templates/list", `{}`},
		{"prompts/get", `{"name":"greet","arguments":{"who":"Ada"}}`},
		{"resources/read", `{"uri":"test://a"}`},
		{"resources/read", `{"uri":"test://t/42"}`},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"a"}}`},
	}
	for _, name := range []string{"object", "ref_to_object", "ref_to_array", "array", "none", "scalar"} {
		requests = append(requests, struct{ method, params string }{"tools/call", `{"name":"` + name + `","arguments":{}}`})
	}
	for i := 0; i < len(requests); i++ {
		rq := requests[i]
		name := rq.method + " " + rq.params
		modernParams := strings.TrimSuffix(rq.params, "}")
		if modernParams != "{" {
			modernParams += ","
		}
		modernParams += modernMeta + "}"
		hdr := map[string]string{HeaderProtocolVersion: ProtocolVersion, HeaderMethod: rq.method}
		var p struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
		}
		_ = json.Unmarshal([]byte(rq.params), &p)
		if p.Name != "" && rq.method != "completion/complete" {
			hdr[HeaderName] = p.Name
		} else if p.URI != "" {
			hdr[HeaderName] = p.URI
		}
		_, modern := dupPost(t, ts.URL, hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, rq.method, modernParams))
		if modern["result"] == nil {
			t.Fatalf("%s: modern answer %v", name, modern)
		}
		resp := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, rq.method, rq.params))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var legacy map[string]json.RawMessage
		if err := json.Unmarshal(body, &legacy); err != nil || legacy["result"] == nil {
			t.Fatalf("%s: legacy answer %s", name, body)
		}
		want := refLegacyResult(rq.method, modern["result"])
		if !sameJSON(legacy["result"], want) {
			t.Errorf("%s:\nlegacy     %s\nconversion %s", name, legacy["result"], want)
		}
		// Follow the cursor: the legacy pages are cached too.
		var page struct {
			NextCursor string `json:"nextCursor"`
		}
		if json.Unmarshal(legacy["result"], &page) == nil && page.NextCursor != "" && strings.HasSuffix(rq.method, "list") {
			cursors = append(cursors, page.NextCursor)
			requests = append(requests, struct{ method, params string }{rq.method, `{"cursor":"` + page.NextCursor + `"}`})
		}
	}
	if len(cursors) < 2 {
		t.Errorf("only %d pages followed: the fixture should page the tools list", len(cursors))
	}
}

// TestLegacyToolShapes spells out what 2025-11-25 gets for each output
// schema and structured content.
func TestLegacyToolShapes(t *testing.T) {
	ts := httptest.NewServer(NewHTTPHandler(shapeServer(t), nil))
	defer ts.Close()
	c := &legacyClient{t: t, url: ts.URL}
	c.initialize()
	tools := map[string]json.RawMessage{}
	for cursor := ""; ; {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":"` + cursor + `"}`
		}
		resp := c.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":` + params + `}`)
		var out struct {
			Result struct {
				Tools []struct {
					Name         string          `json:"name"`
					OutputSchema json.RawMessage `json:"outputSchema"`
				} `json:"tools"`
				NextCursor string `json:"nextCursor"`
			} `json:"result"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		for _, tl := range out.Result.Tools {
			tools[tl.Name] = tl.OutputSchema
		}
		if cursor = out.Result.NextCursor; cursor == "" {
			break
		}
	}
	for name, want := range map[string]string{
		"object":        `{"type":"object","properties":{"id":{"type":"integer"}}}`,
		"ref_to_object": `{"type":"object","$ref":"#/$defs/item","$defs":{"item":{"type":"object","properties":{"id":{"type":"integer"}}}}}`,
		"ref_to_array":  ``,
		"array":         ``,
		"none":          ``,
		"scalar":        ``,
	} {
		got, ok := tools[name]
		if !ok {
			t.Errorf("%s not listed", name)
		} else if (want == "") != (got == nil) || (want != "" && !sameJSON(got, []byte(want))) {
			t.Errorf("%s: outputSchema %s, want %s", name, got, want)
		}
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
