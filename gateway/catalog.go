package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/discovery"
	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
)

// A catalog is the gateway's tools as served at one time: every API's
// tools compiled, the gateway's own tools, what each caller may see, and in
// discovery mode the search index. It is built off the request path (at
// start and on each reload), put in service in one step with the matching
// mcp.ToolSet, and never changed afterwards.
type catalog struct {
	version string // the tool set's version, where the calls go included (routes)
	apis    []*api
	tools   []openapi.Tool         // every API's, as served
	served  map[string]*servedTool // by served name
	own     map[string]bool        // the gateway's own tools: disconnect_<api>, search, describe, call
	scopes  map[string][][]string  // with auth mode oauth: each tool's alternative scope sets
	mode    discovery.Decision
	search  *discovery.Catalog // discovery mode only
	// thesaurus is the text of tools.thesaurus it was built with, so that a
	// reload can tell an edit of it.
	thesaurus []byte
}

// known reports whether name is a tool of the catalog (a metric label).
func (c *catalog) known(name string) bool { return c.served[name] != nil || c.own[name] }

// current is the catalog in service.
func (g *Gateway) current() *catalog { return g.cat.Load() }

// newCatalog compiles the APIs' tools into a catalog and its tool set; it
// stops with ctx's error once ctx is done. In discovery mode the search
// index is built meanwhile, on another core: it needs only the index
// entries made at generation.
func (g *Gateway) newCatalog(ctx context.Context, apis []*api) (*catalog, *mcp.ToolSet, error) {
	cat := &catalog{apis: apis, own: map[string]bool{}}
	cat.tools = joined(apis, func(a *api) []openapi.Tool { return a.tools })
	cat.served = make(map[string]*servedTool, len(cat.tools))
	index, err := g.startIndex(cat)
	if err != nil {
		return nil, nil, err
	}
	ts := g.server.NewToolSet()
	var pinned []string
	for _, a := range apis {
		for i := range a.tools {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			st, err := g.serveTool(a, &a.result.Tools[i], &a.tools[i])
			if err == nil {
				err = g.register(ts, st)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("tool %s: %w", a.tools[i].Name, err)
			}
			shareSchemas(ts, st)
			cat.served[st.tool.Name] = st
		}
		pinned = append(pinned, a.pinned...)
		if a.cfg.Credentials.Mode == "oauth" {
			t, h, err := g.conn.DisconnectTool(a.connectName())
			if err == nil {
				err = ts.Add(t, h)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("the disconnect tool of %s: %w", a.cfg.label(), err)
			}
			cat.own[t.Name] = true
			pinned = append(pinned, t.Name)
		}
	}
	if g.oauth != nil {
		cat.scopes = g.toolScopes(apis)
	}
	if err := g.addDiscovery(cat, ts, pinned, index); err != nil {
		return nil, nil, err
	}
	ts.Stamp(routes(cat))
	cat.version = ts.Version()
	return cat, ts, nil
}

// joined is what of gives for each API, in order: for one API its own
// slice, not a copy (Graph's 11,422 tools are 4 MB, their index entries 2.5
// MB). The catalog and the index only read them.
func joined[T any](apis []*api, of func(*api) []T) []T {
	if len(apis) == 1 {
		return slices.Clip(of(apis[0]))
	}
	var out []T
	for _, a := range apis {
		out = append(out, of(a)...)
	}
	return out
}

// shareSchemas points st's copies of its tool's schemas at the tool set's,
// where they are equal, so that an API's schemas are held once, not once
// for the tool set and again for the generated, served and compiled tools
// (Microsoft Graph's come to some 40 MB). The bytes are never modified.
func shareSchemas(ts *mcp.ToolSet, st *servedTool) {
	in, out, ok := ts.Schemas(st.def.Name)
	if !ok {
		return
	}
	share := func(have *json.RawMessage, shared json.RawMessage) {
		if len(*have) > 0 && bytes.Equal(*have, shared) {
			*have = shared
		}
	}
	for _, t := range []*openapi.Tool{st.gen, st.tool, st.ep.Tool()} {
		share(&t.InputSchema, in)
		share(&t.OutputSchema, out)
	}
	share(&st.def.InputSchema, in)
	share(&st.def.OutputSchema, out)
}

// routes is where each tool's calls go, which the tools' definitions do not
// show: stamped into the tool set's version, so that a task (which records
// the version it was created under) runs with its creation's definition
// even when only a route changed.
func routes(cat *catalog) string {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(cat.served)) {
		st := cat.served[n]
		fmt.Fprintf(&b, "%s\x00%s\x00%s\x00%s\x00", n, st.ep.Proxy().BaseURL(), st.tool.Route.Method, st.tool.Route.Path)
	}
	return b.String()
}

