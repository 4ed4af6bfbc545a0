package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

func findTool(t *testing.T, res *Result, name string) *Tool {
	t.Helper()
	for i := range res.Tools {
		if res.Tools[i].Name == name {
			return &res.Tools[i]
		}
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	t.Fatalf("no tool %q among %v", name, names)
	return nil
}

func findArg(t *testing.T, tool *Tool, name string) Argument {
	t.Helper()
	for _, a := range tool.Route.Arguments {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("tool %s: no argument %q in %+v", tool.Name, name, tool.Route.Arguments)
	return Argument{}
}

// inputProps decodes a tool's inputSchema root.
func inputProps(t *testing.T, tool *Tool) (map[string]map[string]any, []string, map[string]any) {
	t.Helper()
	var root struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
		Defs       map[string]any            `json:"$defs"`
	}
	if err := json.Unmarshal(tool.InputSchema, &root); err != nil {
		t.Fatal(err)
	}
	return root.Properties, root.Required, root.Defs
}

func TestCollisionsAreRenamedAndRouted(t *testing.T) {
	res := loadGenerate(t, "testdata/collisions.yaml", GenerateOptions{})
	tool := findTool(t, res, "updateItem")
	cases := []struct {
		name     string
		in       Location
		param    string
		required bool
	}{
		{"id", InPath, "id", true},         // path wins the plain name
		{"query_id", InQuery, "id", false}, // query "id" gets the location prefix
		{"body_query_id", InBodyProperty, "query_id", false},
		{"name", InBodyProperty, "name", true},
		{"X-Trace", InHeader, "X-Trace", false},
		{"session", InCookie, "session", false},
		{"fields", InBodyProperty, "fields()", false}, // sanitized names collide too
		{"body_fields", InBodyProperty, "fields[]", false},
	}
	for _, c := range cases {
		a := findArg(t, tool, c.name)
		if a.In != c.in || a.Param != c.param || a.Required != c.required {
			t.Errorf("argument %s = %+v, want in=%s param=%s required=%t", c.name, a, c.in, c.param, c.required)
		}
	}
	props, required, _ := inputProps(t, tool)
	if len(props) != len(cases) {
		t.Errorf("%d properties, want %d (readOnly body properties and Accept dropped): %v", len(props), len(cases), props)
	}
	if !slices.Equal(required, []string{"id", "name"}) {
		t.Errorf("required = %v", required)
	}
	if props["id"]["type"] != "integer" {
		t.Errorf("path id schema = %v, want the integer path parameter (not the readOnly body id)", props["id"])
	}
}

func TestCircularRefsStayRefs(t *testing.T) {
	res := loadGenerate(t, "testdata/circular.json", GenerateOptions{OutputSchema: OutputSchemaFull})
	tool := findTool(t, res, "createNode")
	props, _, defs := inputProps(t, tool)
	if props["parent"]["$ref"] != "#/$defs/Node" {
		t.Errorf("parent = %v", props["parent"])
	}
	if _, ok := defs["Node"]; !ok || len(defs) != 1 {
		t.Errorf("$defs = %v, want just Node", defs)
	}
	list := findTool(t, res, "listTrees")
	var out struct {
		Defs map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(list.OutputSchema, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Defs) != 2 || out.Defs["A"] == nil || out.Defs["B"] == nil {
		t.Errorf("outputSchema $defs = %v, want A and B (the A↔B cycle), and not the unused schema", out.Defs)
	}
	s, err := CompileSchema("out", list.OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	_ = json.Unmarshal([]byte(`[{"b":{"a":{"b":{}}}}]`), &v)
	if err := s.Validate(v); err != nil {
		t.Errorf("nested cyclic value rejected: %v", err)
	}
	_ = json.Unmarshal([]byte(`[{"b":{"a":{"b":7}}}]`), &v)
	if err := s.Validate(v); err == nil {
		t.Error("a wrong type deep in the cycle was accepted")
	}
}

func TestCompositionAndOpenAPI30Quirks(t *testing.T) {
	res := loadGenerate(t, "testdata/composition.yaml", GenerateOptions{})
	create := findTool(t, res, "createPet")
	props, required, _ := inputProps(t, create)
	if _, ok := props["id"]; ok {
		t.Error("readOnly id from allOf member is an input")
	}
	if !slices.Equal(required, []string{"kind", "name"}) || props["name"]["examples"] == nil {
		t.Errorf("allOf flattening: required=%v name=%v", required, props["name"])
	}
	patch := findTool(t, res, "patchPet")
	if a := findArg(t, patch, "body"); a.In != InWholeBody || !patch.Route.Body.Whole {
		t.Errorf("oneOf body should be one whole-body argument: %+v", a)
	}
	raw := string(create.OutputSchema)
	for _, want := range []string{`"exclusiveMaximum":9`, `"type":["string","null"]`, `"enum":["S","M",null]`, `{"type":"null"}`} {
		if !strings.Contains(raw, want) {
			t.Errorf("outputSchema lacks %s: %s", want, raw)
		}
	}
	if strings.Contains(raw, "discriminator") || strings.Contains(raw, "nullable") || strings.Contains(raw, `"example"`) {
		t.Errorf("OpenAPI-only keywords left in: %s", raw)
	}
	search := findTool(t, res, "searchPets")
	if !strings.Contains(string(search.InputSchema), `{"exclusiveMinimum":0,"type":"integer"}`) {
		t.Errorf("boolean exclusiveMinimum not converted: %s", search.InputSchema)
	}
}

func TestBodies(t *testing.T) {
	res := loadGenerate(t, "testdata/bodies.yaml", GenerateOptions{})
	form := findTool(t, res, "submitForm")
	if form.Route.Body.ContentType != "application/x-www-form-urlencoded" || form.Route.Body.Whole {
		t.Errorf("form body = %+v", form.Route.Body)
	}
	if a := findArg(t, form, "tags"); a.Style != "spaceDelimited" || a.Explode {
		t.Errorf("form encoding not carried: %+v", a)
	}
	if a := findArg(t, form, "meta"); a.Style != "deepObject" || !a.Explode {
		t.Errorf("form encoding not carried: %+v", a)
	}
	up := findTool(t, res, "uploadFile")
	if a := findArg(t, up, "file"); !a.File || !a.Required {
		t.Errorf("file part = %+v", a)
	}
	if a := findArg(t, up, "meta"); a.ContentType != "application/json" {
		t.Errorf("multipart part content type = %+v", a)
	}
	s, err := CompileInputSchema(up)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(map[string]any{"file": map[string]any{"content": "aGk=", "filename": "a.txt"}}); err != nil {
		t.Errorf("valid file argument rejected: %v", err)
	}
	if err := s.Validate(map[string]any{"file": "aGk="}); err == nil {
		t.Error("a bare string accepted as a file part")
	}
	// A multipart body that is one binary string: a file argument sent as
	// the part "file" (issue 15 item 4), not an object with no parts.
	att := findTool(t, res, "addAttachment")
	if a := findArg(t, att, "file"); !a.File || a.In != InBodyProperty || a.Param != "file" || !a.Required || att.Route.Body.Whole {
		t.Errorf("binary multipart body = %+v %+v", a, att.Route.Body)
	}
	as, err := CompileInputSchema(att)
	if err != nil {
		t.Fatal(err)
	}
	if err := as.Validate(map[string]any{"key": "K-1", "file": map[string]any{"content": "aGk="}}); err != nil {
		t.Errorf("file argument rejected: %v", err)
	}
	if err := as.Validate(map[string]any{"key": "K-1", "file": map[string]any{}}); err == nil {
		t.Error("a file without content accepted")
	}
	// Several files in one field: an array of file objects.
	gal := findTool(t, res, "putGallery")
	if a := findArg(t, gal, "photos"); !a.File {
		t.Errorf("array of files = %+v", a)
	}
	gs, err := CompileInputSchema(gal)
	if err != nil {
		t.Fatal(err)
	}
	if err := gs.Validate(map[string]any{"photos": []any{map[string]any{"content": "aGk="}, map[string]any{"content": "aG8=", "filename": "b.png"}}}); err != nil {
		t.Errorf("array of files rejected: %v", err)
	}
	if err := gs.Validate(map[string]any{"photos": []any{"aGk="}}); err == nil {
		t.Error("a bare string accepted in an array of files")
	}
	raw := findTool(t, res, "putRaw")
	if a := findArg(t, raw, "body"); a.In != InWholeBody || !a.Base64 || raw.Route.Body.ContentType != "application/octet-stream" {
		t.Errorf("octet-stream body = %+v %+v", a, raw.Route.Body)
	}
	// A body the document says is base64 text (format: byte) is that
	// text: it is sent as given, not decoded.
	cover := findTool(t, res, "putCover")
	if a := findArg(t, cover, "body"); a.In != InWholeBody || a.Base64 || cover.Route.Body.ContentType != "image/jpeg" {
		t.Errorf("base64-text body = %+v %+v", a, cover.Route.Body)
	}
	list := findTool(t, res, "postList")
	if a := findArg(t, list, "body"); a.In != InQuery {
		t.Errorf("query parameter named body = %+v", a)
	}
	if a := findArg(t, list, "body_body"); a.In != InWholeBody || !a.Required {
		t.Errorf("array body = %+v", a)
	}
	if !strings.HasPrefix(string(list.OutputSchema), `{"items":{"type":"integer"},"type":"array"`) {
		t.Errorf("array outputSchema = %s", list.OutputSchema)
	}
	empty := findTool(t, res, "getWithEmptyBody")
	if empty.Route.Body != nil || len(empty.Route.Arguments) != 1 {
		t.Errorf("empty closed body: %+v", empty.Route)
	}
	text := findTool(t, res, "postText")
	if a := findArg(t, text, "body"); a.Base64 || text.Route.Body.ContentType != "text/plain" {
		t.Errorf("text body = %+v", a)
	}
}

// TestOptionalBodyKeepsItsRequiredFields: an optional body may be left
// out, but a body that is sent has its required fields (issue 15 item 3).
func TestOptionalBodyKeepsItsRequiredFields(t *testing.T) {
	res := loadGenerate(t, "testdata/bodies.yaml", GenerateOptions{})
	txn := findTool(t, res, "createTxn")
	props, required, _ := inputProps(t, txn)
	if len(required) != 0 || txn.Route.Body.Required || findArg(t, txn, "txnId").Required {
		t.Errorf("optional body made required: required = %v, body %+v", required, txn.Route.Body)
	}
	if d := props["txnId"]["description"]; d != "The transaction id. Required when any body field is given." {
		t.Errorf("txnId description = %q", d)
	}
	s, err := CompileInputSchema(txn)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args map[string]any
		ok   bool
	}{
		{map[string]any{}, true},
		{map[string]any{"txnId": "t1", "amount": 3}, true},
		{map[string]any{"txnId": "t1", "amount": 3, "note": "n"}, true},
		{map[string]any{"note": "n"}, false},
		{map[string]any{"amount": 3}, false},
		{map[string]any{"txnId": "t1", "note": "n"}, false},
	}
	for _, c := range cases {
		if err := s.Validate(c.args); (err == nil) != c.ok {
			t.Errorf("Validate(%v) = %v, want ok %t", c.args, err, c.ok)
		}
	}
	// A required body keeps plain required arguments.
	form := findTool(t, res, "submitForm")
	if _, req, _ := inputProps(t, form); len(req) != 1 || req[0] != "name" || strings.Contains(string(form.InputSchema), "dependentRequired") {
		t.Errorf("required body: %s", form.InputSchema)
	}
}

func TestNaming(t *testing.T) {
	res := loadGenerate(t, "testdata/naming.yaml", GenerateOptions{})
	byRoute := map[string]*Tool{}
	for i := range res.Tools {
		tool := &res.Tools[i]
		byRoute[tool.Route.Method+" "+cmpOr(tool.Route.DocPath, tool.Route.Path)] = tool
	}
	cases := []struct{ route, name string }{
		{"GET /repos/{owner}/{repo}", "repos_get"},
		{"DELETE /repos/{owner}/{repo}", "repos_delete"},
		{"GET /dup/a", "duplicate"},
		{"GET /dup/b", "duplicate_2"},
		{"GET /dup/c", "duplicate_2_2"},
		{"POST /no-id/{user.id}/items", "post_no-id_user_id_items"},
		{"GET /attachments", "getPurchaseOrder_AttachmentByFileName"},
		{"GET /long", "thisIsAVeryLongOperationIdThatGoesOnAndOnBeyondTheSixty_edc5b6de"},
		{"GET /{Bucket}#cors", "getCors"},
	}
	for _, c := range cases {
		tool := byRoute[c.route]
		if tool == nil {
			t.Errorf("no tool for %s", c.route)
			continue
		}
		if tool.Name != c.name {
			t.Errorf("%s: name %q, want %q", c.route, tool.Name, c.name)
		}
	}
	if tool := byRoute["GET /no-id/{user.id}/items"]; tool.Title != "List items" {
		t.Errorf("title from summary = %q", tool.Title)
	}
	att := findTool(t, res, "getPurchaseOrder_AttachmentByFileName")
	if a := findArg(t, att, "Ar_e_Ventilacao"); a.Param != "Ar e Ventilação" || a.In != InQuery {
		t.Errorf("non-ASCII parameter = %+v", a)
	}
	cors := findTool(t, res, "getCors")
	if cors.Route.Path != "/{Bucket}" || cors.Route.DocPath != "/{Bucket}#cors" {
		t.Errorf("fragment path: %+v", cors.Route)
	}
	// A "#…" marker segment is not sent, but every template parameter stays.
	tr := findTool(t, res, "getTransfer")
	if tr.Route.Path != "/send/v1/partners/{partnerId}/transfers/{transferId}" || findArg(t, tr, "partnerId").In != InPath || findArg(t, tr, "transferId").In != InPath {
		t.Errorf("marker segment: %+v", tr.Route)
	}
	if q := findTool(t, res, "ListQueues"); q.Route.Path != "/" || findArg(t, q, "X-Amz-Target").In != InHeader {
		t.Errorf("AWS target fragment: %+v", q.Route)
	}
	// Every path parameter refuses the empty string, as the gateway does.
	trProps, _, _ := inputProps(t, tr)
	if trProps["partnerId"]["minLength"] != 1.0 || trProps["transferId"]["minLength"] != nil {
		t.Errorf("path parameters: %v", trProps)
	}
	if a := findArg(t, findTool(t, res, "searchArticles"), "query"); a.In != InPath || !a.Required {
		t.Errorf("undeclared template parameter = %+v", a)
	}
	cmp := findTool(t, res, "compare")
	if findArg(t, cmp, "base").In != InPath || findArg(t, cmp, "head").In != InPath || cmp.Route.Path != "/compare/{base}...{head}" {
		t.Errorf("mixed segment template: %+v", cmp.Route)
	}
	// A shorter bound still gives valid, unique names.
	short := loadGenerate(t, "testdata/naming.yaml", GenerateOptions{MaxNameLength: 16})
	seen := map[string]bool{}
	for _, tool := range short.Tools {
		if len(tool.Name) > 16 || seen[tool.Name] {
			t.Errorf("bound 16: name %q", tool.Name)
		}
		seen[tool.Name] = true
	}
}

// TestTags: a tool carries its operation's tags in document order, in the
// manifest but never in tools/list; a tag change is a compatible drift.
func TestTags(t *testing.T) {
	res := loadGenerate(t, "testdata/naming.yaml", GenerateOptions{})
	get := findTool(t, res, "repos_get")
	if !slices.Equal(get.Tags, []string{"repos", "read"}) {
		t.Errorf("tags = %q, want [repos read]", get.Tags)
	}
	if del := findTool(t, res, "repos_delete"); del.Tags != nil {
		t.Errorf("untagged operation: tags = %q", del.Tags)
	}
	list, err := EncodeToolsList(res.Tools)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(list), `"tags"`) {
		t.Error("tools/list carries tags")
	}
	manifest, err := NewManifest(res).Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(manifest), `"tags": [`) {
		t.Error("the manifest lost the tags")
	}
	changed := *NewManifest(res)
	changed.Tools = slices.Clone(changed.Tools)
	for i := range changed.Tools {
		if changed.Tools[i].Name == "repos_get" {
			changed.Tools[i].Tags = []string{"repos"}
		}
	}
	got := Diff(NewManifest(res), &changed)
	if len(got) != 1 || got[0].Breaking || got[0].Message != "tags changed" {
		t.Errorf("diff of a tag change = %v", got)
	}
}

