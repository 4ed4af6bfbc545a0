package gateway

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
	"github.com/mcpgate/mcpgate/policy"
)

// TestDiscoveryMode: tools/list carries search, describe and call (small);
// search finds an operation by what a user would say; call runs a tool
// exactly as a direct call would (its confirmation, a task for a task
// tool); direct calls keep working; a tool a policy hides is neither found
// nor callable through call.
func TestDiscoveryMode(t *testing.T) {
	g := newDemo(t, Config{Tools: ServedTools{Mode: "discovery"},
		Policy: []policy.Rule{{When: `tool.name == "getOrder"`, Effect: policy.Deny}}})
	ctx := context.Background()
	c := mcp.NewClient(g.Server())
	c.Principal = g.callers.principal("demo-token")
	c.Capabilities.Elicitation = &mcp.ElicitationCapability{}
	var questions []string
	c.AnswerInput = func(_ context.Context, _ string, req mcp.InputRequest) (any, error) {
		var p mcp.ElicitParams
		b, _ := json.Marshal(req.Params)
		_ = json.Unmarshal(b, &p)
		questions = append(questions, p.Message)
		return map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}, nil
	}
	resp, err := c.Do(ctx, "tools/list", nil)
	if err != nil || resp.Error != nil {
		t.Fatal(err, resp.Error)
	}
	if len(resp.Result) > 8<<10 {
		t.Errorf("tools/list in discovery mode is %d bytes", len(resp.Result))
	}
	tools, _ := c.ListTools(ctx)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"call", "describe", "search"}) {
		t.Fatalf("tools/list: %v", names)
	}
	res, err := c.CallTool(ctx, "search", map[string]any{"query": "remove a pet from the store"})
	if err != nil || res.IsError || !strings.Contains(text(res), "deletePet") {
		t.Fatalf("search: %v %s", err, text(res))
	}
	if res, _ := c.CallTool(ctx, "search", map[string]any{"query": "look up an order"}); strings.Contains(text(res), "getOrder") {
		t.Errorf("search found a tool the policy hides: %s", text(res))
	}
	res, _ = c.CallTool(ctx, "describe", map[string]any{"names": []string{"deletePet", "getOrder"}})
	if !strings.Contains(text(res), `"inputSchema"`) || !strings.Contains(text(res), "unknown") {
		t.Errorf("describe: %s", text(res))
	}
	// call: the destructive call is confirmed, naming the request.
	res, err = c.CallTool(ctx, "call", map[string]any{"name": "deletePet", "arguments": map[string]any{"petId": 2}})
	if err != nil || res.IsError || len(questions) != 1 || !strings.Contains(questions[0], "DELETE /pets/2") {
		t.Fatalf("call deletePet: %v %s; questions %q", err, text(res), questions)
	}
	if r, _ := c.CallTool(ctx, "getPet", map[string]any{"petId": 2}); r == nil || !r.IsError {
		t.Errorf("pet 2 is still there after the confirmed call: %+v", r)
	}
	// A direct call of a real tool works in discovery mode.
	if r, _ := c.CallTool(ctx, "getPet", map[string]any{"petId": 1}); r == nil || r.IsError {
		t.Errorf("a direct call: %+v", r)
	}
	// A hidden tool through call answers as an unknown tool.
	hidden, _ := c.Do(ctx, "tools/call", map[string]any{"name": "call", "arguments": map[string]any{"name": "getOrder", "arguments": map[string]any{"orderId": 1}}})
	unknown, _ := c.Do(ctx, "tools/call", map[string]any{"name": "call", "arguments": map[string]any{"name": "noSuchTool"}})
	if hidden.Error == nil || unknown.Error == nil || hidden.Error.Code != unknown.Error.Code {
		t.Errorf("call of a hidden tool %+v, of an unknown one %+v", hidden.Error, unknown.Error)
	}
	// A task tool through call gives a task to a client that declared
	// the Tasks extension.
	tc := taskClient(g, "demo-token")
	r, err := tc.Do(ctx, "tools/call", map[string]any{"name": "call", "arguments": map[string]any{"name": "createReport", "arguments": map[string]any{"kind": "inventory"}}})
	if err != nil || r.Error != nil || !strings.Contains(string(r.Result), `"resultType":"task"`) {
		t.Fatalf("call createReport: %v %+v %s", err, r.Error, r.Result)
	}
}

// TestDescribedAs: describe gives a tool's whole description where
// tools/list gives its lead paragraph, bounded.
func TestDescribedAs(t *testing.T) {
	long := strings.Repeat("é", maxDescribed)
	for _, tc := range []struct{ desc, full, want string }{
		{"Lists pets.", "", "Lists pets."},
		{"Lists pets.", "Lists pets.\n\nPaged by cursor.", "Lists pets.\n\nPaged by cursor."},
		{"Long.", long, long[:maxDescribed] + "…"},
	} {
		got := describedAs(mcp.Tool{Name: "t", Description: tc.desc}, &openapi.Tool{FullDescription: tc.full}).Description
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("describedAs(%.20q, %.20q) = %.40q", tc.desc, tc.full, got)
		}
	}
}

