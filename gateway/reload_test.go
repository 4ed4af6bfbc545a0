package gateway

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/mcp"
)

const reloadDocV1 = `openapi: 3.0.3
info: {title: Jobs, version: "1"}
paths:
  /items/{id}:
    get:
      operationId: getItem
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
  /jobs:
    post:
      operationId: startJob
      x-mcp-task: true
      x-mcp-annotations: {destructiveHint: false}
      responses: {"200": {description: ok}}
`

// reloadGateway serves a document file in front of a recording upstream.
func reloadGateway(t *testing.T, mode string) (*Gateway, string, *recording) {
	t.Helper()
	up := newRecording(t)
	spec := filepath.Join(t.TempDir(), "jobs.yaml")
	if err := os.WriteFile(spec, []byte(reloadDocV1), 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), Config{Store: "memory", Spec: spec, Upstream: up.srv.URL, Reload: mode}, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, spec, up
}

func toolNamesOf(t *testing.T, g *Gateway) []string {
	t.Helper()
	c := mcp.NewClient(g.Server())
	tools, err := c.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func edit(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReloadModes: an additive change is applied live; a breaking one is
// refused under additive (the old tools keep serving) and applied under
// auto or when the operator asks (SIGHUP); a document that does not load
// never replaces a working one.
func TestReloadModes(t *testing.T) {
	ctx := context.Background()
	added := reloadDocV1 + `  /items:
    get:
      operationId: listItems
      responses: {"200": {description: ok}}
`
	removed := strings.Replace(reloadDocV1, "  /items/{id}:\n    get:\n      operationId: getItem\n      parameters: [{name: id, in: path, required: true, schema: {type: string}}]\n      responses: {\"200\": {description: ok}}\n", "", 1)

	g, spec, _ := reloadGateway(t, ReloadAdditive)
	changed := map[string]bool{spec: true}
	edit(t, spec, added)
	if err := g.reload(ctx, "test", changed, false, nil); err != nil {
		t.Fatal(err)
	}
	if got := toolNamesOf(t, g); !slices.Equal(got, []string{"getItem", "listItems", "startJob"}) {
		t.Fatalf("after an additive change: %v", got)
	}
	edit(t, spec, removed)
	if err := g.reload(ctx, "test", changed, false, nil); !errors.Is(err, ErrReloadRefused) {
		t.Fatalf("a breaking change under additive: %v", err)
	}
	if got := toolNamesOf(t, g); !slices.Contains(got, "getItem") {
		t.Fatalf("the refused change took effect: %v", got)
	}
	edit(t, spec, "openapi: 3.0.3\npaths: [not a map\n")
	if err := g.reload(ctx, "test", changed, false, nil); err == nil || errors.Is(err, ErrReloadRefused) {
		t.Fatalf("a broken document: %v", err)
	}
	if got := toolNamesOf(t, g); !slices.Contains(got, "getItem") {
		t.Fatalf("a broken document replaced the tools: %v", got)
	}
	edit(t, spec, removed)
	if err := g.Reload(ctx, nil); err != nil { // the operator asks: applied
		t.Fatal(err)
	}
	if got := toolNamesOf(t, g); slices.Contains(got, "getItem") {
		t.Fatalf("the operator's reload did not apply: %v", got)
	}

	auto, spec2, _ := reloadGateway(t, ReloadAuto)
	edit(t, spec2, removed)
	if err := auto.reload(ctx, "test", map[string]bool{spec2: true}, false, nil); err != nil {
		t.Fatalf("auto: %v", err)
	}
	if got := toolNamesOf(t, auto); slices.Contains(got, "getItem") {
		t.Fatalf("auto did not apply a breaking change: %v", got)
	}
	manual, spec3, _ := reloadGateway(t, ReloadManual)
	edit(t, spec3, added)
	if err := manual.reload(ctx, "test", map[string]bool{spec3: true}, false, nil); !errors.Is(err, ErrReloadRefused) {
		t.Fatalf("manual applied a change by itself: %v", err)
	}
}

// TestReloadKeepsTaskDefinition: a task created before a reload changed its
// operation's path runs with the definition it was created with.
func TestReloadKeepsTaskDefinition(t *testing.T) {
	ctx := context.Background()
	g, spec, up := reloadGateway(t, ReloadAuto)
	c := taskClient(g, "token")
	id := createTask(t, c, "startJob", nil)
	edit(t, spec, strings.Replace(reloadDocV1, "  /jobs:", "  /v2/jobs:", 1))
	if err := g.reload(ctx, "test", map[string]bool{spec: true}, false, nil); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	stop := g.startRunner(rctx)
	defer func() { cancel(); stop() }()
	if status, res := awaitTask(t, c, id); status != "completed" {
		t.Fatalf("task %s: %s", status, res)
	}
	if got := up.requests(); len(got) != 1 || !strings.HasPrefix(got[0], "POST /jobs ") {
		t.Fatalf("the task sent %q, want its creation's POST /jobs", got)
	}
	id2 := createTask(t, c, "startJob", nil)
	if status, res := awaitTask(t, c, id2); status != "completed" {
		t.Fatalf("task %s: %s", status, res)
	}
	if got := up.requests(); len(got) != 2 || !strings.HasPrefix(got[1], "POST /v2/jobs ") {
		t.Fatalf("a task created after the reload sent %q, want POST /v2/jobs", got)
	}
}

// TestCloseDuringReload: Close while reloads are applied (SIGHUP or a
// watched file, on their own goroutine) is safe: it waits for the reload in
// progress. Run with -race (the suite does): it once read the list of
// opened APIs while a reload appended to it.
func TestCloseDuringReload(t *testing.T) {
	for i := range 5 {
		g, spec, _ := reloadGateway(t, ReloadAuto)
		edit(t, spec, strings.Replace(reloadDocV1, "title: Jobs", "title: Jobs "+strings.Repeat("x", i+1), 1)+`  /extra:
    get:
      operationId: getExtra
      responses: {"200": {description: ok}}
`)
		done := make(chan error, 1)
		go func() { done <- g.Reload(context.Background(), nil) }()
		if err := g.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := <-done; err != nil && !errors.Is(err, ErrReloadRefused) {
			t.Logf("reload after Close: %v", err) // allowed to fail; must not race
		}
	}
}

// TestReplacedCatalogsKeptForTasksOnly: a replaced catalog is kept for the
// tasks created under it only when it serves a task tool, and the APIs a
// reload replaced are not kept for Close (GitHub's gateway grew by 11 MB a
// reload).
func TestReplacedCatalogsKeptForTasksOnly(t *testing.T) {
	noTasks := strings.Replace(reloadDocV1, "      x-mcp-task: true\n", "", 1)
	extra := "  /more:\n    get:\n      operationId: getMore\n      responses: {\"200\": {description: ok}}\n"
	for _, c := range []struct {
		name string
		doc  string
		kept int
	}{
		{"with a task tool", reloadDocV1, 1},
		{"without", noTasks, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, spec, _ := reloadGateway(t, ReloadAuto)
			kept := func() int {
				g.catMu.Lock()
				defer g.catMu.Unlock()
				return len(g.oldCats)
			}
			// Put c.doc in service, then replace it.
			for _, doc := range []string{strings.Replace(c.doc, "operationId: getItem", "operationId: getItem\n      summary: Read one item", 1), c.doc + extra} {
				before := kept()
				edit(t, spec, doc)
				version := g.current().version
				if err := g.reload(context.Background(), "test", nil, true, nil); err != nil {
					t.Fatal(err)
				}
				if g.current().version == version {
					t.Fatal("the edit was not swapped in")
				}
				if doc == c.doc+extra && kept()-before != c.kept {
					t.Errorf("replacing a catalog %s kept %d, want %d", c.name, kept()-before, c.kept)
				}
			}
			g.reloadMu.Lock()
			opened := len(g.opened)
			g.reloadMu.Unlock()
			if opened != 0 {
				t.Errorf("%d APIs remembered for Close, want none (nothing runs in-process): each reload's would stay alive", opened)
			}
		})
	}
}