func TestAnnotations(t *testing.T) {
	res := loadGenerate(t, "testdata/naming.yaml", GenerateOptions{})
	get := findTool(t, res, "repos_get").Annotations
	del := findTool(t, res, "repos_delete").Annotations
	if get != (Annotations{Title: "Repos get", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: true}) {
		t.Errorf("GET annotations = %+v", get)
	}
	if del != (Annotations{Title: "Repos delete", DestructiveHint: true, IdempotentHint: true, OpenWorldHint: true}) {
		t.Errorf("DELETE annotations = %+v", del)
	}
	post := findTool(t, res, "post_no-id_user_id_items").Annotations
	if post.ReadOnlyHint || post.DestructiveHint || post.IdempotentHint || !post.OpenWorldHint {
		t.Errorf("POST annotations = %+v", post)
	}
	// x-mcp-* extensions: annotations, redaction, hiding.
	ext := loadGenerate(t, "testdata/oas31.yaml", GenerateOptions{})
	if len(ext.Tools) != 1 {
		t.Fatalf("x-mcp-hide or webhooks made tools: %d", len(ext.Tools))
	}
	patch := ext.Tools[0]
	if patch.Annotations.DestructiveHint || !slices.Equal(patch.RedactResponse, []string{"secret", "items.token"}) {
		t.Errorf("extensions not applied: %+v %v", patch.Annotations, patch.RedactResponse)
	}
	// Options override extensions.
	f := false
	over := loadGenerate(t, "testdata/oas31.yaml", GenerateOptions{Overrides: map[string]Override{
		"patchThing":             {Name: "edit_thing", OpenWorldHint: &f, Description: "Edit it."},
		"DELETE /things/{id}":    {Hide: false},
		"GET /not/in/the/doc/at": {Hide: true},
	}})
	tool := findTool(t, over, "edit_thing")
	if tool.Annotations.OpenWorldHint || tool.Description != "Edit it." {
		t.Errorf("override not applied: %+v", tool)
	}
}

