package openapi

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// deferDoc has what a deferred build must hand over intact: path-level
// parameters, refs to each kind of component, and a description written
// beside a $ref inside a path item (the one table the builder and the
// generator share).
const deferDoc = `{"openapi": "3.0.3", "info": {"title": "pets", "version": "1"},
 "paths": {
  "/pets": {
   "get": {"operationId": "listPets", "parameters": [{"$ref": "#/components/parameters/Limit"}],
    "responses": {"200": {"description": "ok", "content": {"application/json": {"schema":
     {"type": "array", "items": {"$ref": "#/components/schemas/Pet", "description": "One pet of the page"}}}}}}},
   "post": {"operationId": "addPet", "requestBody": {"$ref": "#/components/requestBodies/NewPet"},
    "responses": {"201": {"$ref": "#/components/responses/OnePet"}}}},
  "/pets/{id}": {
   "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
   "get": {"operationId": "getPet", "responses": {"200": {"$ref": "#/components/responses/OnePet"}}},
   "delete": {"operationId": "deletePet", "responses": {"204": {"description": "gone"}}}},
  "/owners/{owner}/pets": {
   "get": {"operationId": "ownerPets", "parameters": [{"name": "owner", "in": "path", "required": true,
    "schema": {"$ref": "#/components/schemas/Owner/properties/name"}}],
    "responses": {"200": {"description": "ok"}}}}
 },
 "components": {
  "schemas": {
   "Pet": {"type": "object", "properties": {"name": {"type": "string"},
    "owner": {"$ref": "#/components/schemas/Owner", "description": "Who feeds it"}}},
   "Owner": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 40}}}},
  "parameters": {"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 100}}},
  "requestBodies": {"NewPet": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}},
  "responses": {"OnePet": {"description": "one pet", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}}
 }}`

// generated loads src (a file) with opts and generates its tools, in both
// output-schema modes; seen lists the path items OnPathItem was given.
func generated(t *testing.T, src string, opts LoadOptions) (doc *Document, lists [][]byte, seen []string) {
	t.Helper()
	for _, mode := range []string{OutputSchemaCompact, OutputSchemaFull} {
		var err error
		doc, err = Load(context.Background(), src, opts)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		seen = nil
		res, err := Generate(doc, GenerateOptions{OutputSchema: mode, Consume: true,
			OnPathItem: func(path string, item *openapi3.PathItem) { seen = append(seen, path) }})
		if err != nil {
			t.Fatalf("generate (%s): %v", mode, err)
		}
		list, err := EncodeToolsList(res.Tools)
		if err != nil {
			t.Fatal(err)
		}
		lists = append(lists, list)
	}
	return doc, lists, seen
}

func writeDoc(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDeferPathsSameTools(t *testing.T) {
	src := writeDoc(t, "pets.json", deferDoc)
	eager, want, _ := generated(t, src, LoadOptions{})
	if eager.deferred != nil {
		t.Fatal("a document loaded without DeferPaths has deferred path items")
	}
	doc, got, seen := generated(t, src, LoadOptions{DeferPaths: true})
	if doc.deferred == nil || doc.T.Paths.Len() != 0 {
		t.Fatalf("DeferPaths: %d path items built at load (deferred %v)", doc.T.Paths.Len(), doc.deferred != nil)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("tools differ with DeferPaths:\n%s\n%s", got[i], want[i])
		}
	}
	if !bytes.Contains(got[1], []byte("One pet of the page")) {
		t.Errorf("the description beside a path item's $ref is lost:\n%s", got[1])
	}
	if want := []string{"/owners/{owner}/pets", "/pets", "/pets/{id}"}; !slices.Equal(seen, want) {
		t.Errorf("OnPathItem saw %q, want %q", seen, want)
	}
	if _, err := Generate(doc, GenerateOptions{}); err == nil || !strings.Contains(err.Error(), "generated once already") {
		t.Errorf("a second Generate of a deferred document: %v", err)
	}
}