// install puts cat and its tool set in service, in one step. The catalogs
// replaced recently that serve task tools are kept, so that a task created
// under one of them runs with the definition it was created with; one
// without task tools has no task to run and is let go (kept, each would
// hold a whole API: 11 MB for GitHub's).
func (g *Gateway) install(cat *catalog, ts *mcp.ToolSet) error {
	g.catMu.Lock()
	defer g.catMu.Unlock()
	if old := g.cat.Load(); old != nil && old.servesTasks() {
		g.oldCats[old.version] = old
		g.oldOrder = append(g.oldOrder, old.version)
		for len(g.oldOrder) > maxOldCatalogs {
			delete(g.oldCats, g.oldOrder[0])
			g.oldOrder = g.oldOrder[1:]
		}
	}
	g.cat.Store(cat)
	return g.server.SetTools(ts)
}

// servesTasks reports whether a tool of c is a task tool.
func (c *catalog) servesTasks() bool {
	for _, st := range c.served {
		if st.task {
			return true
		}
	}
	return false
}

// maxOldCatalogs bounds the replaced catalogs kept for their tasks.
const maxOldCatalogs = 8

// taskDefinition is the tool a task runs: as it was in the catalog it was
// created under, when that one is still kept, else as it is now.
func (g *Gateway) taskDefinition(version, name string) *servedTool {
	if version != "" {
		g.catMu.Lock()
		old := g.oldCats[version]
		g.catMu.Unlock()
		if old != nil && old.served[name] != nil {
			return old.served[name]
		}
	}
	return g.current().served[name]
}

// toolScopes are the scopes each tool needs with auth mode oauth: the
// document's security requirements, or auth.tool_scopes, plus the API's
// own scopes.
func (g *Gateway) toolScopes(apis []*api) map[string][][]string {
	out := map[string][][]string{}
	for _, a := range apis {
		for _, t := range a.tools {
			req := auth.RequiredScopes(t.Route, a.result.SecuritySchemes)
			if a.cfg.Credentials.Mode == "oauth" {
				// The document's scopes are those of the user's own grant
				// at the API (package connect), not of the MCP token.
				req = nil
			}
			if override, ok := g.cfg.Auth.ToolScopes[t.Name]; ok {
				req = [][]string{override}
			}
			out[t.Name] = withScopes(req, a.cfg.Scopes)
		}
	}
	return out
}

// startIndex decides how tools/list is served and in discovery mode
// starts building the search index; the function it returns waits for the
// index (nil outside discovery mode).
func (g *Gateway) startIndex(cat *catalog) (func() (*discovery.Index, error), error) {
	mode, err := discovery.ParseMode(g.cfg.Tools.Mode)
	if err != nil {
		return nil, err
	}
	thesaurus, text, err := g.thesaurus()
	if err != nil {
		return nil, err
	}
	cat.thesaurus = text
	cat.mode = discovery.Decide(mode, listBytes(cat.tools), g.cfg.Tools.Budget)
	if !cat.mode.Discovery {
		return nil, nil
	}
	docs := joined(cat.apis, func(a *api) []discovery.Doc { return a.searchDocs })
	var ix *discovery.Index
	var ixErr error
	done := make(chan struct{})
	go func() { // not stopped with ctx: it takes a fraction of a second
		defer close(done)
		ix, ixErr = discovery.New(docs, discovery.Options{Embeddings: g.embedder, Thesaurus: thesaurus})
	}()
	return func() (*discovery.Index, error) {
		<-done
		return ix, ixErr
	}, nil
}

// addDiscovery serves discovery mode when the settings chose it: the
// tools search, describe and call, and the pinned ones, listed; every
// other tool unlisted but callable by name.
func (g *Gateway) addDiscovery(cat *catalog, ts *mcp.ToolSet, pinned []string, index func() (*discovery.Index, error)) error {
	if !cat.mode.Discovery {
		return nil
	}
	defs := make([]mcp.Tool, 0, len(cat.served))
	for _, a := range cat.apis {
		for i := range a.tools {
			defs = append(defs, describedAs(cat.served[a.tools[i].Name].def, &a.tools[i]))
		}
	}
	ix, err := index()
	if err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	if cat.search, err = discovery.NewCatalog(ix, defs, title(cat.apis)); err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	for _, t := range cat.search.Tools() {
		t := t
		var err error
		switch t.Name {
		case discovery.CallName:
			err = ts.AddDispatcher(&t, g.dispatchCall)
		case discovery.SearchName:
			err = ts.Add(&t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return cat.search.Search(ctx, req.Arguments, g.visibleTo(ctx, req.Principal)), nil
			})
		default:
			err = ts.Add(&t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return cat.search.Describe(ctx, req.Arguments, g.visibleTo(ctx, req.Principal)), nil
			})
		}
		if err != nil {
			return fmt.Errorf("discovery tool %s: %w", t.Name, err)
		}
		cat.own[t.Name] = true
	}
	var unlisted []string
	for name := range cat.served {
		if !slices.Contains(pinned, name) {
			unlisted = append(unlisted, name)
		}
	}
	slices.Sort(unlisted)
	return ts.Unlist(unlisted...)
}