func TestOpenAPI31(t *testing.T) {
	res := loadGenerate(t, "testdata/oas31.yaml", GenerateOptions{})
	tool := findTool(t, res, "patchThing")
	props, _, defs := inputProps(t, tool)
	if !slices.Equal(props["id"]["type"].([]any), []any{"string", "integer"}) {
		t.Errorf("type array = %v", props["id"])
	}
	if a := findArg(t, tool, "filter"); a.ContentType != "application/json" || a.Style != "" {
		t.Errorf("content parameter = %+v", a)
	}
	if props["ref"]["description"] != "A thing." || props["ref"]["$ref"] != "#/$defs/Thing" || len(defs) != 1 {
		t.Errorf("description beside $ref: %v (defs %v)", props["ref"], defs)
	}
	thing := defs["Thing"].(map[string]any)["properties"].(map[string]any)
	if _, ok := thing["name"].(map[string]any)["pattern"]; ok {
		t.Error("a lookahead pattern (not RE2) was kept")
	}
	if _, ok := thing["secret"]; !ok {
		t.Error("writeOnly property missing from the input")
	}
	if strings.Contains(string(tool.OutputSchema), "secret") {
		t.Error("writeOnly property in the output")
	}
}

func TestSwagger2(t *testing.T) {
	res := loadGenerate(t, "testdata/swagger2.json", GenerateOptions{})
	up := findTool(t, res, "uploadImage")
	if up.Route.Body.ContentType != "multipart/form-data" {
		t.Errorf("formData body = %+v", up.Route.Body)
	}
	if a := findArg(t, up, "file"); !a.File || !a.Required {
		t.Errorf("type: file parameter = %+v", a)
	}
	want := []SecurityRequirement{{"basic": {}}, {}}
	if len(up.Route.Security) != 2 || len(up.Route.Security[0]["basic"]) != 0 || len(up.Route.Security[1]) != 0 {
		t.Errorf("security = %v, want %v", up.Route.Security, want)
	}
	add := findTool(t, res, "addPet")
	if _, ok := add.Route.Security[0]["key"]; !ok {
		t.Errorf("document security not inherited: %v", add.Route.Security)
	}
	if res.Servers[0] != "https://api.example.com/v1" {
		t.Errorf("servers = %v", res.Servers)
	}
	if s := res.SecuritySchemes["key"]; s.Type != "apiKey" || s.In != "header" || s.Name != "X-Key" {
		t.Errorf("security scheme = %+v", s)
	}
	if s := res.SecuritySchemes["basic"]; s.Type != "http" || s.Scheme != "basic" {
		t.Errorf("security scheme = %+v", s)
	}
}

func TestBOMAndDescriptions(t *testing.T) {
	res := loadGenerate(t, "testdata/bom.json", GenerateOptions{})
	if tool := findTool(t, res, "ping"); tool.Title != "Ping the server" || tool.Description != "Ping  the server" {
		t.Errorf("title %q description %q", tool.Title, tool.Description)
	}
	if props, _, _ := inputProps(t, &res.Tools[0]); len(props) != 0 || !strings.Contains(string(res.Tools[0].InputSchema), `"additionalProperties":false`) {
		t.Errorf("no-argument schema = %s", res.Tools[0].InputSchema)
	}
	if got := boundText("  héllo wörld  ", 8); got != "héll…" {
		t.Errorf("boundText = %q", got)
	}
}

func TestFilters(t *testing.T) {
	cases := []struct {
		name string
		opts GenerateOptions
		want []string
	}{
		{"methods", GenerateOptions{IncludeMethods: []string{"delete"}}, []string{"repos_delete"}},
		{"include paths", GenerateOptions{IncludePaths: []string{"/dup/*"}}, []string{"duplicate", "duplicate_2", "duplicate_2_2"}},
		{"exclude paths", GenerateOptions{ExcludePaths: []string{"/**"}}, nil},
		{"include ops", GenerateOptions{IncludeOperations: []string{"compare", "repos/get"}}, []string{"compare", "repos_get"}},
		{"exclude ops", GenerateOptions{IncludePaths: []string{"/repos/**"}, ExcludeOperations: []string{"repos/get"}}, []string{"repos_delete"}},
		{"func", GenerateOptions{Filter: func(m, p string) bool { return p == "/long" }}, []string{"thisIsAVeryLongOperationIdThatGoesOnAndOnBeyondTheSixty_edc5b6de"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := loadGenerate(t, "testdata/naming.yaml", c.opts)
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			if !slices.Equal(names, c.want) {
				t.Errorf("tools = %v, want %v", names, c.want)
			}
		})
	}
	tags := loadGenerate(t, "testdata/swagger2.json", GenerateOptions{ExcludeTags: []string{"none"}})
	if len(tags.Tools) != 2 {
		t.Errorf("exclude tags dropped untagged operations")
	}
	if _, err := Generate(&Document{T: tags2doc(t)}, GenerateOptions{MaxNameLength: 200}); err == nil {
		t.Error("MaxNameLength 200 accepted")
	}
}