// TestDeferPathsFallsBack: a path item that needs the whole document is
// built at load, as without DeferPaths, with the same tools.
func TestDeferPathsFallsBack(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "owner.json"), []byte(`{"type": "object", "properties": {"name": {"type": "string"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	item := `"/owners": {"get": {"operationId": "owners", "responses": {"200": {"description": "ok",
	  "content": {"application/json": {"schema": %s}}}}}}`
	cases := []struct {
		name, doc string
		opts      LoadOptions
	}{
		{"another file", strings.Replace(deferDoc, `"paths": {`, `"paths": {`+strings.Replace(item, "%s", `{"$ref": "owner.json"}`, 1)+",", 1), LoadOptions{}},
		{"into the paths", strings.Replace(deferDoc, `"paths": {`, `"paths": {`+strings.Replace(item, "%s", `{"$ref": "#/paths/~1pets/get/responses/200/content/application~1json/schema"}`, 1)+",", 1), LoadOptions{}},
		{"a path item's $ref", strings.NewReplacer(`"3.0.3"`, `"3.1.0"`,
			`"paths": {`, `"paths": {"/again": {"$ref": "#/components/pathItems/Pets"},`,
			`"components": {`, `"components": {"pathItems": {"Pets": {"get": {"operationId": "again", "responses": {"200": {"description": "ok"}}}}},`,
		).Replace(deferDoc), LoadOptions{}},
		{"an escaped key", strings.Replace(deferDoc, `{"$ref": "#/components/parameters/Limit"}`, `{"\u0024ref": "#/components/parameters/Limit"}`, 1), LoadOptions{}},
		{"validated", deferDoc, LoadOptions{Validate: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
			if err := os.WriteFile(src, []byte(c.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			eagerOpts, deferOpts := c.opts, c.opts
			deferOpts.DeferPaths = true
			_, want, _ := generated(t, src, eagerOpts)
			doc, got, _ := generated(t, src, deferOpts)
			if doc.deferred != nil {
				t.Fatal("the path items were deferred")
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("tools differ:\n%s\n%s", got[i], want[i])
				}
			}
		})
	}
}

// TestDeferPathsError: a broken path item fails Generate with the error
// Load gives for it without DeferPaths.
func TestDeferPathsError(t *testing.T) {
	for name, broken := range map[string]string{
		"not an object":  `"/z": {"get": 7}`,
		"missing target": `"/z": {"get": {"responses": {"200": {"$ref": "#/components/responses/Nothing"}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			src := writeDoc(t, "broken.json", strings.Replace(deferDoc, `"paths": {`, `"paths": {`+broken+",", 1))
			_, want := Load(context.Background(), src, LoadOptions{})
			var le *LoadError
			if !errors.As(want, &le) {
				t.Fatalf("Load without DeferPaths: %v, want a LoadError", want)
			}
			doc, err := Load(context.Background(), src, LoadOptions{DeferPaths: true})
			if err != nil {
				t.Fatalf("Load with DeferPaths: %v", err)
			}
			_, err = Generate(doc, GenerateOptions{})
			if !errors.As(err, &le) || err.Error() != want.Error() {
				t.Errorf("Generate: %v\nwant Load's: %v", err, want)
			}
		})
	}
}

// TestDeferPathsStops: generation stopped midway stops the builder too.
func TestDeferPathsStops(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"openapi": "3.0.3", "info": {"title": "many", "version": "1"}, "paths": {`)
	for i := range 3 * aheadItems {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"/p` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "/" + strings.Repeat("y", i) + `": {"get": {"responses": {"200": {"description": "ok"}}}}`)
	}
	b.WriteString("}}")
	src := writeDoc(t, "many.json", b.String())
	before := runtime.NumGoroutine()
	doc, err := Load(context.Background(), src, LoadOptions{DeferPaths: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	items := 0
	_, err = GenerateContext(ctx, doc, GenerateOptions{OnPathItem: func(string, *openapi3.PathItem) {
		if items++; items == 2 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("GenerateContext: %v, want context.Canceled", err)
	}
	if items != 2 {
		t.Errorf("%d path items walked after the stop, want 2", items)
	}
	// The builder is waited for before GenerateContext returns; the short
	// wait is for goroutines of the runtime's own that come and go.
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(time.Second); n > before && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	if n > before {
		t.Errorf("%d goroutines after the stop, %d before", n, before)
	}
}

func TestMayReferElsewhere(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want bool
	}{
		{`{"get": {"responses": {"200": {"description": "ok"}}}}`, false},
		{`{"get": {"parameters": [{"$ref" : "#/components/parameters/Limit"}]}}`, false},
		{`{"get": {"responses": {"200": {"$ref":"#/components/responses/Ok"}}}}`, false},
		{`{"description": "say \"$ref\" here", "get": {}}`, false},
		{`{"get": {"responses": {"200": {"$ref": "other.json#/Ok"}}}}`, true},
		{`{"$ref": "#/components/pathItems/Pets"}`, true},
		{`{"get": {"responses": {"200": {"$ref": "#/paths/~1a/get/responses/200"}}}}`, true},
		{`{"get": {"responses": {"200": {"$ref": 7}}}}`, true},
		{`{"get": {"responses": {"200": {"\u0024ref": "x.json"}}}}`, true},
		{`{"get": {"responses": {"200": {"$r\u0065f": "x.json"}}}}`, true},
	} {
		if got := mayReferElsewhere([]byte(c.raw)); got != c.want {
			t.Errorf("mayReferElsewhere(%s) = %v, want %v", c.raw, got, c.want)
		}
	}
}
