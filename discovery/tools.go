package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/mcp"
)

// The three discovery tools, ready to register: search, describe and call.
// A Catalog answers search and describe itself; call is routed by the
// gateway through its own chain (validation, confirmation, tasks, metrics,
// scopes), so the catalog only defines it and parses its arguments.

// Tool names. Clients and evaluations call these exact names.
const (
	SearchName   = "search"
	DescribeName = "describe"
	CallName     = "call"
)

// MaxDescribeNames bounds the names of one describe call.
const MaxDescribeNames = 20

// Catalog is what the discovery tools serve: an index and the full
// definition of every indexed tool.
type Catalog struct {
	index *Index
	defs  map[string]*mcp.Tool
	// apis is the number of distinct APIs (results name theirs when > 1).
	apis  int
	title string
}

// NewCatalog pairs an index with the definitions describe returns (keyed
// by tool name; every indexed tool must have one). title names what is
// served ("GitHub v3 REST API") in the tools' descriptions.
func NewCatalog(ix *Index, defs []mcp.Tool, title string) (*Catalog, error) {
	c := &Catalog{index: ix, defs: make(map[string]*mcp.Tool, len(defs)), title: boundText(title, 80)}
	for i := range defs {
		c.defs[defs[i].Name] = &defs[i]
	}
	apis := map[string]bool{}
	for i := range ix.docs {
		if c.defs[ix.docs[i].Name] == nil {
			return nil, fmt.Errorf("discovery: tool %q is indexed but has no definition", ix.docs[i].Name)
		}
		apis[ix.docs[i].API] = true
	}
	c.apis = len(apis)
	return c, nil
}

// Index is the catalog's index.
func (c *Catalog) Index() *Index { return c.index }

// Tools returns the definitions of search, describe and call, in that
// order. Their tools/list entries together stay far below 8 KiB.
func (c *Catalog) Tools() []mcp.Tool {
	what := "the API's tools"
	if c.title != "" {
		what = "the tools of " + c.title
	}
	n := c.index.Len()
	yes, no := true, false
	apiProp := ""
	if c.apis > 1 {
		apiProp = `,"api":{"type":"string","description":"Only search the tools of this API."}`
	}
	return []mcp.Tool{
		{
			Name:  SearchName,
			Title: "Search tools",
			Description: fmt.Sprintf("Search %s (%d in all) by what you want to do, in plain words "+
				"(\"refund a charge\", \"list my open pull requests\"). Returns the best matches, best first, "+
				"with name, title, a short description, HTTP method and path. Then call describe for the "+
				"full definition of a tool and call to run it.", what, n),
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"query":{"type":"string","minLength":1,"maxLength":` + fmt.Sprint(MaxQueryBytes) + `,"description":"What you want to do, in your own words."},` +
				`"limit":{"type":"integer","minimum":1,"maximum":` + fmt.Sprint(MaxLimit) + `,"default":` + fmt.Sprint(DefaultLimit) + `,"description":"How many results to return."}` +
				apiProp + `},"required":["query"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"results":{"type":"array","items":{"type":"object","properties":{` +
				`"name":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"},"method":{"type":"string"},` +
				`"path":{"type":"string"},"score":{"type":"number"},"api":{"type":"string"}},"required":["name","method","path","score"]}}},"required":["results"]}`),
			Annotations: &mcp.ToolAnnotations{Title: "Search tools", ReadOnlyHint: &yes, DestructiveHint: &no, IdempotentHint: &yes, OpenWorldHint: &no},
		},
		{
			Name:  DescribeName,
			Title: "Describe tools",
			Description: fmt.Sprintf("Full definitions of tools found with search: input schema, output schema, "+
				"annotations and full description. Pass up to %d names. Unknown names are listed under \"unknown\".", MaxDescribeNames),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"names":{"type":"array","items":{"type":"string","minLength":1},` +
				`"minItems":1,"maxItems":` + fmt.Sprint(MaxDescribeNames) + `,"description":"Tool names, as search returns them."}},"required":["names"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"tools":{"type":"array","items":{"type":"object"}},` +
				`"unknown":{"type":"array","items":{"type":"string"}}},"required":["tools"]}`),
			Annotations: &mcp.ToolAnnotations{Title: "Describe tools", ReadOnlyHint: &yes, DestructiveHint: &no, IdempotentHint: &yes, OpenWorldHint: &no},
		},
		{
			Name:  CallName,
			Title: "Call a tool",
			Description: "Run a tool found with search, with arguments that match the inputSchema describe " +
				"returned. The result is exactly what calling the tool directly gives, confirmations of " +
				"destructive actions included.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1,"description":"The tool's name."},` +
				`"arguments":{"type":"object","description":"The tool's arguments."}},"required":["name"],"additionalProperties":false}`),
			Annotations: &mcp.ToolAnnotations{Title: "Call a tool", ReadOnlyHint: &no, DestructiveHint: &yes, IdempotentHint: &no, OpenWorldHint: &yes},
		},
	}
}

// SearchArgs are search's arguments.
type SearchArgs struct {
	Query string `json:"query"`
	Limit int    `json:"limit,omitempty"`
	API   string `json:"api,omitempty"`
}