func tags2doc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := Load(context.Background(), "testdata/bom.json", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return doc.T
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, body, want string
	}{
		{"syntax.json", "{\"openapi\": \"3.0.0\",\n \"paths\": {,}}", "syntax.json: line 2, column 12"},
		{"bom.json", utf8BOM + "{\"openapi\": \"3.0.0\",\n \"paths\": {,}}", "bom.json: line 2, column 12"},
		{"long.json", "{\"openapi\": \"3.0.0\", \"x\": \"" + strings.Repeat("a", 100<<10) + "\",\n\n \"paths\": {,}}", "long.json: line 3, column 12"},
		{"noversion.json", `{"info":{},"paths":{}}`, `not an OpenAPI document (no "openapi" or "swagger" version field): found an object with the keys info, paths`},
		{"login.html", "\n<!DOCTYPE html>\n<html><head><title>\n  Sign in · Example\n</title></head><body>…</body></html>", `not an OpenAPI document (no "openapi" or "swagger" version field): found an HTML page titled "Sign in · Example"`},
		{"page.json", "<html><body>502 Bad Gateway</body></html>", "found an HTML page (a login or error page"},
		{"feed.xml", `<?xml version="1.0"?><rss/>`, "found an XML document"},
		{"async.yaml", "asyncapi: 2.6.0\ninfo: {title: t}\n", "found an AsyncAPI document"},
		{"postman.json", `{"info":{"_postman_id":"x","name":"n"},"item":[]}`, "found a Postman collection"},
		{"schema.json", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`, "found a JSON Schema"},
		{"prose.txt", "This is the API's README.\nIt has no spec.", `found text that starts with "This is the API's README."`},
		{"v4.json", `{"openapi":"4.0.0"}`, `unsupported version "4.0.0"`},
		{"badop.json", `{"openapi":"3.0.0","paths":{"/pets":{"get":"nope"}}}`, "paths./pets.get: operation is not an object"},
		{"badref.json", `{"openapi":"3.0.0","paths":{"/p":{"get":{"responses":{"200":{"$ref":"#/components/responses/Gone"}}}}}}`, "badref.json"},
		{"empty.yaml", "", "empty document"},
		{"list.yaml", "- a\n- b\n", `found text that starts with "- a"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(context.Background(), write(c.name, c.body), LoadOptions{})
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want a *LoadError", err)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "openapi: ") {
				t.Errorf("err = %q, want it to contain %q", err, c.want)
			}
		})
	}
	if _, err := Load(context.Background(), filepath.Join(dir, "missing.json"), LoadOptions{}); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
}