// maxDescribed bounds the description describe gives for one tool.
const maxDescribed = 16 << 10

// describedAs is a tool's definition as describe gives it: tools/list's
// description is the lead paragraph, describe the whole text (bounded).
func describedAs(def mcp.Tool, t *openapi.Tool) mcp.Tool {
	if full := t.FullDescription; full != "" {
		if len(full) > maxDescribed {
			full = strings.ToValidUTF8(full[:maxDescribed], "") + "…"
		}
		def.Description = full
	}
	return def
}

// dispatchCall is discovery's call: it names the tool to run, which then
// runs exactly as a direct tools/call of it (package mcp's dispatcher).
func (g *Gateway) dispatchCall(ctx context.Context, req *mcp.CallToolRequest) (string, json.RawMessage, error) {
	name, args, err := discovery.ParseCall(req.Arguments)
	if err != nil {
		return "", nil, err
	}
	return name, args, nil
}

// visibleTo is the predicate of the tools a caller may see, for
// discovery's search and describe.
func (g *Gateway) visibleTo(ctx context.Context, p mcp.Principal) func(name string) bool {
	if g.oauth == nil && g.ops.policy == nil {
		return func(string) bool { return true }
	}
	return func(name string) bool { return g.visible(ctx, p, &mcp.Tool{Name: name}) }
}

// listBytes estimates the size of the full tools/list of tools: what a
// client would load in mode all.
func listBytes(tools []openapi.Tool) int {
	n := 0
	for i := range tools {
		t := &tools[i]
		n += 160 + len(t.Name) + len(t.Title) + len(t.Description) + len(t.InputSchema) + len(t.OutputSchema) + len(t.Annotations.Title)
	}
	return n
}

// searchDocsOf makes an API's index entries (and its pinned tools) from
// its tools and what was read from its operations before generation
// consumed them: the catalog is rebuilt without the document.
func (a *api) searchDocsOf(ops discovery.Operations) {
	a.searchDocs = discovery.FromTools(a.cfg.Name, a.tools, ops)
	names, unmatched := discovery.Pinned(a.result.Tools, ops, a.cfg.Tools.Pin)
	for _, n := range names {
		a.pinned = append(a.pinned, a.toolName(n))
	}
	a.unmatchedPins = unmatched
}

// logMode says how tools/list is served.
func (g *Gateway) logMode(cat *catalog) {
	args := []any{"tools", len(cat.tools), "mode", cat.mode.String()}
	for _, a := range cat.apis {
		if len(a.unmatchedPins) > 0 {
			args = append(args, "unmatched_pins", strings.Join(a.unmatchedPins, ","))
		}
		if u := a.unmatchedTasks(); len(u) > 0 {
			g.logger.Warn("tools.tasks names operations this API does not serve: they are not tasks", "api", a.cfg.label(), "unmatched", strings.Join(u, ","))
		}
	}
	g.logger.Info("tools/list", args...)
}

// newEmbedder is discovery's semantic re-ranking, when configured.
// thesaurus reads and parses tools.thesaurus, the operator's entries for
// the domain thesaurus of discovery's search, at every catalog build: a
// reload picks up its edits, and a broken file fails the load in every
// mode. It returns the file's text beside the table.
func (g *Gateway) thesaurus() (*discovery.Thesaurus, []byte, error) {
	path := g.cfg.Tools.Thesaurus
	if path == "" {
		return nil, nil, nil
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("tools.thesaurus: %w", err)
	}
	th, err := discovery.ParseThesaurus(path, string(text))
	if err != nil {
		return nil, nil, fmt.Errorf("tools.thesaurus: %w", err)
	}
	return th, text, nil
}

// thesaurusChanged reports whether tools.thesaurus differs from what cat
// was built with (an unreadable file counts as changed: the build that
// follows says why).
func (g *Gateway) thesaurusChanged(cat *catalog) bool {
	if g.cfg.Tools.Thesaurus == "" {
		return false
	}
	text, err := os.ReadFile(g.cfg.Tools.Thesaurus)
	return err != nil || !bytes.Equal(text, cat.thesaurus)
}

func (g *Gateway) newEmbedder() (*discovery.Embedder, error) {
	e := g.cfg.Tools.Embeddings
	if e.URL == "" {
		return nil, nil
	}
	key, err := secretValue(e.Key)
	if err != nil {
		return nil, fmt.Errorf("tools.embeddings.key: %w", err)
	}
	return &discovery.Embedder{URL: e.URL, Model: e.Model, APIKey: key, CacheDir: e.CacheDir, Weight: e.Weight, Logger: g.logger}, nil
}
