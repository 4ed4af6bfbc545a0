package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
)

// petDocs is a small API for unit tests.
func petDocs() []Doc {
	return []Doc{
		{API: "pets", Name: "listPets", Title: "List all pets", Method: "GET", Path: "/pets", OperationID: "listPets", Tags: []string{"pets"}, Params: []string{"limit"}},
		{API: "pets", Name: "createPet", Title: "Create a pet", Method: "POST", Path: "/pets", OperationID: "createPet", Tags: []string{"pets"}, Params: []string{"name", "tag"}},
		{API: "pets", Name: "showPetById", Title: "Info for a specific pet", Method: "GET", Path: "/pets/{petId}", OperationID: "showPetById", Tags: []string{"pets"}, Params: []string{"petId"}},
		{API: "pets", Name: "deletePet", Title: "Deletes a pet", Description: "<p>Removes the pet for good.</p>", Method: "DELETE", Path: "/pets/{petId}", OperationID: "deletePet", Tags: []string{"pets"}, Params: []string{"petId"}},
		{API: "pets", Name: "updatePet", Title: "Update a pet", Method: "PATCH", Path: "/pets/{petId}", OperationID: "updatePet", Tags: []string{"pets"}, Params: []string{"petId", "name"}},
		{API: "store", Name: "placeOrder", Title: "Place an order for a pet", Method: "POST", Path: "/store/orders", OperationID: "placeOrder", Tags: []string{"store"}, Schemas: []string{"Order"}},
		{API: "store", Name: "getInventory", Title: "Returns pet inventories by status", Method: "GET", Path: "/store/inventory", OperationID: "getInventory", Tags: []string{"store"}},
		{API: "store", Name: "getMe", Title: "The signed-in user", Method: "GET", Path: "/me", OperationID: "getMe"},
	}
}

