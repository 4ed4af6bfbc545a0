package mcp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// plainContent is Content without its MarshalJSON: what encoding/json
// writes by reflection, the reference for appendContent.
type plainContent Content

type plainResult struct {
	ResultType        string         `json:"resultType"`
	Content           []plainContent `json:"content"`
	StructuredContent any            `json:"structuredContent,omitempty"`
	IsError           bool           `json:"isError,omitempty"`
	Meta              map[string]any `json:"_meta,omitempty"`
}

func TestAppendToolResultMatchesEncodingJSON(t *testing.T) {
	prio := 0.5
	meta := []byte(`{"io.modelcontextprotocol/serverInfo":{"name":"t","version":"1"}}`)
	cases := map[string]*CallToolResult{
		"text":          TextResult("hello"),
		"escapes":       TextResult("quote \" backslash \\ newline \n tab \t <html> & \u2028 é 世界 \x01"),
		"invalid utf-8": TextResult("bad \xff\xfe bytes"),
		"tool error":    ToolError("HTTP 404 Not Found"),
		"structured raw": {Content: []Content{TextContent(`{"a":1}`)},
			StructuredContent: json.RawMessage(" {\"a\" : 1, \"b\":[ true , null ], \"s\":\"\\u00e9\"}\n")},
		"structured map": {Content: []Content{TextContent("x")}, StructuredContent: map[string]any{"k": []any{1, "v"}}},
		"meta":           {Content: []Content{TextContent("x")}, Meta: map[string]any{"custom": 1}},
		"media and links": {Content: []Content{
			ImageContent("aGk=", "image/png"), AudioContent("aGk=", "audio/wav"),
			ResourceLink("https://x/y", "y", "text/plain"),
			EmbeddedResource(ResourceContents{URI: "https://x/z", MIMEType: "application/octet-stream", Blob: "AA=="}),
			{Type: "text", Text: "annotated", Annotations: &Annotations{Audience: []string{"user"}, Priority: &prio}, Meta: map[string]any{"m": true}},
			{Type: "resource_link", URI: "u", Name: "n", Description: "d"},
		}},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := appendToolResult(nil, r, meta, modern)
			if err != nil {
				t.Fatal(err)
			}
			ref := plainResult{ResultType: ResultComplete, StructuredContent: r.StructuredContent, IsError: r.IsError, Meta: r.Meta}
			for _, c := range r.Content {
				ref.Content = append(ref.Content, plainContent(c))
			}
			if ref.Content == nil {
				ref.Content = []plainContent{}
			}
			if ref.Meta == nil {
				_ = json.Unmarshal(meta, &ref.Meta)
			}
			want, err := json.Marshal(ref)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, got)
			}
			_ = json.Unmarshal(want, &w)
			if !reflect.DeepEqual(g, w) {
				t.Errorf("appendToolResult\n got %s\nwant %s", got, want)
			}
			if strings.ContainsAny(string(got), "\n\r") {
				t.Errorf("output has a raw line break (would split an SSE event): %q", got)
			}
			if !strings.HasPrefix(string(got), `{"resultType":"complete","content":[`) {
				t.Errorf("resultType is not first: %s", got)
			}
		})
	}
}

func TestAppendContentWritesRequiredMembers(t *testing.T) {
	for _, c := range []struct {
		in   Content
		want string
	}{
		{TextContent(""), `{"type":"text","text":""}`},
		{ImageContent("", ""), `{"type":"image","data":"","mimeType":""}`},
		{ResourceLink("", "", ""), `{"type":"resource_link","uri":"","name":""}`},
	} {
		got, err := json.Marshal(c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("json.Marshal(%+v) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}

func TestAppendToolResultRejectsInvalidRaw(t *testing.T) {
	for _, raw := range []string{`{"a":`, `{} {}`, ``, `nul`} {
		r := &CallToolResult{Content: []Content{}, StructuredContent: json.RawMessage(raw)}
		if out, err := appendToolResult(nil, r, nil, modern); err == nil {
			t.Errorf("structuredContent %q accepted: %s", raw, out)
		}
	}
}

func BenchmarkAppendToolResult(b *testing.B) {
	body := `{"id":1,"name":"Rex","species":"dog","status":"available","tags":["friendly"],"categoryId":2,"details":{"kind":"dog","breed":"mixed","goodBoy":true}}`
	r := &CallToolResult{Content: []Content{TextContent(body)}, StructuredContent: json.RawMessage(body)}
	meta := []byte(`{"io.modelcontextprotocol/serverInfo":{"name":"mcpgate","version":"0.1.0-dev"}}`)
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := appendToolResult(make([]byte, 0, resultSizeHint(r)+len(meta)), r, meta, modern); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		ref := plainResult{ResultType: ResultComplete, Content: []plainContent{plainContent(r.Content[0])}, StructuredContent: r.StructuredContent}
		b.ReportAllocs()
		for b.Loop() {
			out, err := json.Marshal(ref)
			if err != nil {
				b.Fatal(err)
			}
			_ = spliceResult(make([]byte, 0, len(out)+len(meta)+40), ResultComplete, out, meta)
		}
	})
}