func TestLoadSources(t *testing.T) {
	// stdin, relative file refs and a missing whole-file ref.
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "schemas"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "schemas", "pet.yaml"), []byte("type: object\nproperties:\n  name: {type: string}\n  owner: {$ref: 'owner.json'}\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "schemas", "owner.json"), []byte(`{"type":"object","properties":{"pet":{"$ref":"pet.yaml"}}}`), 0o644))
	main := filepath.Join(dir, "api.yaml")
	must(os.WriteFile(main, []byte(`openapi: 3.0.3
info: {title: Multi, version: "1"}
paths:
  /pets:
    post:
      operationId: addPet
      requestBody:
        content:
          application/json:
            schema: {$ref: 'schemas/pet.yaml'}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: 'schemas/gone.yaml'}
`), 0o644))
	doc, err := Load(context.Background(), main, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Warnings) == 0 || !strings.Contains(doc.Warnings[0], "gone.yaml") {
		t.Errorf("warnings = %v, want one about gone.yaml", doc.Warnings)
	}
	res, err := Generate(doc, GenerateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	checkTools(t, res.Tools, &n)
	props, _, defs := inputProps(t, &res.Tools[0])
	if props["owner"]["$ref"] == nil || len(defs) != 2 {
		t.Errorf("external cyclic refs: props=%v defs=%v", props, defs)
	}

	f, err := os.Open("testdata/bom.json")
	must(err)
	defer f.Close()
	doc, err = Load(context.Background(), "-", LoadOptions{Stdin: f})
	if err != nil || doc.T.Info.Title != "BOM" {
		t.Fatalf("stdin: %v", err)
	}
}

func TestLoadURL(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/specs/api.json", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"openapi":"3.0.0","info":{"title":"Remote","version":"1"},"paths":{"/p":{"post":{"operationId":"p",
			"requestBody":{"content":{"application/json":{"schema":{"$ref":"common.json#/components/schemas/Thing"}}}},"responses":{"200":{"description":"ok"}}}}}}`))
	})
	mux.HandleFunc("/specs/common.json", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"openapi":"3.0.0","info":{"title":"c","version":"1"},"paths":{},"components":{"schemas":{"Thing":{"type":"object","properties":{"x":{"type":"integer"}}}}}}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	doc, err := Load(context.Background(), srv.URL+"/specs/api.json", LoadOptions{HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Generate(doc, GenerateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := findArg(t, &res.Tools[0], "x"); a.In != InBodyProperty {
		t.Errorf("relative ref over http not followed: %+v", a)
	}
	if _, err := Load(context.Background(), srv.URL+"/specs/missing.json", LoadOptions{HTTPClient: srv.Client()}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: %v", err)
	}
}

func TestSchemaBudget(t *testing.T) {
	res := loadGenerate(t, "testdata/circular.json", GenerateOptions{OutputSchema: OutputSchemaFull, MaxOutputSchemaBytes: 130, MaxInputSchemaBytes: 60})
	out := string(findTool(t, res, "listTrees").OutputSchema)
	if !strings.Contains(out, `"A":{"properties"`) || !strings.Contains(out, `"B":true`) {
		t.Errorf("outputSchema not trimmed breadth-first: %s", out)
	}
	in := findTool(t, res, "createNode")
	if !strings.Contains(string(in.InputSchema), `"$defs":{"Node":true}`) {
		t.Errorf("inputSchema not trimmed: %s", in.InputSchema)
	}
	var n int
	checkTools(t, res.Tools, &n)
	for _, tool := range res.Tools {
		if len(tool.OutputSchema) > 130 {
			t.Errorf("tool %s: outputSchema of %d bytes over the bound", tool.Name, len(tool.OutputSchema))
		}
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "2 outputSchemas were over 130 bytes") }) {
		t.Errorf("no trimming warning: %v", res.Warnings)
	}
	// Unbounded: everything kept.
	full := loadGenerate(t, "testdata/circular.json", GenerateOptions{MaxOutputSchemaBytes: -1})
	if strings.Contains(string(findTool(t, full, "listTrees").OutputSchema), "true") {
		t.Error("unbounded schema trimmed")
	}
}

func TestEncodeToolsList(t *testing.T) {
	res := loadGenerate(t, "testdata/composition.yaml", GenerateOptions{})
	out, err := EncodeToolsList(res.Tools)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(out, &list); err != nil || len(list.Tools) != len(res.Tools) {
		t.Fatalf("not a tools/list result: %v", err)
	}
	for i, tool := range list.Tools {
		keys := make([]string, 0, len(tool))
		for k := range tool {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		want := []string{"_meta", "annotations", "description", "inputSchema", "name", "title"}
		if res.Tools[i].OutputSchema != nil {
			want = []string{"_meta", "annotations", "description", "inputSchema", "name", "outputSchema", "title"}
		}
		if res.Tools[i].Description == "" {
			want = slices.DeleteFunc(want, func(s string) bool { return s == "description" })
		}
		if !slices.Equal(keys, want) {
			t.Errorf("tool %d keys = %v, want %v", i, keys, want)
		}
	}
	var meta struct {
		Op OperationMeta `json:"io.mcpgate/operation"`
	}
	if err := json.Unmarshal(list.Tools[0]["_meta"], &meta); err != nil || meta.Op.Method != res.Tools[0].Route.Method ||
		meta.Op.Path != cmpOr(res.Tools[0].Route.DocPath, res.Tools[0].Route.Path) || meta.Op.OperationID != res.Tools[0].Route.OperationID {
		t.Errorf("_meta = %s (%v), want the tool's operation", list.Tools[0]["_meta"], err)
	}
	bad := []Tool{{Name: "x", InputSchema: json.RawMessage(`[]`)}}
	if _, err := EncodeToolsList(bad); err == nil {
		t.Error("a non-object inputSchema was encoded")
	}
}

func TestParseAndValidate(t *testing.T) {
	data := []byte("\xEF\xBB\xBFswagger: \"2.0\"\ninfo: {title: Y, version: \"1\"}\npaths:\n  /a/{id}:\n    get:\n      operationId: getA\n      parameters:\n        - {name: id, in: path, required: true, type: string}\n      responses: {\"200\": {description: ok}}\n")
	doc, err := Parse(context.Background(), data, "inline.yaml", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if doc.SourceVersion != "2.0" || doc.Source != "inline.yaml" {
		t.Errorf("parsed %+v", doc)
	}
	// A document kin-openapi's validation rejects still loads, with a warning.
	bad := []byte(`{"openapi":"3.0.0","info":{"title":"V","version":"1"},"paths":{"/a/{id}":{"get":{"operationId":"getA","responses":{"200":{"description":"ok"}}}}}}`)
	doc, err = Parse(context.Background(), bad, "bad.json", LoadOptions{Validate: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(doc.Warnings, func(w string) bool { return strings.HasPrefix(w, "validation: ") }) {
		t.Errorf("no validation warning: %v", doc.Warnings)
	}
	res, err := Generate(doc, GenerateOptions{})
	if err != nil || len(res.Tools) != 1 {
		t.Fatalf("generate: %v", err)
	}
}

func TestMalformedSchemasStillCompile(t *testing.T) {
	// Real documents carry schema mistakes; each must still give a schema
	// that compiles.
	doc := []byte(`{"openapi":"3.0.0","info":{"title":"M","version":"1"},"paths":{"/m":{"post":{"operationId":"m",
		"requestBody":{"content":{"application/json":{"schema":{"type":"object","required":["a","a"],"properties":{
			"a":{"type":"string","minimum":"0","maxLength":-1,"multipleOf":0,"examples":{"x":{"value":1}}},
			"b":"string",
			"c":{"type":"array","items":[{"type":"string"}],"enum":"nope","required":true},
			"d":{"allOf":[{"required":["x","x"]}],"pattern":"(?<=x)y","format":7}}}}}},
		"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"nullable":true}}}}}}}}}`)
	d, err := Parse(context.Background(), doc, "m.json", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Generate(d, GenerateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	checkTools(t, res.Tools, &n)
	if n != 2 || string(res.Tools[0].OutputSchema) != "{}" {
		t.Errorf("%d schemas compiled, output %s; want 2 and {}", n, res.Tools[0].OutputSchema)
	}
	if len(res.Warnings) < 2 {
		t.Errorf("warnings = %v, want the bad property and the dropped pattern", res.Warnings)
	}
}

func TestRedactNarrowsOutputSchema(t *testing.T) {
	res := loadGenerate(t, "testdata/redact.yaml", GenerateOptions{})
	tool := findTool(t, res, "getUser")
	if !slices.Equal(tool.RedactResponse, []string{"email", "sessions.token", "groups.secret"}) {
		t.Fatalf("redactResponse = %v", tool.RedactResponse)
	}
	s, err := CompileSchema("out", tool.OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	valid := func(doc string) error {
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		return s.Validate(v)
	}
	// What the agent gets after redaction validates...
	if err := valid(`{"id":1,"sessions":[{"id":2}],"groups":[{"name":"g"}],"manager":{"id":3,"email":"m@x"}}`); err != nil {
		t.Errorf("redacted response rejected: %v\n%s", err, tool.OutputSchema)
	}
	// ...the nested User (manager) keeps its own required email...
	if err := valid(`{"id":1,"manager":{"id":3}}`); err == nil {
		t.Error("manager without email accepted: the shared $defs entry was narrowed")
	}
	// ...and the rest of the schema still applies.
	if err := valid(`{"id":"one"}`); err == nil {
		t.Error("wrong id type accepted")
	}
	raw := string(tool.OutputSchema)
	if strings.Contains(raw, `"email":{"type":"string"},"id"`) && !strings.Contains(raw, `"$defs"`) {
		t.Errorf("email still advertised at the root: %s", raw)
	}
	// Without redaction the document's schema rejects the redacted response.
	plain := loadGenerate(t, "testdata/redact.yaml", GenerateOptions{Overrides: map[string]Override{"getUser": {RedactResponse: []string{}}}})
	ps, err := CompileSchema("plain", findTool(t, plain, "getUser").OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	_ = json.Unmarshal([]byte(`{"id":1,"sessions":[{"id":2}]}`), &v)
	if ps.Validate(v) == nil {
		t.Error("unredacted schema accepted a response without email")
	}
}

// TestReservedHeadersAreNotArguments: header parameters that no argument may
// set (credentials, hop-by-hop, framing, routing) are not offered to the
// agent; ordinary headers are.
func TestReservedHeadersAreNotArguments(t *testing.T) {
	doc := []byte(`{"openapi":"3.0.3","info":{"title":"h","version":"1"},"paths":{"/x":{"get":{"operationId":"getX","parameters":[
	  {"name":"Host","in":"header","schema":{"type":"string"}},
	  {"name":"Cookie","in":"header","schema":{"type":"string"}},
	  {"name":"Transfer-Encoding","in":"header","schema":{"type":"string"}},
	  {"name":"X-Forwarded-For","in":"header","schema":{"type":"string"}},
	  {"name":"Authorization","in":"header","schema":{"type":"string"}},
	  {"name":"X-Request-Id","in":"header","schema":{"type":"string"}}],
	  "responses":{"200":{"description":"ok"}}}}}}`)
	d, err := Parse(context.Background(), doc, "h.json", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Generate(d, GenerateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tool := findTool(t, res, "getX")
	var got []string
	for _, a := range tool.Route.Arguments {
		got = append(got, a.Param)
	}
	if len(got) != 1 || got[0] != "X-Request-Id" {
		t.Fatalf("header arguments %v, want only X-Request-Id", got)
	}
	for _, h := range []string{"host", "COOKIE", "Connection", "x-real-ip", "Accept", "Content-Type"} {
		if !ReservedHeader(h) {
			t.Errorf("%s should be reserved", h)
		}
	}
	if ReservedHeader("X-Api-Key") {
		t.Error("X-Api-Key is an ordinary header")
	}
}

// TestCredentialPlumbingIsNotAnArgument: credentials (a security scheme's
// apiKey, AWS SigV4, Google's OAuth token and API key) are never offered,
// transport knobs only on request, and each hidden parameter is recorded
// in the route; the same names stay arguments where they are real ones.
func TestCredentialPlumbingIsNotAnArgument(t *testing.T) {
	args := func(tool *Tool) []string {
		var names []string
		for _, a := range tool.Route.Arguments {
			names = append(names, a.Name)
		}
		return names
	}
	hidden := func(tool *Tool) map[string]string {
		m := map[string]string{}
		for _, h := range tool.Route.Hidden {
			m[h.Name] = h.Reason + "/" + h.Scheme
		}
		return m
	}
	res := loadGenerate(t, "testdata/plumbing.yaml", GenerateOptions{})
	videos := findTool(t, res, "listVideos")
	if got, want := args(videos), []string{"fields", "part", "uploadType"}; !slices.Equal(got, want) {
		t.Errorf("listVideos arguments = %v, want %v", got, want)
	}
	wantHidden := map[string]string{
		"$.xgafv": "transport/", "access_token": "credential/", "alt": "transport/", "callback": "transport/",
		"key": "credential/", "oauth_token": "credential/", "prettyPrint": "transport/", "quotaUser": "transport/",
		"x-api-key": "security-scheme/ApiKeyHeader", "sid": "security-scheme/SessionCookie",
	}
	if got := hidden(videos); !maps.Equal(got, wantHidden) {
		t.Errorf("listVideos hidden = %v,\nwant %v", got, wantHidden)
	}
	if len(videos.Route.Security) != 1 || videos.Route.Security[0]["ApiKeyHeader"] == nil {
		t.Errorf("security = %v: the static credential mode needs the scheme", videos.Route.Security)
	}
	s3 := findTool(t, res, "GetObject")
	if got, want := args(s3), []string{"Bucket", "Key", "x-amz-request-payer"}; !slices.Equal(got, want) {
		t.Errorf("GetObject arguments = %v, want %v", got, want)
	}
	if len(s3.Route.Hidden) != 7 {
		t.Errorf("GetObject hidden = %v, want the 7 SigV4 parameters", s3.Route.Hidden)
	}
	if got, want := args(findTool(t, res, "revokeToken")), []string{"access_token", "callback", "key"}; !slices.Equal(got, want) {
		t.Errorf("revokeToken arguments = %v, want %v (real arguments kept)", got, want)
	}
	// Transport knobs come back on request; credentials never do.
	some := findTool(t, loadGenerate(t, "testdata/plumbing.yaml", GenerateOptions{KeepParameters: []string{"ALT", "callback"}}), "listVideos")
	if got, want := args(some), []string{"alt", "callback", "fields", "part", "uploadType"}; !slices.Equal(got, want) {
		t.Errorf("KeepParameters [ALT callback]: %v, want %v", got, want)
	}
	all := findTool(t, loadGenerate(t, "testdata/plumbing.yaml", GenerateOptions{KeepParameters: []string{"*", "key", "access_token"}}), "listVideos")
	if got, want := args(all), []string{".xgafv", "alt", "callback", "fields", "part", "prettyPrint", "quotaUser", "uploadType"}; !slices.Equal(got, want) {
		t.Errorf("KeepParameters [*]: %v, want %v", got, want)
	}
}

// TestHintsBeyondTheMethod: RPC-style reads are read-only, RPC and POST
// destroyers destructive; text only adds caution; x-mcp-annotations and
// overrides still win (issue 15 item 7).
func TestHintsBeyondTheMethod(t *testing.T) {
	tr := true
	res := loadGenerate(t, "testdata/hints.yaml", GenerateOptions{Overrides: map[string]Override{"SendMessage": {DestructiveHint: &tr}}})
	type hint struct{ readOnly, destructive, idempotent bool }
	want := map[string]hint{
		"ListQueues":    {readOnly: true, idempotent: true},
		"DeleteQueue":   {destructive: true},
		"SendMessage":   {destructive: true}, // the override
		"BatchGetItem":  {readOnly: true, idempotent: true},
		"ethGetBalance": {readOnly: true, idempotent: true},
		"getBlockCount": {readOnly: true, idempotent: true},
		"DescribeHat":   {readOnly: true, idempotent: true},
		"rebuildServer": {destructive: true},
		"removeHook":    {destructive: true},
		"searchItems":   {},                                 // text never makes a POST read-only
		"getArchive":    {readOnly: true, idempotent: true}, // nor a read destructive
		"GetQueueUrl":   {idempotent: true},                 // x-mcp-annotations wins
	}
	for name, w := range want {
		a := findTool(t, res, name).Annotations
		if got := (hint{a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint}); got != w {
			t.Errorf("%s: %+v, want %+v", name, got, w)
		}
	}
}

func TestDestroysDataText(t *testing.T) {
	for text, want := range map[string]bool{
		"Rebuilds a Server from an image, destroying all data on its disk.": true,
		"Permanently deletes a dialog.":                                     true,
		"This action is final and cannot be undone.":                        true,
		"After 30 days, the item is permanently deleted.":                   false, // context, not what the call does
		"Restore a recently deleted application.":                           false,
		"Creates a server.":                                                 false,
	} {
		if got := destroysData.MatchString(text); got != want {
			t.Errorf("%q: %t, want %t", text, got, want)
		}
	}
}

// TestNamesAndText: a path-slug operationId becomes a readable name, HTML
// becomes Markdown, the description is the lead paragraph (the full text
// kept apart), and _meta ties the tool to its operation (issue 15 item 8).
func TestNamesAndText(t *testing.T) {
	res := loadGenerate(t, "testdata/text.yaml", GenerateOptions{})
	inc := findTool(t, res, "get_version_incidents_id_format")
	if inc.Title != "**Get** an incident" {
		t.Errorf("title = %q", inc.Title)
	}
	if want := "Returns one incident, with its `status` and its [timeline](https://example.com/docs/incidents)."; inc.Description != want {
		t.Errorf("description = %q,\nwant %q", inc.Description, want)
	}
	if want := inc.Description + "\n\nIncidents older than a year are archived & may answer 404.\n\n- JSON\n- XML"; inc.FullDescription != want {
		t.Errorf("full description = %q,\nwant %q", inc.FullDescription, want)
	}
	if props, _, _ := inputProps(t, inc); props["id"]["description"] != "Incident ID" {
		t.Errorf("parameter description = %q", props["id"]["description"])
	}
	full := findTool(t, loadGenerate(t, "testdata/text.yaml", GenerateOptions{OutputSchema: OutputSchemaFull}), inc.Name)
	if !strings.Contains(string(full.OutputSchema), `"description":"One of *open* or *closed*."`) {
		t.Errorf("schema description: %s", full.OutputSchema)
	}
	if strings.Contains(string(inc.OutputSchema), `"description"`) {
		t.Errorf("compact outputSchema kept a nested description: %s", inc.OutputSchema)
	}
	if got := inc.Meta[OperationMetaKey]; got != (OperationMeta{Method: "GET", Path: "/{version}/incidents/{id}.{format}", OperationID: "GET--version-incidents--id---format-"}) {
		t.Errorf("_meta = %+v", got)
	}
	rep := findTool(t, res, "createReport")
	if rep.Description != "Starts a report over the selected range and returns its id." || !strings.HasPrefix(rep.FullDescription, "## Create a report\n\nStarts") {
		t.Errorf("lead paragraph = %q, full %q", rep.Description, rep.FullDescription)
	}
	plain := findTool(t, res, "getPlain")
	if plain.Description != "Compares a < b and b > c, no markup." || plain.FullDescription != "" {
		t.Errorf("plain text changed: %q / %q", plain.Description, plain.FullDescription)
	}
	list, err := EncodeToolsList(res.Tools)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(list), "fullDescription") || strings.Contains(string(list), "archived") {
		t.Error("tools/list carries the full description")
	}
	if !strings.Contains(string(list), `"_meta":{"io.mcpgate/operation":{"method":"GET","operationId":"GET--version-incidents--id---format-","path":"/{version}/incidents/{id}.{format}"}}`) {
		t.Errorf("tools/list _meta missing: %s", list)
	}
}

func TestReadableName(t *testing.T) {
	for in, want := range map[string]string{
		"GET--version-incidents--id---format-": "get_version_incidents_id_format",
		"__private_op__":                       "private_op",
		"listPets":                             "listPets",
		"repos/get":                            "repos/get", // made safe later by toolName
		"list-pets":                            "list-pets",
	} {
		if got := readableName(in); got != want {
			t.Errorf("readableName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCutAtSentence(t *testing.T) {
	s := "First sentence here. Second sentence is longer than the bound allows."
	if got := cutAtSentence(s, 40); got != "First sentence here." {
		t.Errorf("cut = %q", got)
	}
	if got := cutAtSentence("one long sentence without any stop at all in it", 20); got != "one long sentence…" {
		t.Errorf("cut without a sentence end = %q", got)
	}
	if got := cutAtSentence(s, -1); got != s {
		t.Errorf("unbounded = %q", got)
	}
}

func TestPlainText(t *testing.T) {
	for in, want := range map[string]string{
		"<p>Incident ID</p>":                                       "Incident ID",
		"<p>One</p><p>Two &amp; three</p>":                         "One\n\nTwo & three",
		"Use <b>bold</b>, <i>it</i> and <code>x</code>":            "Use **bold**, *it* and `x`",
		`See <a href='https://x.test/a?b=1&amp;c=2'>the docs</a>.`: "See [the docs](https://x.test/a?b=1&c=2).",
		"<ul><li>a</li><li>b</li></ul>":                            "- a\n- b",
		"<h2>Title</h2><p>Body</p>":                                "**Title**\n\nBody",
		"Line<br/>break":                                           "Line\nbreak",
		"<note><p>Careful.</p></note>":                             "Careful.",
		"x < y and <notatag> stays":                                "x < y and <notatag> stays",
		"no markup &amp; no change":                                "no markup &amp; no change",
	} {
		if got := plainText(in); got != want {
			t.Errorf("plainText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStats(t *testing.T) {
	res := loadGenerate(t, "testdata/bodies.yaml", GenerateOptions{})
	st, err := Stats(res.Tools, 3)
	if err != nil {
		t.Fatal(err)
	}
	list, err := EncodeToolsList(res.Tools)
	if err != nil {
		t.Fatal(err)
	}
	if st.Tools != len(res.Tools) || st.Bytes != len(list) || st.Tokens != (len(list)+3)/4 {
		t.Errorf("totals %+v, want %d tools in %d bytes", st, len(res.Tools), len(list))
	}
	if len(st.Largest) != 3 || st.Largest[0].Bytes != st.MaxBytes || st.Largest[0].Bytes < st.Largest[1].Bytes || st.Largest[1].Bytes < st.Largest[2].Bytes {
		t.Errorf("largest = %+v", st.Largest)
	}
	if !(st.P50Bytes <= st.P95Bytes && st.P95Bytes <= st.MaxBytes && st.P50Bytes > 0) {
		t.Errorf("p50 %d p95 %d max %d", st.P50Bytes, st.P95Bytes, st.MaxBytes)
	}
	// The entry sizes add up to the list (one comma between entries).
	all, _ := Stats(res.Tools, len(res.Tools))
	sum := len(`{"tools":[]}`+"\n") + len(res.Tools) - 1
	for _, s := range all.Largest {
		sum += s.Bytes
	}
	if sum != len(list) {
		t.Errorf("entries add up to %d, list is %d", sum, len(list))
	}
}

// TestOutputSchemaModes: compact inlines references to a bounded depth and
// keeps only the top descriptions; full keeps $defs; none leaves it out.
// The compact schema accepts what the full one accepts.
func TestOutputSchemaModes(t *testing.T) {
	full := findTool(t, loadGenerate(t, "testdata/circular.json", GenerateOptions{OutputSchema: OutputSchemaFull}), "createNode")
	compact := findTool(t, loadGenerate(t, "testdata/circular.json", GenerateOptions{}), "createNode")
	none := findTool(t, loadGenerate(t, "testdata/circular.json", GenerateOptions{OutputSchema: OutputSchemaNone}), "createNode")
	if !strings.Contains(string(full.OutputSchema), `"$defs"`) || strings.Contains(string(compact.OutputSchema), `"$defs"`) || none.OutputSchema != nil {
		t.Fatalf("full %s\ncompact %s\nnone %s", full.OutputSchema, compact.OutputSchema, none.OutputSchema)
	}
	fs, err := CompileSchema("full", full.OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := CompileSchema("compact", compact.OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	deep := map[string]any{"name": "a", "parent": map[string]any{"name": "b", "parent": map[string]any{"name": "c", "parent": map[string]any{"name": "d", "children": []any{}}}}}
	for _, v := range []any{deep, map[string]any{"name": "x", "children": []any{map[string]any{"name": "y"}}}} {
		if fs.Validate(v) == nil && cs.Validate(v) != nil {
			t.Errorf("compact refuses %v, which full accepts", v)
		}
	}
	if cs.Validate(map[string]any{"name": 3}) == nil {
		t.Error("compact accepts a wrong type at the top")
	}
	if _, err := Generate(&Document{T: tags2doc(t)}, GenerateOptions{OutputSchema: "tiny"}); err == nil {
		t.Error("OutputSchema tiny accepted")
	}
}

// TestCompactStaysTruthful: cutting a oneOf's members to their types
// would make both match; compact turns oneOf into anyOf and drops the
// keywords (not, if, unevaluated*) that a cut could make stricter.
func TestCompactStaysTruthful(t *testing.T) {
	const doc = `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{"/pets":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{
	"type":"object","unevaluatedProperties":false,"properties":{"pet":{"oneOf":[
	  {"type":"object","properties":{"sound":{"type":"object","properties":{"kind":{"const":"bark"}}}}},
	  {"type":"object","properties":{"sound":{"type":"object","properties":{"kind":{"const":"meow"}}}}}]},
	  "other":{"not":{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}}},
	"allOf":[{"properties":{"extra":{"type":"string"}}}]}}}}}}}}}`
	d, err := Parse(context.Background(), []byte(doc), "t.json", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var schemas []*jsonschema.Schema
	for _, mode := range []string{OutputSchemaFull, OutputSchemaCompact} {
		res, err := Generate(d, GenerateOptions{OutputSchema: mode})
		if err != nil {
			t.Fatal(err)
		}
		s, err := CompileSchema(mode, res.Tools[0].OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		schemas = append(schemas, s)
	}
	for _, v := range []any{
		map[string]any{"pet": map[string]any{"sound": map[string]any{"kind": "bark"}}, "extra": "x"},
		map[string]any{"pet": map[string]any{"sound": map[string]any{"kind": "meow"}}, "other": map[string]any{"a": map[string]any{"b": 1}}},
	} {
		if schemas[0].Validate(v) != nil {
			t.Fatalf("full refuses %v", v)
		}
		if err := schemas[1].Validate(v); err != nil {
			t.Errorf("compact refuses %v, which full accepts: %v", v, err)
		}
	}
}

// TestCompactBounds: a schema that is an allOf of itself, and a wide
// fan-out of references, give a bounded compact schema (the compact
// inliner once recursed until the stack overflowed).
func TestCompactBounds(t *testing.T) {
	var wide strings.Builder
	wide.WriteString(`{"openapi":"3.0.0","paths":{"/a":{"get":{"responses":{"200":{"description":"x","content":{"application/json":{"schema":{"$ref":"#/components/schemas/L0"}}}}}}}},"components":{"schemas":{`)
	wide.WriteString(`"Self":{"allOf":[{"$ref":"#/components/schemas/Self"}]},`)
	for i := range 12 {
		wide.WriteString(fmt.Sprintf(`"L%d":{"allOf":[`, i))
		for j := range 6 {
			if j > 0 {
				wide.WriteString(",")
			}
			wide.WriteString(fmt.Sprintf(`{"$ref":"#/components/schemas/L%d"}`, i+1))
		}
		wide.WriteString(`]},`)
	}
	wide.WriteString(`"L12":{"type":"object","properties":{"s":{"$ref":"#/components/schemas/Self"}}}}}}`)
	doc, err := Parse(context.Background(), []byte(wide.String()), "wide.json", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Generate(doc, GenerateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out := res.Tools[0].OutputSchema; len(out) == 0 || len(out) > 64<<10 {
		t.Errorf("compact outputSchema of a 6^12 fan-out: %d bytes", len(out))
	}
}

// TestWriteToolsList: the streamed list is byte for byte EncodeToolsList.
func TestWriteToolsList(t *testing.T) {
	for _, file := range []string{"testdata/bodies.yaml", "testdata/text.yaml"} {
		res := loadGenerate(t, file, GenerateOptions{})
		want, err := EncodeToolsList(res.Tools)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := WriteToolsList(&got, res.Tools); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s: WriteToolsList differs from EncodeToolsList", file)
		}
	}
}

// TestNonEmptyPathParameters: a path parameter's schema refuses every
// value that expands to nothing (the gateway refuses those), for each
// type it allows, and keeps a stronger bound it already has.
func TestNonEmptyPathParameters(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]any
		want string
	}{
		{map[string]any{"type": "string"}, `{"minLength":1,"type":"string"}`},
		{map[string]any{"type": "object"}, `{"minProperties":1,"type":"object"}`},
		{map[string]any{"type": "array"}, `{"minItems":1,"type":"array"}`},
		{map[string]any{"type": []any{"string", "null"}}, `{"minLength":1,"type":["string","null"]}`},
		{map[string]any{"type": "integer"}, `{"type":"integer"}`},
		{map[string]any{}, `{"minLength":1}`},
		{map[string]any{"type": "string", "minLength": uint64(3)}, `{"minLength":3,"type":"string"}`},
	} {
		nonEmpty(tc.in)
		if got, _ := json.Marshal(tc.in); string(got) != tc.want {
			t.Errorf("nonEmpty = %s, want %s", got, tc.want)
		}
	}
}

// TestClosedComposition: additionalProperties: false beside an allOf
// (ShipEngine's bodies) means "nothing beyond the composed properties",
// not "no properties at all": the tool accepts the composed properties and
// still refuses others.
func TestClosedComposition(t *testing.T) {
	doc := []byte(`{"openapi":"3.0.3","info":{"title":"c","version":"1"},"paths":{"/rates":{"post":{"operationId":"estimate",
	  "requestBody":{"required":true,"content":{"application/json":{"schema":{"type":"object",
	    "allOf":[{"$ref":"#/components/schemas/Shipment"}],"oneOf":[{"required":["carrier"]},{"required":["service"]}],
	    "additionalProperties":false}}}},
	  "responses":{"200":{"description":"ok"}}}}},
	  "components":{"schemas":{"Shipment":{"type":"object","properties":{"carrier":{"type":"string"},"service":{"type":"string"},"weight":{"type":"number"}}}}}}`)
	d, err := Parse(context.Background(), doc, "c.json", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Generate(d, GenerateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tool := findTool(t, res, "estimate")
	s, err := CompileInputSchema(tool)
	if err != nil {
		t.Fatal(err)
	}
	args := func(body map[string]any) map[string]any {
		if a := findArg(t, tool, "body"); a.In == InWholeBody {
			return map[string]any{"body": body}
		}
		return body
	}
	if err := s.Validate(args(map[string]any{"carrier": "ups", "weight": 2.5})); err != nil {
		t.Errorf("the composed properties are refused: %v\n%s", err, tool.InputSchema)
	}
	if err := s.Validate(args(map[string]any{"carrier": "ups", "colour": "red"})); err == nil {
		t.Errorf("a property beyond the composition is accepted: %s", tool.InputSchema)
	}
}

// TestCompactOverBoundIsRetried: a compact schema over MaxOutputSchemaBytes
// is made again with fewer inlined nodes instead of being left out
// (GitHub's issue timeline: a oneOf of 20 event types).
func TestCompactOverBoundIsRetried(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"openapi":"3.0.0","paths":{"/a":{"get":{"responses":{"200":{"description":"x","content":{"application/json":{"schema":{"type":"array","items":{"oneOf":[`)
	for i := range 30 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"type":"object","properties":{`)
		for j := range 20 {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"field_%d_%d":{"type":"object","properties":{"x":{"type":"string"}}}`, i, j)
		}
		b.WriteString(`}}`)
	}
	b.WriteString(`]}}}}}}}}}}`)
	doc, err := Parse(context.Background(), []byte(b.String()), "wide.json", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Generate(doc, GenerateOptions{MaxOutputSchemaBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if out := res.Tools[0].OutputSchema; len(out) == 0 || len(out) > 8<<10 {
		t.Errorf("outputSchema %d bytes, want one within 8 KiB (warnings %v)", len(out), res.Warnings)
	}
}

// TestGenerateConsume: consuming the document gives the same tools and
// leaves the document without paths.
func TestGenerateConsume(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("testdata/*.json")
	files = append(files, more...)
	if dir := os.Getenv("MCPGATE_CORPUS"); dir != "" {
		files = append(files, filepath.Join(dir, "github", "api.github.com.json"), filepath.Join(dir, "apis-guru", "stripe.com.json"))
	}
	for _, f := range files {
		want := loadGenerate(t, f, GenerateOptions{})
		doc, err := Load(context.Background(), f, LoadOptions{})
		if err != nil {
			t.Fatalf("load %s: %v", f, err)
		}
		got, err := Generate(doc, GenerateOptions{Consume: true})
		if err != nil {
			t.Fatalf("generate %s: %v", f, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: consuming the document changed the result", f)
		}
		if n := doc.T.Paths.Len(); n != 0 {
			t.Errorf("%s: %d paths left in a consumed document", f, n)
		}
		if len(want.Tools) == 0 {
			t.Errorf("%s: no tools (the comparison proves nothing)", f)
		}
	}
}

// TestPack: packing leaves the tools equal, and each tool's arguments
// capacity-bounded within the shared array.
func TestPack(t *testing.T) {
	res := loadGenerate(t, "testdata/bodies.yaml", GenerateOptions{})
	want := make([]Tool, len(res.Tools))
	for i, tool := range res.Tools {
		want[i] = tool
		want[i].Route.Arguments = slices.Clone(tool.Route.Arguments)
		want[i].Meta = maps.Clone(tool.Meta)
	}
	pack(res.Tools)
	if !reflect.DeepEqual(res.Tools, want) {
		t.Fatal("pack changed the tools")
	}
	for i := range res.Tools {
		if a := res.Tools[i].Route.Arguments; cap(a) != len(a) {
			t.Errorf("%s: arguments have room past their end (%d of %d)", res.Tools[i].Name, len(a), cap(a))
		}
	}
}
