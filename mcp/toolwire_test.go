package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// TestEncodeToolWire checks the hand-made wire form against encoding/json's
// encoding of the same tool, decoded: the same members with the same
// values, compact, and the schemas' bytes kept as given but for whitespace.
func TestEncodeToolWire(t *testing.T) {
	yes := true
	object := json.RawMessage(`{"type":"object"}`)
	for _, tc := range []struct {
		name string
		tool Tool
	}{
		{"minimal", Tool{Name: "a", InputSchema: object}},
		{"all members", Tool{Name: "b.c-d_e", Title: "Title <&>", Description: "line\nnext \"quoted\" \u2028 é",
			Icons:        []Icon{{Src: "https://x/i.png", Sizes: []string{"16x16"}}},
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","pattern":"^<a&b>$"}}}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"number"}}}`),
			Annotations:  &ToolAnnotations{ReadOnlyHint: &yes, Title: "t"},
			Meta:         map[string]any{"io.example/x": []any{1.5, "y"}}}},
		{"spaced schemas", Tool{Name: "c", InputSchema: json.RawMessage(" {\n \"type\" : \"object\" ,\n\t\"required\" : [ ] }\n"),
			OutputSchema: json.RawMessage(`{ "type": "array", "items": {} }`)}},
		{"invalid UTF-8 in text", Tool{Name: "d", Description: "bad \xff byte", InputSchema: object}},
		{"escapes kept in schemas", Tool{Name: "e", InputSchema: json.RawMessage(`{"type":"object","description":"\u00e9\/\n"}`)}},
		{"null output schema", Tool{Name: "f", InputSchema: object, OutputSchema: json.RawMessage(`null`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := encodeToolWire(&tc.tool, newSchemaPool())
			if err != nil {
				t.Fatal(err)
			}
			got := w.appendTo(nil, modern)
			if len(got) != w.len(modern) {
				t.Errorf("len %d, appended %d", w.len(modern), len(got))
			}
			in, out := w.in, w.out
			if !schemaEqual(in, tc.tool.InputSchema) || !schemaEqual(out, tc.tool.OutputSchema) {
				t.Errorf("schemas %s and %s are not the tool's", in, out)
			}
			want, err := json.Marshal(&tc.tool)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(got) {
				t.Fatalf("not JSON: %s", got)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, got); err != nil || compact.Len() != len(got) {
				t.Errorf("not compact: %s", got)
			}
			if g, w := decodeAny(t, got), decodeAny(t, want); !reflect.DeepEqual(g, w) {
				t.Errorf("encoded\n %s\nencoding/json\n %s", got, want)
			}
			if keys, wantKeys := memberOrder(t, got), memberOrder(t, want); !reflect.DeepEqual(keys, wantKeys) {
				t.Errorf("members %v, encoding/json %v", keys, wantKeys)
			}
		})
	}
}

// TestEncodeToolWireRejects: a schema that is not one JSON value is an
// error naming the schema, as encoding/json refuses it.
func TestEncodeToolWireRejects(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		tool       Tool
	}{
		{"truncated input", "inputSchema", Tool{Name: "a", InputSchema: json.RawMessage(`{"type":"object"`)}},
		{"two values", "inputSchema", Tool{Name: "a", InputSchema: json.RawMessage(`{} {}`)}},
		{"bad output", "outputSchema", Tool{Name: "a", InputSchema: json.RawMessage(`{}`), OutputSchema: json.RawMessage(`{"type":}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := json.Marshal(&tc.tool); err == nil {
				t.Fatalf("encoding/json accepts it")
			}
			_, err := encodeToolWire(&tc.tool, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}

// TestLegacyToolSplice: the 2025-11-25 form keeps an
// object-rooted outputSchema, adds "type": "object" to a $ref to an object
// and leaves out any other, the rest of the tool unchanged.
func TestLegacyToolSplice(t *testing.T) {
	object := `{"type":"object","properties":{"id":{"type":"integer"}}}`
	for _, tc := range []struct {
		name, output, want string // want: the legacy outputSchema, "" for none
	}{
		{"object", object, object},
		{"ref to object", `{"$ref":"#/$defs/o","$defs":{"o":` + object + `}}`,
			`{"type":"object","$ref":"#/$defs/o","$defs":{"o":` + object + `}}`},
		{"ref to array", `{"$ref":"#/$defs/l","$defs":{"l":{"type":"array"}}}`, ""},
		{"array", `{"type":"array"}`, ""},
		{"no type", `{"properties":{}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := Tool{Name: "x", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`),
				OutputSchema: json.RawMessage(tc.output), Annotations: &ToolAnnotations{Title: "a"}}
			w, err := encodeToolWire(&tool, nil)
			if err != nil {
				t.Fatal(err)
			}
			wire := w.appendTo(nil, modern)
			legacy := w.appendTo([]byte("prefix"), legacyEra)[len("prefix"):]
			if len(legacy) != w.len(legacyEra) {
				t.Errorf("len %d, appended %d", w.len(legacyEra), len(legacy))
			}
			m := decodeAny(t, legacy).(map[string]any)
			got, has := m["outputSchema"]
			delete(m, "outputSchema")
			want := decodeAny(t, wire).(map[string]any)
			delete(want, "outputSchema")
			if !reflect.DeepEqual(m, want) {
				t.Errorf("the rest changed: %s", legacy)
			}
			switch {
			case tc.want == "" && has:
				t.Errorf("outputSchema kept: %s", legacy)
			case tc.want != "" && !reflect.DeepEqual(got, decodeAny(t, []byte(tc.want))):
				t.Errorf("outputSchema %v, want %s", got, tc.want)
			}
		})
	}
}

// schemaEqual: a and b are the same JSON but for whitespace (both absent
// counts).
func schemaEqual(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// decodeAny decodes b with its numbers as written (json.Number): a float64
// cannot hold every number JSON can (a schema may be 1e400).
func decodeAny(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return v
}

// memberOrder is the top-level member names of a JSON object, in order.
func memberOrder(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// FuzzEncodeToolWire: the hand-made wire form accepts exactly the tools
// encoding/json encodes, and says the same: decoded, the two are equal,
// and the 2025-11-25 form is JSON that differs at most in outputSchema.
func FuzzEncodeToolWire(f *testing.F) {
	f.Add("t", "A <title>", "desc \"q\"\n", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"$ref":"#/$defs/x","$defs":{"x":{"type":"object"}}}`)
	f.Add("t", "", "", " { \"type\" : \"object\" } ", `{"type":"array"}`)
	f.Add("t", "\xff", "\u2028", `{"type":"object","a":1,"a":2}`, ``)
	f.Add("t", "", "", `{"type":"object"`, `null`)
	f.Fuzz(func(t *testing.T, name, title, desc, in, out string) {
		tool := Tool{Name: name, Title: title, Description: desc, InputSchema: json.RawMessage(in), OutputSchema: json.RawMessage(out)}
		if in == "" {
			tool.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		want, werr := json.Marshal(&tool)
		w, err := encodeToolWire(&tool, newSchemaPool())
		if (werr == nil) != (err == nil) {
			t.Fatalf("encoding/json: %v; encodeToolWire: %v", werr, err)
		}
		if err != nil {
			return
		}
		modernForm := w.appendTo(nil, modern)
		if !json.Valid(modernForm) || len(modernForm) != w.len(modern) {
			t.Fatalf("not JSON, or not of its length %d: %q", w.len(modern), modernForm)
		}
		if g, e := decodeAny(t, modernForm), decodeAny(t, want); !reflect.DeepEqual(g, e) {
			t.Fatalf("encoded %q\nencoding/json %q", modernForm, want)
		}
		legacy := w.appendTo(nil, legacyEra)
		if !json.Valid(legacy) || len(legacy) != w.len(legacyEra) {
			t.Fatalf("legacy form not JSON, or not of its length %d: %q", w.len(legacyEra), legacy)
		}
		lm, wm := decodeAny(t, legacy).(map[string]any), decodeAny(t, modernForm).(map[string]any)
		delete(lm, "outputSchema")
		delete(wm, "outputSchema")
		if !reflect.DeepEqual(lm, wm) {
			t.Fatalf("the legacy form changed more than outputSchema: %q", legacy)
		}
	})
}

// TestToolSetSharesSchemas: a tool set keeps one copy of each distinct
// schema, whatever whitespace it came with, and lists every tool whole.
func TestToolSetSharesSchemas(t *testing.T) {
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	ts := s.NewToolSet()
	h := func(context.Context, *CallToolRequest) (*CallToolResult, error) { return &CallToolResult{}, nil }
	out := `{"type":"object","properties":{"id":{"type":"integer"}}}`
	for _, tl := range []Tool{
		{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(out)},
		{Name: "b", InputSchema: json.RawMessage(`{ "type": "object" }`), OutputSchema: json.RawMessage(strings.ReplaceAll(out, ",", ", "))},
		{Name: "c", InputSchema: json.RawMessage(`{"type":"object","required":[]}`), OutputSchema: json.RawMessage(`{"type":"object"}`)},
	} {
		if err := ts.Add(&tl, h); err != nil {
			t.Fatal(err)
		}
	}
	schemas := func(name string) (in, out json.RawMessage) {
		in, out, ok := ts.Schemas(name)
		if !ok {
			t.Fatalf("no tool %s", name)
		}
		return in, out
	}
	aIn, aOut := schemas("a")
	bIn, bOut := schemas("b")
	cIn, cOut := schemas("c")
	if &aIn[0] != &bIn[0] || &aOut[0] != &bOut[0] {
		t.Errorf("a and b have the same schemas, kept twice")
	}
	if &aIn[0] == &cIn[0] || &aOut[0] == &cOut[0] {
		t.Errorf("c's schemas are a's")
	}
	if err := s.SetTools(ts); err != nil {
		t.Fatal(err)
	}
	c := NewClient(s)
	tools, err := c.ListTools(context.Background())
	if err != nil || len(tools) != 3 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	for _, tl := range tools {
		if tl.Name != "c" && string(tl.OutputSchema) != out {
			t.Errorf("%s: outputSchema %s", tl.Name, tl.OutputSchema)
		}
	}
}

// TestToolSetSharesSchemasConcurrently: tools added to a set from several
// goroutines at once still share their schemas (run with -race).
func TestToolSetSharesSchemasConcurrently(t *testing.T) {
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	ts := s.NewToolSet()
	h := func(context.Context, *CallToolRequest) (*CallToolResult, error) { return &CallToolResult{}, nil }
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				tl := Tool{Name: fmt.Sprintf("t%d_%d", g, i), InputSchema: json.RawMessage(`{"type":"object"}`),
					OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"number"}}}`)}
				if err := ts.Add(&tl, h); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	_, first, _ := ts.Schemas("t0_0")
	for g := range 8 {
		for i := range 50 {
			if _, out, ok := ts.Schemas(fmt.Sprintf("t%d_%d", g, i)); !ok || &out[0] != &first[0] {
				t.Fatalf("t%d_%d: its outputSchema is kept apart (%v)", g, i, ok)
			}
		}
	}
}