// Search answers a search call. visible (nil: everything) is the caller's
// view: tools it rejects never appear. Bad arguments are a tool error.
func (c *Catalog) Search(ctx context.Context, args json.RawMessage, visible func(name string) bool) *mcp.CallToolResult {
	var a SearchArgs
	if err := decodeArgs(args, &a); err != nil {
		return mcp.ToolError("search: " + err.Error())
	}
	if strings.TrimSpace(a.Query) == "" {
		return mcp.ToolError(`search: "query" is required: say what you want to do`)
	}
	if a.Limit < 0 || a.Limit > MaxLimit {
		return mcp.ToolError(fmt.Sprintf(`search: "limit" must be between 1 and %d`, MaxLimit))
	}
	res, err := c.index.Search(ctx, Query{Text: a.Query, Limit: a.Limit, API: a.API, Visible: visible})
	if err != nil {
		return mcp.ToolError("search: " + strings.TrimPrefix(err.Error(), "discovery: "))
	}
	if c.apis <= 1 {
		for i := range res {
			res[i].API = ""
		}
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.TextContent(renderResults(a.Query, res))},
		StructuredContent: map[string]any{"results": res},
	}
}

// renderResults is the readable text of a result list.
func renderResults(query string, res []Result) string {
	if len(res) == 0 {
		return fmt.Sprintf("No tool matches %q. Try other words for the action or the thing it acts on.", query)
	}
	var b strings.Builder
	noun := "tools"
	if len(res) == 1 {
		noun = "tool"
	}
	fmt.Fprintf(&b, "%d %s for %q, best first:\n", len(res), noun, query)
	for i, r := range res {
		fmt.Fprintf(&b, "\n%d. %s", i+1, r.Name)
		if r.API != "" {
			fmt.Fprintf(&b, " [%s]", r.API)
		}
		fmt.Fprintf(&b, " — %s %s", r.Method, r.Path)
		if r.Title != "" && r.Title != r.Name {
			fmt.Fprintf(&b, "\n   %s", r.Title)
		}
		if r.Description != "" && r.Description != r.Title {
			fmt.Fprintf(&b, "\n   %s", r.Description)
		}
	}
	b.WriteString("\n\nCall describe with the names you need for their input schemas.")
	return b.String()
}

// DescribeArgs are describe's arguments.
type DescribeArgs struct {
	Names []string `json:"names"`
}

// Describe answers a describe call: the full definitions of the named
// tools that visible lets through, in the order asked; every other name
// (unknown or hidden, indistinguishably) is listed under "unknown".
func (c *Catalog) Describe(ctx context.Context, args json.RawMessage, visible func(name string) bool) *mcp.CallToolResult {
	var a DescribeArgs
	if err := decodeArgs(args, &a); err != nil {
		return mcp.ToolError("describe: " + err.Error())
	}
	if len(a.Names) == 0 || len(a.Names) > MaxDescribeNames {
		return mcp.ToolError(fmt.Sprintf(`describe: "names" must list 1 to %d tool names`, MaxDescribeNames))
	}
	tools := []*mcp.Tool{}
	var unknown []string
	seen := map[string]bool{}
	for _, n := range a.Names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if def, ok := c.Definition(n, visible); ok {
			tools = append(tools, def)
		} else {
			unknown = append(unknown, n)
		}
	}
	out := map[string]any{"tools": tools}
	if len(unknown) > 0 {
		out["unknown"] = unknown
	}
	text, err := json.Marshal(out)
	if err != nil {
		return mcp.ToolError("describe: " + err.Error())
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(string(text))}, StructuredContent: json.RawMessage(text),
		IsError: len(tools) == 0}
}

// Definition returns the full definition of the tool called name, if the
// catalog has it and visible (nil: everything) lets it through. A hidden
// tool is reported exactly like an unknown one.
func (c *Catalog) Definition(name string, visible func(name string) bool) (*mcp.Tool, bool) {
	def, ok := c.defs[name]
	if !ok {
		return nil, false
	}
	if _, indexed := c.index.Lookup(name, visible); !indexed {
		return nil, false
	}
	return def, true
}

// CallArgs are call's arguments.
type CallArgs struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ParseCall reads call's arguments: the inner tool's name and its
// arguments (nil when absent or null; otherwise a JSON object). The gateway
// then runs the named tool exactly as a direct tools/call, answering an
// unknown or hidden name as it answers a call of an unknown tool.
func ParseCall(args json.RawMessage) (name string, arguments json.RawMessage, err error) {
	var a CallArgs
	if err := decodeArgs(args, &a); err != nil {
		return "", nil, fmt.Errorf("call: %w", err)
	}
	if a.Name == "" {
		return "", nil, fmt.Errorf(`call: "name" is required: the name of a tool found with search`)
	}
	raw := strings.TrimSpace(string(a.Arguments))
	switch {
	case raw == "" || raw == "null":
		return a.Name, nil, nil
	case raw[0] != '{':
		return "", nil, fmt.Errorf(`call: "arguments" must be an object`)
	}
	return a.Name, json.RawMessage(raw), nil
}

// decodeArgs decodes a tool's arguments strictly: unknown members are an
// error naming them.
func decodeArgs(args json.RawMessage, v any) error {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad arguments: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return fmt.Errorf("bad arguments: trailing data")
	}
	return nil
}

// boundText cuts s to at most n bytes at a word boundary.
func boundText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	cut := s[:n]
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, ",;:") + "…"
}
