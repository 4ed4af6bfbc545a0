package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
)

// sameRootVerdicts fails unless the fast paths of the schema-root checks
// (headerParams, objectRootedSchema) answer exactly as the full decodings.
func sameRootVerdicts(t *testing.T, what string, schema []byte) {
	t.Helper()
	h1, e1 := mcp.HeaderParamsForTest(schema)
	h2, e2 := mcp.HeaderParamsDecodedForTest(schema)
	if fmt.Sprint(e1) != fmt.Sprint(e2) || !reflect.DeepEqual(h1, h2) {
		t.Errorf("%s: headerParams %v, %v; decoded %v, %v", what, h1, e1, h2, e2)
	}
	o1, ok1 := mcp.ObjectRootedSchemaForTest(schema)
	o2, ok2 := mcp.ObjectRootedSchemaDecodedForTest(schema)
	if ok1 != ok2 || !bytes.Equal(o1, o2) {
		t.Errorf("%s: objectRootedSchema %s, %v; decoded %s, %v", what, o1, ok1, o2, ok2)
	}
}

func TestSchemaRootFastPaths(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string"}}}`,
		` { "properties" : {"a":{"type":"string","description":"say \"hi\"\n"}} , "type" : "object" } `,
		`{"type":"array","items":{}}`,
		`{"type":["object","null"]}`,
		`{"properties":{}}`,
		`{"typ\u0065":"object"}`,
		`{"type":"obj\u0065ct"}`,
		`{"type":"object","type":"array"}`,
		`{"type":"object","properties":{"a":{"type":"string","type":"integer"}}}`,
		`{"$ref":"#/$defs/A","$defs":{"A":{"type":"object","type":"string"}}}`,
		`{"$ref":"#/$defs/A","$defs":{"A":{"type":"object"},"A":{"type":"string"}}}`,
		`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`,
		`{"type":"object","properties":{"r":{"type":"string","x-mcp-h\u0065ader":"R"}}}`,
		`{"$ref":"#/$defs/A","$defs":{"A":{"type":"object"}}}`,
		`{"$ref":"#/$defs/A","$defs":{"A":{"type":"string"}}}`,
		`{"$ref":"#/$defs/A","$defs":{"A":{"type":"object"},"B":true}}`,
		`{"anyOf":[{"type":"object"},{"type":"null"}],"$defs":{}}`,
		`{"type":"object"} trailing`,
		`{"type":"object"`,
		`[]`, `"object"`, ``, `null`,
		"{\"type\":\"object\",\"description\":\"\xff\"}",
	} {
		sameRootVerdicts(t, s, []byte(s))
	}
}

// TestToolsCorpus checks the tool set's encodings on every tool of three
// large documents of the corpus, with their full output schemas (when
// MCPGATE_CORPUS is set): the schema-root fast paths answer as the full
// decodings; the hand-made wire form, decoded, is encoding/json's; and the
// 2025-11-25 form is the same tool with the outputSchema left out, or given
// "type": "object", as the full decoding of the schema decides.
func TestToolsCorpus(t *testing.T) {
	dir := os.Getenv("MCPGATE_CORPUS")
	if dir == "" {
		t.Skip("MCPGATE_CORPUS is not set")
	}
	decode := func(b []byte) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%v: %.200s", err, b)
		}
		return m
	}
	for _, file := range []string{"github/api.github.com.json", "apis-guru/stripe.com.json", "apis-guru/microsoft.com-graph.json"} {
		doc, err := openapi.Load(context.Background(), filepath.Join(dir, file), openapi.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := openapi.Generate(doc, openapi.GenerateOptions{Consume: true, OutputSchema: "full"})
		if err != nil {
			t.Fatal(err)
		}
		spliced := 0
		for _, ot := range res.Tools {
			sameRootVerdicts(t, file+" "+ot.Name+" input", ot.InputSchema)
			if len(ot.OutputSchema) > 0 {
				sameRootVerdicts(t, file+" "+ot.Name+" output", ot.OutputSchema)
			}
			tool := mcp.Tool{Name: ot.Name, Title: ot.Title, Description: ot.Description,
				InputSchema: ot.InputSchema, OutputSchema: ot.OutputSchema}
			wire, legacy, err := mcp.EncodeToolWireForTest(&tool)
			if err != nil {
				t.Fatalf("%s %s: %v", file, tool.Name, err)
			}
			want, err := json.Marshal(&tool)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(decode(wire), decode(want)) {
				t.Fatalf("%s %s: the wire form is not encoding/json's", file, tool.Name)
			}
			ref := decode(want)
			if len(tool.OutputSchema) > 0 {
				switch fixed, ok := mcp.ObjectRootedSchemaDecodedForTest(tool.OutputSchema); {
				case !ok:
					delete(ref, "outputSchema")
				case fixed != nil:
					ref["outputSchema"] = decode(fixed)
				}
			}
			if !bytes.Equal(legacy, wire) {
				spliced++
			}
			if !reflect.DeepEqual(decode(legacy), ref) {
				t.Fatalf("%s %s: the 2025-11-25 form differs from the reference", file, tool.Name)
			}
		}
		t.Logf("%s: %d tools, %d with a 2025-11-25 form of their own", file, len(res.Tools), spliced)
	}
}
