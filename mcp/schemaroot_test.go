package mcp_test

import (
	"bytes"
	"context"
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

// TestSchemaRootFastPathsCorpus compares them on every tool of three large
// documents of the corpus (when MCPGATE_CORPUS is set).
func TestSchemaRootFastPathsCorpus(t *testing.T) {
	dir := os.Getenv("MCPGATE_CORPUS")
	if dir == "" {
		t.Skip("MCPGATE_CORPUS is not set")
	}
	for _, file := range []string{"github/api.github.com.json", "apis-guru/stripe.com.json", "apis-guru/microsoft.com-graph.json"} {
		doc, err := openapi.Load(context.Background(), filepath.Join(dir, file), openapi.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := openapi.Generate(doc, openapi.GenerateOptions{Consume: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			sameRootVerdicts(t, file+" "+tool.Name+" input", tool.InputSchema)
			if len(tool.OutputSchema) > 0 {
				sameRootVerdicts(t, file+" "+tool.Name+" output", tool.OutputSchema)
			}
		}
	}
}
