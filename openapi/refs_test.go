package openapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestDefinitionsInsideComponents: references into a component schema's
// own definitions (and $defs) resolve, every reference to one node shares
// one $defs entry, and a chain of references (Alias → Item) lands on the
// target.
func TestDefinitionsInsideComponents(t *testing.T) {
	res := loadGenerate(t, "testdata/definitions.yaml", GenerateOptions{OutputSchema: OutputSchemaFull})
	create := findTool(t, res, "createItem")
	props, required, defs := inputProps(t, create)
	if props["kind"]["$ref"] != "#/$defs/itemType" || props["id"]["$ref"] != "#/$defs/id" {
		t.Errorf("body properties = %v", props)
	}
	if len(required) != 1 || required[0] != "kind" {
		t.Errorf("required = %v", required)
	}
	for _, name := range []string{"itemType", "id", "part", "tag", "Item"} {
		if _, ok := defs[name]; !ok {
			t.Errorf("$defs has no %q: %v", name, defs)
		}
	}
	if _, dup := defs["itemType_2"]; dup {
		t.Error("two references to one definition gave two $defs entries")
	}
	if !strings.Contains(string(create.OutputSchema), `"$ref":"#/$defs/itemType"`) {
		t.Errorf("outputSchema = %s", create.OutputSchema)
	}
	get := findTool(t, res, "getItem")
	if p, _, _ := inputProps(t, get); p["id"]["$ref"] != "#/$defs/id" {
		t.Errorf("path parameter through a component parameter = %v", p["id"])
	}
	if !strings.Contains(string(get.OutputSchema), `"required":["kind"]`) {
		t.Errorf("Alias did not resolve to Item: %s", get.OutputSchema)
	}
}

// TestBadReferencesNameTheNode: a reference to nothing, or a cycle of
// references with no value, fails the load with the reference's place and
// the JSON pointer of the node that is missing.
func TestBadReferencesNameTheNode(t *testing.T) {
	cases := []struct {
		name, schemas, use string
		place, msg         string
	}{
		{"missing definition", `"Item":{"type":"object","definitions":{"a":{"type":"string"}}}`, `{"$ref":"#/components/schemas/Item/definitions/nope"}`,
			"paths./x.get.responses.200.content.application/json.schema", `#/components/schemas/Item/definitions has no member "nope"`},
		{"into a scalar", `"Item":{"type":"string"}`, `{"$ref":"#/components/schemas/Item/type/x"}`,
			"paths./x.get", `#/components/schemas/Item/type is a string`},
		{"past an array", `"Item":{"allOf":[{"type":"string"}]}`, `{"$ref":"#/components/schemas/Item/allOf/3"}`,
			"paths./x.get", `#/components/schemas/Item/allOf is an array of 1 and has no element "3"`},
		{"cycle without a value", `"A":{"$ref":"#/components/schemas/B"},"B":{"$ref":"#/components/schemas/A"}`, `{"$ref":"#/components/schemas/A"}`,
			"components.schemas.", `more than 64 references in a chain`},
		{"anchor", `"Item":{"type":"string"}`, `{"$ref":"#item"}`, "paths./x.get", `"item" is not a JSON pointer`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := fmt.Sprintf(`{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/x":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":%s}}}}}}},"components":{"schemas":{%s}}}`, c.use, c.schemas)
			_, err := Parse(context.Background(), []byte(doc), "bad.json", LoadOptions{})
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want a LoadError", err)
			}
			if le.Source != "bad.json" || !strings.Contains(le.Place, c.place) || !strings.Contains(le.Error(), c.msg) {
				t.Errorf("err = %v (place %q), want place %q and %q", err, le.Place, c.place, c.msg)
			}
		})
	}
}

// exponentialDoc is a document whose references, expanded naively, give
// 2^depth copies: definition d(i) refers to d(i+1) twice.
func exponentialDoc(depth int) []byte {
	var b strings.Builder
	b.WriteString(`{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/x":{"post":{"requestBody":{"required":true,"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Root/definitions/d0"}}}},"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Root/definitions/d0"}}}}}}}},"components":{"schemas":{"Root":{"type":"object","definitions":{`)
	for i := range depth {
		fmt.Fprintf(&b, `"d%d":{"type":"object","properties":{"a":{"$ref":"#/components/schemas/Root/definitions/d%d"},"b":{"$ref":"#/components/schemas/Root/definitions/d%d"}}},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{"type":"string"}}}}}}`, depth)
	return []byte(b.String())
}

// TestExponentialReferencesStayLinear: 2^40 naive copies come out as 40
// $defs entries (d1…d40; d0 is the body, flattened into arguments). (An expanding implementation never returns; the deadline
// turns that into a failure instead of a hang.)
func TestExponentialReferencesStayLinear(t *testing.T) {
	done := make(chan *Result, 1)
	go func() {
		doc, err := Parse(context.Background(), exponentialDoc(40), "exp.json", LoadOptions{})
		if err != nil {
			t.Error(err)
			done <- nil
			return
		}
		res, err := Generate(doc, GenerateOptions{})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	select {
	case res := <-done:
		if res == nil {
			return
		}
		tool := res.Tools[0]
		_, _, defs := inputProps(t, &tool)
		if len(defs) != 40 || len(tool.InputSchema) > 8<<10 {
			t.Errorf("%d $defs, %d bytes: want 40 $defs in a few KB", len(defs), len(tool.InputSchema))
		}
	case <-time.After(time.Minute):
		t.Fatal("loading a 2^40 reference expansion did not finish in a minute")
	}
}

// BenchmarkExponentialReferences loads a document of about 3 MiB made of
// nested definitions that expand to 2^depth copies (the issue-15 bound: no
// document of at most 3 MiB takes more than 2 s).
func BenchmarkExponentialReferences(b *testing.B) {
	unit := len(exponentialDoc(1001)) - len(exponentialDoc(1000))
	doc := exponentialDoc((3<<20 - len(exponentialDoc(0))) / unit)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := Parse(context.Background(), doc, "exp.json", LoadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Generate(d, GenerateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