func petIndex(t testing.TB, opts Options) *Index {
	t.Helper()
	ix, err := New(petDocs(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func names(rs []Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}

func TestWords(t *testing.T) {
	tests := []struct{ in, want string }{
		{"listPets", "list pets"},
		{"getHTTPStatus", "get http status"},
		{"repos/create-fork", "repos create fork"},
		{"user_IDs and URLsForUser", "user ids and urls for user"},
		{"/repos/{owner}/{repo}/pulls", "repos owner repo pulls"},
		{"<p>Retrieves a <code>PaymentMethod</code> &amp; more.</p>", "retrieves payment method more"},
		{"See [the docs](https://example.com/x_y) or https://a.b/c_d now", "see the docs or now"},
		{"a customer's card, v2 API", "customer card api"},
		{"we're sure it doesn’t, they'll see I'd can't", "we sure it does they see i can"},
		{"O'Brien's 'quoted' text", "brien quoted text"},
		{"microsoft.graph.sendMail", "microsoft graph send mail"},
		{"Ünïcode Straße", "ünïcode straße"},
		{"", ""},
	}
	for _, tt := range tests {
		var got []string
		words(tt.in, func(w string) { got = append(got, w) })
		if g := strings.Join(got, " "); g != tt.want {
			t.Errorf("words(%q) = %q, want %q", tt.in, g, tt.want)
		}
	}
}

func TestStem(t *testing.T) {
	// Porter2 (Snowball English) stems.
	for in, want := range map[string]string{
		"repositories": "repositori", "repository": "repositori", "pulls": "pull", "running": "run",
		"generously": "generous", "invoices": "invoic", "subscriptions": "subscript", "created": "creat",
	} {
		if got := stem(in); got != want {
			t.Errorf("stem(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSearch(t *testing.T) {
	ix := petIndex(t, Options{})
	ctx := context.Background()
	tests := []struct {
		query string
		first string
	}{
		{"remove a pet", "deletePet"},
		{"get rid of a pet", "deletePet"},
		{"add a new pet", "createPet"},
		{"change the name of my pet", "updatePet"},
		{"show me all pets", "listPets"},
		{"place an order", "placeOrder"},
		{"who am I", "getMe"},
	}
	for _, tt := range tests {
		res, err := ix.Search(ctx, Query{Text: tt.query})
		if err != nil {
			t.Fatalf("%q: %v", tt.query, err)
		}
		if len(res) == 0 || res[0].Name != tt.first {
			t.Errorf("%q: got %v, want %s first", tt.query, names(res), tt.first)
		}
		for i := 1; i < len(res); i++ {
			if res[i].Score > res[i-1].Score {
				t.Errorf("%q: results not best first: %v", tt.query, res)
			}
		}
	}
}

func TestSearchVisibilityAndAPI(t *testing.T) {
	ix := petIndex(t, Options{})
	ctx := context.Background()
	all, _ := ix.Search(ctx, Query{Text: "pet", Limit: 3})
	if len(all) != 3 {
		t.Fatalf("limit 3 gave %d results", len(all))
	}
	hidden := all[0].Name
	res, err := ix.Search(ctx, Query{Text: "pet", Limit: 3, Visible: func(n string) bool { return n != hidden }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Errorf("with %s hidden, %d results, want 3 (the best visible ones)", hidden, len(res))
	}
	for _, r := range res {
		if r.Name == hidden {
			t.Errorf("hidden tool %s appeared", hidden)
		}
	}
	res, _ = ix.Search(ctx, Query{Text: "pet", API: "store", Limit: 50})
	for _, r := range res {
		if r.API != "store" {
			t.Errorf("API filter store let %s (%s) through", r.Name, r.API)
		}
	}
	if len(res) == 0 {
		t.Error("API filter store found nothing")
	}
	none, _ := ix.Search(ctx, Query{Text: "pet", Visible: func(string) bool { return false }})
	if len(none) != 0 {
		t.Errorf("nothing visible, got %v", names(none))
	}
}

func TestSearchErrors(t *testing.T) {
	ix := petIndex(t, Options{})
	ctx := context.Background()
	if _, err := ix.Search(ctx, Query{Text: "  ?! "}); !errors.Is(err, ErrEmptyQuery) {
		t.Errorf("empty query: %v", err)
	}
	if _, err := ix.Search(ctx, Query{Text: strings.Repeat("pet ", 300)}); err == nil {
		t.Error("a 1,200-byte query was accepted")
	}
	res, err := ix.Search(ctx, Query{Text: "zebra quantum"})
	if err != nil || len(res) != 0 {
		t.Errorf("unknown words: %v, %v", res, err)
	}
	res, _ = ix.Search(ctx, Query{Text: "pet", Limit: 500})
	if len(res) > MaxLimit {
		t.Errorf("limit 500 gave %d results", len(res))
	}
}

func TestNewRejects(t *testing.T) {
	docs := petDocs()
	docs[1].Name = docs[0].Name
	if _, err := New(docs, Options{}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate names: %v", err)
	}
	docs = petDocs()
	docs[2].Name = ""
	if _, err := New(docs, Options{}); err == nil {
		t.Error("an empty name was accepted")
	}
}

func TestPlainBM25(t *testing.T) {
	ix := petIndex(t, Options{Ranking: PlainBM25})
	res, _ := ix.Search(context.Background(), Query{Text: "inventories"})
	if len(res) != 1 || res[0].Name != "getInventory" {
		t.Errorf("plain inventories: %v", names(res))
	}
	// No stemming in the baseline: "statuses" is not "status".
	res, _ = ix.Search(context.Background(), Query{Text: "statuses"})
	if len(res) != 0 {
		t.Errorf("plain statuses matched %v", names(res))
	}
}

func TestShortDescription(t *testing.T) {
	long := "<p>First sentence here. " + strings.Repeat("word ", 80) + "</p><p>Second paragraph.</p>"
	tests := []struct{ desc, title, want string }{
		{"", "Title", "Title"},
		{"<p>Retrieves a <code>Card</code>.</p><p>More.</p>", "", "Retrieves a Card."},
		{"Use [this](https://x.y) **now**.", "", "Use this now."},
	}
	for _, tt := range tests {
		if got := shortDescription(plainText(tt.desc), tt.title); got != tt.want {
			t.Errorf("shortDescription(%.30q) = %q, want %q", tt.desc, got, tt.want)
		}
	}
	for _, text := range []string{strings.Repeat("abc ", 100), long} {
		if got := shortDescription(plainText(text), ""); len(got) > 244 || !strings.HasSuffix(got, "…") || strings.Contains(got, "Second") {
			t.Errorf("long text cut to %d bytes: %q", len(got), got)
		}
	}
}

// petCatalog is a catalog over petDocs whose definitions carry schemas.
func petCatalog(t testing.TB, docs []Doc) *Catalog {
	t.Helper()
	ix, err := New(docs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defs := make([]mcp.Tool, len(docs))
	for i, d := range docs {
		defs[i] = mcp.Tool{Name: d.Name, Title: d.Title, Description: "Full: " + d.Title,
			InputSchema: json.RawMessage(`{"type":"object"}`)}
	}
	c, err := NewCatalog(ix, defs, "Pet Store")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCatalogTools(t *testing.T) {
	c := petCatalog(t, petDocs())
	tools := c.Tools()
	if got := []string{tools[0].Name, tools[1].Name, tools[2].Name}; !reflect.DeepEqual(got, []string{"search", "describe", "call"}) {
		t.Fatalf("tool names %v", got)
	}
	for _, tool := range tools {
		var schema map[string]any
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: inputSchema %s: %v", tool.Name, tool.InputSchema, err)
		}
		if _, err := openapi.CompileSchema(tool.Name, tool.InputSchema); err != nil {
			t.Errorf("%s: %v", tool.Name, err)
		}
		if len(tool.OutputSchema) > 0 {
			if _, err := openapi.CompileSchema(tool.Name, tool.OutputSchema); err != nil {
				t.Errorf("%s output: %v", tool.Name, err)
			}
		}
	}
	// The whole discovery tools/list stays under 8 KiB whatever the title
	// and however many tools (the title is bounded).
	docs := petDocs()
	docs[0].API = "other" // several APIs: search takes "api"
	big, err := NewCatalog(petIndex(t, Options{}), petCatalog(t, docs).defsList(), strings.Repeat("Very Long API Title ", 50))
	if err != nil {
		t.Fatal(err)
	}
	list, err := json.Marshal(map[string]any{"tools": big.Tools()})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) > 8<<10 {
		t.Errorf("discovery tools/list is %d bytes, over 8 KiB", len(list))
	}
	t.Logf("discovery tools/list: %d bytes", len(list))
}

func (c *Catalog) defsList() []mcp.Tool {
	var out []mcp.Tool
	for _, d := range c.defs {
		out = append(out, *d)
	}
	return out
}

func TestCatalogSearch(t *testing.T) {
	docs := petDocs()
	for i := range docs {
		docs[i].API = "pets"
	}
	c := petCatalog(t, docs)
	ctx := context.Background()
	res := c.Search(ctx, json.RawMessage(`{"query":"remove a pet","limit":2}`), nil)
	if res.IsError {
		t.Fatalf("search failed: %v", res.Content)
	}
	sc := res.StructuredContent.(map[string]any)["results"].([]Result)
	if len(sc) != 2 || sc[0].Name != "deletePet" || sc[0].Method != "DELETE" || sc[0].Path != "/pets/{petId}" {
		t.Errorf("results %+v", sc)
	}
	if sc[0].Description != "Removes the pet for good." {
		t.Errorf("description %q", sc[0].Description)
	}
	if sc[0].API != "" {
		t.Errorf("one-API catalog still names the API: %q", sc[0].API)
	}
	if text := res.Content[0].Text; !strings.Contains(text, "1. deletePet — DELETE /pets/{petId}") {
		t.Errorf("text rendering:\n%s", text)
	}
	for _, bad := range []string{`{}`, `{"query":""}`, `{"query":"x","limit":51}`, `{"query":"x","limit":-1}`, `{"query":"x","extra":1}`, `{"query":3}`, `[1]`} {
		if r := c.Search(ctx, json.RawMessage(bad), nil); !r.IsError {
			t.Errorf("search %s: no tool error", bad)
		}
	}
}

func TestCatalogDescribeHiddenIsUnknown(t *testing.T) {
	docs := petDocs()
	with := petCatalog(t, docs)
	without := petCatalog(t, append(docs[:3:3], docs[4:]...)) // no deletePet
	ctx := context.Background()
	hide := func(n string) bool { return n != "deletePet" }
	for _, args := range []string{`{"names":["deletePet"]}`, `{"names":["listPets","deletePet"]}`} {
		a := with.Describe(ctx, json.RawMessage(args), hide)
		b := without.Describe(ctx, json.RawMessage(args), nil)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("describe %s: hidden answers\n%v\nunknown answers\n%v", args, a, b)
		}
	}
	r := with.Describe(ctx, json.RawMessage(`{"names":["listPets","nope"]}`), nil)
	if r.IsError || !strings.Contains(r.Content[0].Text, `"unknown":["nope"]`) || !strings.Contains(r.Content[0].Text, `"Full: List all pets"`) {
		t.Errorf("describe: %v", r.Content[0].Text)
	}
	if r := with.Describe(ctx, json.RawMessage(`{"names":["nope"]}`), nil); !r.IsError {
		t.Error("describe of only unknown names is not an error")
	}
	if r := with.Describe(ctx, json.RawMessage(`{"names":[]}`), nil); !r.IsError {
		t.Error("describe of no names is not an error")
	}
	if _, ok := with.Definition("deletePet", hide); ok {
		t.Error("Definition of a hidden tool")
	}
	if _, ok := with.Index().Lookup("deletePet", hide); ok {
		t.Error("Lookup of a hidden tool")
	}
}

func TestNewCatalogNeedsDefinitions(t *testing.T) {
	ix := petIndex(t, Options{})
	if _, err := NewCatalog(ix, nil, ""); err == nil {
		t.Error("a catalog without definitions was accepted")
	}
}

func TestParseCall(t *testing.T) {
	tests := []struct {
		in, name, args string
		ok             bool
	}{
		{`{"name":"deletePet","arguments":{"petId":"7"}}`, "deletePet", `{"petId":"7"}`, true},
		{`{"name":"listPets"}`, "listPets", "", true},
		{`{"name":"listPets","arguments":null}`, "listPets", "", true},
		{`{"name":"listPets","arguments":[1]}`, "", "", false},
		{`{"name":"listPets","arguments":"x"}`, "", "", false},
		{`{"arguments":{}}`, "", "", false},
		{`{"name":"x","other":1}`, "", "", false},
		{`not json`, "", "", false},
	}
	for _, tt := range tests {
		name, args, err := ParseCall(json.RawMessage(tt.in))
		if (err == nil) != tt.ok || name != tt.name || string(args) != tt.args {
			t.Errorf("ParseCall(%s) = %q, %s, %v", tt.in, name, args, err)
		}
	}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		mode      Mode
		bytes     int
		budget    int
		discovery bool
	}{
		{ModeAuto, 80000, 0, false},
		{ModeAuto, 80001, 0, true},
		{ModeAuto, 8 << 20, 0, true},
		{ModeAuto, 4001, 1000, true},
		{ModeAuto, 4000, 1000, false},
		{ModeAll, 8 << 20, 0, false},
		{ModeDiscovery, 10, 0, true},
		{"", 80001, 0, true},
	}
	for _, tt := range tests {
		d := Decide(tt.mode, tt.bytes, tt.budget)
		if d.Discovery != tt.discovery {
			t.Errorf("Decide(%q, %d, %d) = %v (%s)", tt.mode, tt.bytes, tt.budget, d.Discovery, d)
		}
	}
	for in, want := range map[string]Mode{"": ModeAuto, "ALL": ModeAll, " discovery ": ModeDiscovery, "auto": ModeAuto} {
		if m, err := ParseMode(in); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, m, err)
		}
	}
	if _, err := ParseMode("some"); err == nil {
		t.Error("ParseMode(some) accepted")
	}
}

func TestFromToolsAndPinned(t *testing.T) {
	src := `{"openapi":"3.0.3","info":{"title":"Pets","version":"1"},"paths":{
		"/pets":{"get":{"operationId":"listPets","tags":["pets"],"summary":"List pets","x-mcp-pin":true,
			"parameters":[{"name":"limit","in":"query","schema":{"type":"integer"}}],
			"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"array","items":{"$ref":"#/components/schemas/Pet"}}}}}}},
			"post":{"operationId":"createPet","summary":"Create","requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/NewPet"}}}},"responses":{"201":{"description":"ok"}}}},
		"/pets/{id}":{"delete":{"operationId":"deletePet","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"204":{"description":"gone"}}}}},
		"components":{"schemas":{"Pet":{"type":"object"},"NewPet":{"type":"object"}}}}`
	doc, err := openapi.Parse(context.Background(), []byte(src), "pets.json", openapi.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := openapi.Generate(doc, openapi.GenerateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	docs := FromTools("pets", res.Tools, ReadOperations(doc))
	byName := map[string]Doc{}
	for _, d := range docs {
		byName[d.Name] = d
	}
	if d := byName["listPets"]; !reflect.DeepEqual(d.Tags, []string{"pets"}) || !reflect.DeepEqual(d.Schemas, []string{"Pet"}) || !reflect.DeepEqual(d.Params, []string{"limit"}) || d.API != "pets" || d.Method != "GET" {
		t.Errorf("listPets: %+v", d)
	}
	if d := byName["createPet"]; !reflect.DeepEqual(d.Schemas, []string{"NewPet"}) {
		t.Errorf("createPet schemas %v", d.Schemas)
	}
	pinned, unmatched := Pinned(res.Tools, ReadOperations(doc), []string{"DELETE /pets/{id}", "nope"})
	if !reflect.DeepEqual(pinned, []string{"listPets", "deletePet"}) || !reflect.DeepEqual(unmatched, []string{"nope"}) {
		t.Errorf("Pinned = %v, %v", pinned, unmatched)
	}
}

// TestSearchConcurrent: one index serves parallel searches (pooled scratch
// memory) with the same results as serial ones.
func TestSearchConcurrent(t *testing.T) {
	ix := petIndex(t, Options{})
	ctx := context.Background()
	queries := []string{"remove a pet", "show me all pets", "place an order", "who am I", "change the name of my pet"}
	want := map[string]string{}
	for _, q := range queries {
		res, _ := ix.Search(ctx, Query{Text: q})
		want[q] = strings.Join(names(res), ",")
	}
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func(g int) {
			for i := 0; i < 200; i++ {
				q := queries[(g+i)%len(queries)]
				res, err := ix.Search(ctx, Query{Text: q})
				if err != nil || strings.Join(names(res), ",") != want[q] {
					done <- fmt.Errorf("%q: %v %v", q, names(res), err)
					return
				}
			}
			done <- nil
		}(g)
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestBinaryBodyActions: a file response implies download and a file
// request body upload, whatever the method says.
func TestBinaryBodyActions(t *testing.T) {
	for _, tc := range []struct {
		mt     string
		format string
		want   bool
	}{
		{"application/json", "", false},
		{"application/json", "binary", true},
		{"application/octet-stream", "", true},
		{"application/pdf", "", true},
		{"image/png", "", true},
		{"text/plain", "", false},
		{"text/csv", "binary", true},
		{"application/x-www-form-urlencoded", "", false},
		{"*/*", "", false},
		{"*/*", "binary", true},
		{"application/vnd.github+json", "", false},
	} {
		content := openapi3.Content{tc.mt: openapi3.NewMediaType().WithSchema(openapi3.NewStringSchema().WithFormat(tc.format))}
		if got := binaryBody(content); got != tc.want {
			t.Errorf("%s (format %q): binary %v, want %v", tc.mt, tc.format, got, tc.want)
		}
	}
	docs := []Doc{
		{Name: "get_report", Method: "GET", Path: "/reports/{id}", Title: "Get a report"},
		{Name: "get_report_content", Method: "GET", Path: "/reports/{id}/content", Title: "Get a report", Actions: []string{"download"}},
	}
	ix, err := New(docs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ix.Search(t.Context(), Query{Text: "download the report"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res); len(got) == 0 || got[0] != "get_report_content" {
		t.Errorf("download the report: %v, want get_report_content first", got)
	}
}

// indexOf is an index over docs (the tests' own small APIs).
func indexOf(t *testing.T, docs []Doc) *Index {
	t.Helper()
	ix, err := New(docs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// search is ix's answer to query.
func search(t *testing.T, ix *Index, query string) []Result {
	t.Helper()
	res, err := ix.Search(t.Context(), Query{Text: query})
	if err != nil {
		t.Fatalf("%q: %v", query, err)
	}
	return res
}

// searchOf is the answer to query of an index over docs.
func searchOf(t *testing.T, docs []Doc, query string) []Result {
	t.Helper()
	return search(t, indexOf(t, docs), query)
}

// TestOpenReadsWhatExists checks that "open" creates with an indefinite
// object and reads with a definite or possessive one.
func TestOpenReadsWhatExists(t *testing.T) {
	docs := []Doc{
		{Name: "create_notebook", Method: "POST", Path: "/me/notebooks", Title: "Create a notebook"},
		{Name: "get_notebook", Method: "GET", Path: "/me/notebooks/{id}", Title: "Get a notebook"},
	}
	ix := indexOf(t, docs)
	for _, tc := range []struct{ query, first string }{
		{"open a notebook for my class", "create_notebook"},
		{"open a new notebook", "create_notebook"},
		{"open my notebook", "get_notebook"},
		{"open the notebook", "get_notebook"},
		{"open this notebook", "get_notebook"},
	} {
		res := search(t, ix, tc.query)
		if got := names(res); len(got) == 0 || got[0] != tc.first {
			t.Errorf("%q: %v, want %s first", tc.query, got, tc.first)
		}
	}
}

// TestScopeNamedKeepsItsMember checks that of a family of near-duplicates
// the member kept first is the one whose scope the query names, else the
// best-scored one.
func TestScopeNamedKeepsItsMember(t *testing.T) {
	// The organization's secret matches the query better ("deploy") and
	// its path is shorter; "repo" is in most paths, so that naming the
	// repository gives its member little on its own.
	docs := []Doc{
		{Name: "delete_org_secret", Method: "DELETE", Path: "/orgs/{org}/secrets/{name}", Title: "Delete a deploy secret"},
		{Name: "delete_repo_secret", Method: "DELETE", Path: "/repos/{owner}/{repo}/secrets/{name}", Title: "Delete a secret"},
		{Name: "get_user_calendar", Method: "GET", Path: "/users/{id}/calendar", Title: "Get calendar"},
		{Name: "get_my_calendar", Method: "GET", Path: "/me/calendar", Title: "Get calendar"},
	}
	for _, leaf := range []string{"issues", "pulls", "commits", "branches", "releases", "tags", "labels", "hooks"} {
		docs = append(docs, Doc{Name: "list_" + leaf, Method: "GET", Path: "/repos/{owner}/{repo}/" + leaf, Title: "List " + leaf})
	}
	ix := indexOf(t, docs)
	for _, tc := range []struct{ query, first string }{
		{"remove the deploy secret from this repo", "delete_repo_secret"},
		{"remove the deploy secret from the org", "delete_org_secret"},
		{"show my calendar", "get_my_calendar"},
		{"show the calendar of a user", "get_user_calendar"},
	} {
		res := search(t, ix, tc.query)
		if got := names(res); len(got) < 2 || got[0] != tc.first || res[1].Score >= res[0].Score {
			t.Errorf("%q: %v, want %s first, well ahead", tc.query, res, tc.first)
		}
	}
}

// TestDiversifyKeepsDistinctOperations: a family's members under one root
// whose titles differ are different operations, not copies, and keep their
// scores; copies (one title, or another root) are demoted.
func TestDiversifyKeepsDistinctOperations(t *testing.T) {
	ix := indexOf(t, []Doc{
		{Name: "list_commit_pulls", Method: "GET", Path: "/repos/{owner}/{repo}/commits/{sha}/pulls", Title: "List pull requests associated with a commit"},
		{Name: "list_pulls", Method: "GET", Path: "/repos/{owner}/{repo}/pulls", Title: "List pull requests"},
		{Name: "list_my_events", Method: "GET", Path: "/me/events", Title: "List events"},
		{Name: "list_my_calendar_events", Method: "GET", Path: "/me/calendar/events", Title: "List events"},
		{Name: "list_user_events", Method: "GET", Path: "/users/{id}/events", Title: "List events"},
	})
	for _, tc := range []struct {
		query    string
		demoted  bool
		from, to string
	}{
		{"list the pull requests of a commit", false, "list_commit_pulls", "list_pulls"},
		{"list my events", true, "list_my_events", "list_my_calendar_events"},
		{"list my events", true, "list_my_events", "list_user_events"},
	} {
		hits := ix.rank(ix.compile(tc.query), 10, Query{})
		raw := map[string]float32{}
		for _, h := range hits {
			raw[ix.docs[h.doc].Name] = h.score
		}
		res := search(t, ix, tc.query)
		got := map[string]float64{}
		for _, r := range res {
			got[r.Name] = r.Score
		}
		if len(res) == 0 || res[0].Name != tc.from {
			t.Fatalf("%q: %v, want %s first", tc.query, res, tc.from)
		}
		lost := got[tc.to] < math.Round(float64(raw[tc.to])*1000)/1000-0.001
		if lost != tc.demoted {
			t.Errorf("%q: %s scored %.3f in the ranking and %.3f in the results; demoted %v, want %v",
				tc.query, tc.to, raw[tc.to], got[tc.to], lost, tc.demoted)
		}
	}
}

// TestNamedActions checks that an action named as a noun counts as the
// action: after a light verb in a request ("make a copy"), and as the thing
// a tool's title creates ("Create a fork").
func TestNamedActions(t *testing.T) {
	docs := []Doc{
		{Name: "create_fork", Method: "POST", Path: "/repos/{owner}/{repo}/forks", Title: "Create a fork"},
		{Name: "create_release", Method: "POST", Path: "/repos/{owner}/{repo}/releases", Title: "Create a release", Description: "Users with push access to the repository can create a release."},
		{Name: "upload_asset", Method: "POST", Path: "/repos/{owner}/{repo}/releases/{id}/assets", Title: "Upload a release asset", Description: "Make a copy of a file available as a release asset."},
	}
	ix := indexOf(t, docs)
	for _, query := range []string{"make my own copy of this repository", "duplicate the repository", "take a copy of the repository", "create a duplicate of the repository"} {
		res := search(t, ix, query)
		if got := names(res); len(got) == 0 || got[0] != "create_fork" {
			t.Errorf("%q: %v, want create_fork first", query, res)
		}
	}
}

// TestDisableDeletes checks that turning a setting off meets an API that
// deletes it (GitHub's DELETE …/protection) as well as one that updates it.
func TestDisableDeletes(t *testing.T) {
	docs := []Doc{
		{Name: "update_protection", Method: "PUT", Path: "/repos/{owner}/{repo}/branches/{branch}/protection", Title: "Update branch protection"},
		{Name: "delete_protection", Method: "DELETE", Path: "/repos/{owner}/{repo}/branches/{branch}/protection", Title: "Delete branch protection"},
		{Name: "rename_branch", Method: "POST", Path: "/repos/{owner}/{repo}/branches/{branch}/rename", Title: "Rename a branch"},
	}
	res := searchOf(t, docs, "disable branch protection")
	if got := names(res); len(got) < 2 || !slices.Contains(got[:2], "delete_protection") {
		t.Errorf("%v, want delete_protection among the first two", res)
	}
}

// TestRankingRules checks, each on a small API of its own, rules of the
// ranking whose case is one request and the tool it must rank first.
func TestRankingRules(t *testing.T) {
	for _, tc := range []struct {
		rule, query, first string
		docs               []Doc
	}{
		{
			rule:  "a request's first word meets the verb its tools' titles start with, even a verb of no action group",
			query: "star this repo", first: "star_repo",
			docs: []Doc{
				{Name: "search_repos", Method: "GET", Path: "/search/repositories", Title: "Search repositories by their stars", Description: "Find repositories by stars, forks and language.", Params: []string{"stars", "sort"}},
				{Name: "list_repo_stars", Method: "GET", Path: "/repos/{owner}/{repo}/stars", Title: "List the stars of a repository"},
				{Name: "star_repo", Method: "PUT", Path: "/user/starred/{owner}/{repo}", Title: "Star a repository for the authenticated user"},
				{Name: "list_stargazers", Method: "GET", Path: "/repos/{owner}/{repo}/stargazers", Title: "List stargazers"},
			},
		},
		{
			rule:  "the words of a clause telling why or when count for less than the request's own",
			query: "watch this repository so I hear about new releases", first: "watch_repo",
			docs: []Doc{
				{Name: "watch_repo", Method: "PUT", Path: "/repos/{owner}/{repo}/subscription", Title: "Watch a repository"},
				{Name: "list_releases", Method: "GET", Path: "/repos/{owner}/{repo}/releases", Title: "List new releases of a repository"},
			},
		},
		{
			rule:  "what comes \"along with\" the thing asked for counts for less than the thing",
			query: "tear down the staging environment along with its protection rules", first: "delete_environment",
			docs: []Doc{
				{Name: "delete_environment", Method: "DELETE", Path: "/repos/{owner}/{repo}/environments/{environment_name}", Title: "Delete an environment"},
				{Name: "delete_protection_rule", Method: "DELETE", Path: "/repos/{owner}/{repo}/environments/{environment_name}/protection_rules/{rule_id}", Title: "Disable a protection rule of an environment"},
				{Name: "list_protection_rules", Method: "GET", Path: "/repos/{owner}/{repo}/environments/{environment_name}/protection_rules", Title: "List the protection rules of an environment"},
				{Name: "create_protection_rule", Method: "POST", Path: "/repos/{owner}/{repo}/environments/{environment_name}/protection_rules", Title: "Create a protection rule for an environment"},
				{Name: "get_protection_rule", Method: "GET", Path: "/repos/{owner}/{repo}/environments/{environment_name}/protection_rules/{rule_id}", Title: "Get a protection rule of an environment"},
			},
		},
		{
			rule:  "to make it something sets a state on a thing that exists; to make her an owner adds her",
			query: "make it private again", first: "update_repo",
			docs: []Doc{
				{Name: "create_repo", Method: "POST", Path: "/user/repos", Title: "Create a repository", Params: []string{"private", "name"}},
				{Name: "update_repo", Method: "PATCH", Path: "/repos/{owner}/{repo}", Title: "Update a repository", Params: []string{"private", "archived"}},
			},
		},
		{
			rule:  "to make me a new one creates it",
			query: "make me a new private repo", first: "create_repo",
			docs: []Doc{
				{Name: "create_repo", Method: "POST", Path: "/user/repos", Title: "Create a repository for the authenticated user"},
				{Name: "update_repo", Method: "PATCH", Path: "/repos/{owner}/{repo}", Title: "Update a repository", Description: "Make a repository private or public, or rename it.", Params: []string{"private", "archived"}},
			},
		},
		{
			rule:  "to make her an owner adds her as one",
			query: "make her an owner of the group", first: "add_owner",
			docs: []Doc{
				{Name: "update_group", Method: "PATCH", Path: "/groups/{id}", Title: "Update group", Params: []string{"owners"}},
				{Name: "add_owner", Method: "POST", Path: "/groups/{id}/owners", Title: "Add an owner to a group"},
			},
		},
		{
			rule:  "a question for which things, in the plural, wants a list",
			query: "which subscriptions are past due?", first: "list_subscriptions",
			docs: []Doc{
				{Name: "get_subscription", Method: "GET", Path: "/subscriptions/{id}", Title: "Retrieve a subscription", Description: "Its status: active, past due or canceled."},
				{Name: "list_subscriptions", Method: "GET", Path: "/subscriptions", Title: "List subscriptions", Description: "By status: active, past due or canceled."},
			},
		},
		{
			rule:  "him, her and his point at another person: a user, not the caller",
			query: "take that license off him", first: "user_assign_license",
			docs: []Doc{
				{Name: "me_assign_license", Method: "POST", Path: "/me/assignLicense", Title: "Invoke action assignLicense", Description: "Add or remove licenses."},
				{Name: "user_assign_license", Method: "POST", Path: "/users/{user-id}/assignLicense", Title: "Invoke action assignLicense", Description: "Add or remove licenses."},
			},
		},
		{
			rule:  "\"give me\", \"show me\": the caller is told, not asked about",
			query: "show me the public repositories", first: "list_public_repos",
			docs: []Doc{
				{Name: "list_my_repos", Method: "GET", Path: "/user/repos", Title: "List repositories for the authenticated user", Description: "Public and private ones."},
				{Name: "list_public_repos", Method: "GET", Path: "/repositories", Title: "List public repositories"},
			},
		},
		{
			rule:  "a thing with its number (\"issue 212\") is one of them: tools that take one come first",
			query: "what have people said in the comments on issue 212", first: "list_issue_comments",
			docs: []Doc{
				{Name: "list_repo_comments", Method: "GET", Path: "/repos/{owner}/{repo}/issues/comments", Title: "List issue comments for a repository"},
				{Name: "list_issue_comments", Method: "GET", Path: "/repos/{owner}/{repo}/issues/{issue_number}/comments", Title: "List issue comments"},
			},
		},
		{
			rule:  "to stop doing a thing is its undoing where the API has one",
			query: "stop following octo-spammer", first: "unfollow_user",
			docs: []Doc{
				{Name: "follow_user", Method: "PUT", Path: "/user/following/{username}", Title: "Follow a user"},
				{Name: "unfollow_user", Method: "DELETE", Path: "/user/following/{username}", Title: "Unfollow a user"},
				{Name: "list_following", Method: "GET", Path: "/user/following", Title: "List the people the authenticated user follows"},
			},
		},
		{
			rule:  "a question's action words qualify what is read (\"what's new\") rather than ask to act",
			query: "what's new in my messages?", first: "list_messages",
			docs: []Doc{
				{Name: "create_message", Method: "POST", Path: "/me/messages", Title: "Create new navigation property to messages for me"},
				{Name: "list_messages", Method: "GET", Path: "/me/messages", Title: "List messages"},
				{Name: "create_event", Method: "POST", Path: "/me/events", Title: "Create new navigation property to events for me"},
				{Name: "create_contact", Method: "POST", Path: "/me/contacts", Title: "Create new navigation property to contacts for me"},
			},
		},
		{
			rule:  "saving something puts it there: a create, not a download",
			query: "save Joe Rossi to my contacts", first: "create_contact",
			docs: []Doc{
				{Name: "create_contact", Method: "POST", Path: "/me/contacts", Title: "Create contact"},
				{Name: "export_contacts", Method: "GET", Path: "/me/contacts/export", Title: "Export contacts", Description: "Download contacts as a file."},
				{Name: "update_contact_folder", Method: "PATCH", Path: "/me/contactFolders/{id}", Title: "Update contact folder"},
			},
		},
		{
			rule:  "to spin up or stand up a thing is to create it",
			query: "spin up a team for the sales crew", first: "create_team",
			docs: []Doc{
				{Name: "create_team", Method: "POST", Path: "/teams", Title: "Create team"},
				{Name: "start_stream", Method: "POST", Path: "/teams/{id}/streams/{id}/start", Title: "Start a stream of a team", Description: "Begins to spin the team's live stream."},
				{Name: "update_team", Method: "PATCH", Path: "/teams/{id}", Title: "Update team"},
			},
		},
		{
			rule:  "an OData reference links an object to a collection: POST adds it, whatever its title says",
			query: "add Ana to the Sales group", first: "add_group_member_ref",
			docs: []Doc{
				{Name: "add_group_member_ref", Method: "POST", Path: "/groups/{group-id}/members/$ref", Title: "Create new navigation property ref to members for groups"},
				{Name: "add_policy_group", Method: "POST", Path: "/groupLifecyclePolicies/{policy-id}/addGroup", Title: "Invoke action addGroup"},
				{Name: "add_group_favorite", Method: "POST", Path: "/groups/{group-id}/addFavorite", Title: "Invoke action addFavorite"},
				{Name: "list_group_members", Method: "GET", Path: "/groups/{group-id}/members", Title: "List group members"},
			},
		},
		{
			rule:  "a word that picks which one (\"her last email\") counts for less than what is asked",
			query: "reply to her last email", first: "reply_mail",
			docs: []Doc{
				{Name: "reply_mail", Method: "POST", Path: "/me/messages/{id}/reply", Title: "Reply to a message", Description: "Reply to the sender of an email."},
				{Name: "reply_chat", Method: "POST", Path: "/me/chats/{id}/messages/{id}/replies", Title: "Reply to a message in a chat", Description: "Sends a reply; the chat's last message changes.", Params: []string{"lastModified"}},
			},
		},
		{
			rule:  "to archive a thing is to update it, and the request's verb makes its other clause context",
			query: "archive this repo, we're not maintaining it anymore", first: "update_repo",
			docs: []Doc{
				{Name: "update_repo", Method: "PATCH", Path: "/repos/{owner}/{repo}", Title: "Update a repository", Params: []string{"archived", "description"}},
				{Name: "download_archive", Method: "GET", Path: "/repos/{owner}/{repo}/tarball/{ref}", Title: "Download a repository archive (tar)"},
				{Name: "list_maintainers", Method: "GET", Path: "/repos/{owner}/{repo}/maintainers", Title: "List the maintainers of a repository"},
			},
		},
		{
			rule:  "a title's status before its verb is not the verb (\"Closing down - Get a classroom\")",
			query: "close the classroom", first: "update_classroom",
			docs: []Doc{
				{Name: "get_classroom", Method: "GET", Path: "/classrooms/{id}", Title: "Closing down - Get a classroom"},
				{Name: "update_classroom", Method: "PATCH", Path: "/classrooms/{id}", Title: "Update a classroom", Params: []string{"state"}},
			},
		},
		{
			rule:  "a question that asks who reads the people of what it names",
			query: "who is in this chat", first: "list_chat_members",
			docs: []Doc{
				{Name: "get_chat", Method: "GET", Path: "/chats/{chat-id}", Title: "Get chat"},
				{Name: "list_chat_members", Method: "GET", Path: "/chats/{chat-id}/members", Title: "List members of a chat"},
				{Name: "list_chat_messages", Method: "GET", Path: "/chats/{chat-id}/messages", Title: "List messages in a chat"},
			},
		},
		{
			rule:  "what a message is to say counts for less than the request's own words",
			query: "reply to the email saying the invoice is paid", first: "reply_message",
			docs: []Doc{
				{Name: "reply_message", Method: "POST", Path: "/me/messages/{id}/reply", Title: "Reply to a message"},
				{Name: "pay_invoice", Method: "POST", Path: "/invoices/{id}/pay", Title: "Pay an invoice", Description: "Marks the invoice paid; an email is sent."},
			},
		},
		{
			rule:  "a sentence that tells the circumstances counts for less than the one that asks",
			query: "The order shipped today, the customer paid the invoice. Refund the charge", first: "refund_charge",
			docs: []Doc{
				{Name: "refund_charge", Method: "POST", Path: "/charges/{id}/refund", Title: "Refund a charge"},
				{Name: "pay_order", Method: "POST", Path: "/orders/{id}/pay", Title: "Pay an order", Description: "Pays the order once shipped, as the customer's invoice says."},
				{Name: "pay_invoice", Method: "POST", Path: "/invoices/{id}/pay", Title: "Pay an invoice of a customer"},
			},
		},
		{
			rule:  "a request's values (an address, a repository's name) name no operation",
			query: "email dana@contoso.com", first: "send_mail",
			docs: []Doc{
				{Name: "send_mail", Method: "POST", Path: "/me/sendMail", Title: "Send mail"},
				{Name: "contoso_report", Method: "GET", Path: "/reports/emailActivity", Title: "Get the email activity of a domain", Description: "For example dana@contoso.com or contoso.com."},
			},
		},
		{
			rule:  "a file's name says it is a file",
			query: "delete old-report.docx from my drive", first: "delete_item",
			docs: []Doc{
				{Name: "delete_item", Method: "DELETE", Path: "/drive/items/{id}", Title: "Delete a file or folder"},
				{Name: "delete_report", Method: "DELETE", Path: "/reports/{id}", Title: "Delete an old report"},
			},
		},
	} {
		res := searchOf(t, tc.docs, tc.query)
		if got := names(res); len(got) == 0 || got[0] != tc.first {
			t.Errorf("%s: %q gave %v, want %s first", tc.rule, tc.query, got, tc.first)
		}
	}
}

// TestEveryTime: "every" and "each" ask for a whole collection ("every
// pet"), but not before a unit of time ("every time", "each week"), where
// they say how often.
func TestEveryTime(t *testing.T) {
	ix := petIndex(t, Options{})
	list, ok := ix.terms[actionToken("list")]
	if !ok {
		t.Fatal("the pet index has no list action")
	}
	for query, want := range map[string]bool{
		"show every pet": true, "each pet's tags": true,
		"tag a pet every time": false, "update the pet each week": false,
	} {
		got := false
		for _, c := range ix.compile(query) {
			for _, v := range c.vs {
				got = got || v.term == list
			}
		}
		if got != want {
			t.Errorf("%q asks for a list: %v, want %v", query, got, want)
		}
	}
}

// TestCollapseSpaces: collapseSpaces is the start of strings.Fields joined
// by single spaces, at least limit bytes of it when there are as many.
func TestCollapseSpaces(t *testing.T) {
	for _, s := range []string{"", "   ", " a  b\tc\n\nd ", "x\u00a0y\u2003 z", "\xffa \xfe", strings.Repeat("word  ", 100)} {
		whole := strings.Join(strings.Fields(s), " ")
		for _, limit := range []int{0, 1, 3, 10, 240, 1000} {
			got := collapseSpaces(s, limit)
			if !strings.HasPrefix(whole, got) || len(got) < min(len(whole), limit+1) {
				t.Errorf("collapseSpaces(%q, %d) = %q, want a prefix of %q of at least %d bytes", s, limit, got, whole, min(len(whole), limit+1))
			}
		}
	}
}

// TestExactNames: a query that is a tool's name, its operationId or its
// path (after its method or not, whatever its parameters are called) puts
// those tools first; a tool the caller may not see is not among them.
func TestExactNames(t *testing.T) {
	ix := petIndex(t, Options{})
	hidden := func(name string) bool { return name != "deletePet" }
	for _, tc := range []struct {
		query   string
		visible func(string) bool
		first   []string
	}{
		{"showPetById", nil, []string{"showPetById"}},
		{"GET /pets/{id}", nil, []string{"showPetById"}},
		{"get /pets/{petId}/", nil, []string{"showPetById"}},
		{"/pets/{petId}", nil, []string{"showPetById", "deletePet", "updatePet"}},
		{"/pets/{petId}", hidden, []string{"showPetById", "updatePet"}},
		{"DELETE /pets/{x}", hidden, nil},
		{"/store/orders", nil, []string{"placeOrder"}},
		{"/pets", nil, []string{"listPets", "createPet"}},
		{"get /pets", nil, []string{"listPets"}},
	} {
		res, err := ix.Search(context.Background(), Query{Text: tc.query, Visible: tc.visible})
		if err != nil {
			t.Fatalf("%q: %v", tc.query, err)
		}
		got := names(res)
		if len(got) < len(tc.first) || !slices.Equal(got[:len(tc.first)], tc.first) {
			t.Errorf("%q gave %v, want %v first", tc.query, got, tc.first)
		}
		for _, n := range got {
			if tc.visible != nil && !tc.visible(n) {
				t.Errorf("%q gave the hidden %s", tc.query, n)
			}
		}
	}
}

// TestODataReference: an OData reference is indexed by what it does (its
// verb is to add or remove) and by the resource it links (not "$ref"); an
// OData function's leaf is its name's head noun.
func TestODataReference(t *testing.T) {
	ix, err := New([]Doc{
		{Name: "add_ref", Method: "POST", Path: "/groups/{group-id}/members/$ref", Title: "Create new navigation property ref to members for groups"},
		{Name: "remove_ref", Method: "DELETE", Path: "/groups/{group-id}/members/{id}/$ref", Title: "Delete ref of navigation property members for groups"},
		{Name: "get_photo", Method: "GET", Path: "/me/photo/$value", Title: "Get media content for the navigation property photo"},
		{Name: "file_counts", Method: "GET", Path: "/reports/microsoft.graph.getOneDriveUsageFileCounts(period='{period}')", Title: "Invoke function getOneDriveUsageFileCounts"},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	has := func(term string, doc int32) bool {
		id, ok := ix.terms[term]
		return ok && slices.ContainsFunc(ix.postings[id], func(p posting) bool { return p.doc == doc })
	}
	for _, tc := range []struct {
		term string
		doc  int32
		want bool
	}{
		{verbToken(stem("add")), 0, true},
		{verbToken(stem("remove")), 1, true},
		{verbToken(stem("add")), 2, false},
		{leafToken(stem("members")), 0, true},
		{leafToken(stem("members")), 1, true},
		{leafToken(stem("photo")), 2, true},
		{leafToken("ref"), 0, false},
		// a function acts on its head noun, not on every word of its name
		{leafToken(stem("counts")), 3, true},
		{leafToken(stem("drive")), 3, false},
		{leafToken(stem("file")), 3, false},
	} {
		if got := has(tc.term, tc.doc); got != tc.want {
			t.Errorf("doc %d has term %q: %v, want %v", tc.doc, tc.term, got, tc.want)
		}
	}
}