// TestDiscoveryReadsTheOperations: what search reads from the document
// beside the tools (an operation's tags, its x-mcp-pin) is read before
// generation drops the operations, on start and on a reload alike.
func TestDiscoveryReadsTheOperations(t *testing.T) {
	doc := `openapi: 3.0.3
info: {title: Ledger, version: "1"}
paths:
  /entries:
    get:
      operationId: listEntries
      tags: [bookkeeping]
      summary: List the entries
      responses: {"200": {description: ok}}
  /entries/{id}:
    delete:
      operationId: removeEntry
      x-mcp-pin: true
      summary: Remove one entry
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {"204": {description: gone}}
`
	p := filepath.Join(t.TempDir(), "ledger.yaml")
	edit(t, p, doc)
	g, err := New(context.Background(), Config{Store: "memory", Spec: p, Upstream: "http://127.0.0.1:1",
		Tools: ServedTools{Mode: "discovery"}}, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	c := mcp.NewClient(g.Server())
	check := func(when string) {
		t.Helper()
		if names := toolNamesOf(t, g); !slices.Equal(names, []string{"call", "describe", "removeEntry", "search"}) {
			t.Errorf("%s: tools/list %v, want the pinned removeEntry beside the discovery tools", when, names)
		}
		// "bookkeeping" is only the operation's tag.
		res, err := c.CallTool(ctx, "search", map[string]any{"query": "bookkeeping"})
		if err != nil || res.IsError || !strings.Contains(text(res), "listEntries") {
			t.Errorf("%s: search by the tag: %v %s", when, err, text(res))
		}
	}
	check("on start")
	changed := strings.Replace(doc, "List the entries", "List every entry", 1)
	edit(t, p, changed)
	if err := g.Reload(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if d, _ := c.CallTool(ctx, "describe", map[string]any{"names": []string{"listEntries"}}); d == nil || !strings.Contains(text(d), "every entry") {
		t.Fatalf("the reload did not take: %v", d)
	}
	check("after a reload")
}

// TestDiscoveryThesaurus: tools.thesaurus teaches search the operator's
// words, is read again at a reload, and a broken file fails the load with
// its name and line.
func TestDiscoveryThesaurus(t *testing.T) {
	doc := `openapi: 3.0.3
info: {title: Journal, version: "1"}
paths:
  /journal/lines:
    get: {operationId: listLines, summary: List the journal lines, responses: {"200": {description: ok}}}
  /audits:
    get: {operationId: listAudits, summary: List the audits, responses: {"200": {description: ok}}}
`
	dir := t.TempDir()
	spec, words := filepath.Join(dir, "ledger.yaml"), filepath.Join(dir, "words.txt")
	for p, text := range map[string]string{spec: doc, words: "# our users' words\nbooks: lines\n"} {
		edit(t, p, text)
	}
	cfg := Config{Store: "memory", Spec: spec, Upstream: "http://127.0.0.1:1",
		Tools: ServedTools{Mode: "discovery", Thesaurus: words}}
	g, err := New(context.Background(), cfg, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	c := mcp.NewClient(g.Server())
	first := func(query string) string {
		t.Helper()
		res, err := c.CallTool(ctx, "search", map[string]any{"query": query})
		if err != nil || res.IsError {
			t.Fatalf("search %q: %v %s", query, err, text(res))
		}
		var out struct {
			Results []struct{ Name string } `json:"results"`
		}
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		if len(out.Results) == 0 {
			return ""
		}
		return out.Results[0].Name
	}
	if got := first("show the books"); got != "listLines" {
		t.Errorf("search with the operator's word found %q first, want listLines", got)
	}
	edit(t, words, "books: audits\n")
	if err := g.Reload(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := first("show the books"); got != "listAudits" {
		t.Errorf("after the thesaurus changed and a reload, %q first, want listAudits", got)
	}
	edit(t, words, "books: audits\nthe: lines\n")
	if err := g.Reload(ctx, nil); err == nil || !strings.Contains(err.Error(), words+`:2: "the: lines": "the" is a stop word`) {
		t.Errorf("reload with a broken thesaurus: %v", err)
	}
	if got := first("show the books"); got != "listAudits" {
		t.Errorf("a failed reload changed the served index: %q first", got)
	}
	cfg.Tools.Thesaurus = filepath.Join(dir, "missing.txt")
	if _, err := New(ctx, cfg, discardLogger()); err == nil || !strings.Contains(err.Error(), "tools.thesaurus: open "+cfg.Tools.Thesaurus) {
		t.Errorf("New with a missing thesaurus: %v", err)
	}
}
