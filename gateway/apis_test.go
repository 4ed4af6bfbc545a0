package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/mcp"
)

// recording is an upstream that remembers what reached it.
type recording struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string // "METHOD PATH auth=… key=…"
}

func newRecording(t *testing.T) *recording {
	r := &recording{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, req.Method+" "+req.URL.Path+" auth="+req.Header.Get("Authorization")+" key="+req.Header.Get("X-Api-Key"))
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"1"}`))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recording) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

const itemsDoc = `openapi: 3.0.3
info: {title: %s, version: "1"}
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-Api-Key}
    bearer: {type: http, scheme: bearer}
paths:
  /items/{id}:
    get:
      operationId: getItem
      security: [{bearer: []}, {key: []}]
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
`

func writeDoc(t *testing.T, title string) string {
	p := filepath.Join(t.TempDir(), title+".yaml")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(itemsDoc, "%s", title)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSeveralAPIs: two APIs behind one endpoint, each tool named after its
// API, and every call and every credential lands on its own API only: the
// caller's bearer on the passthrough API, the static secret on the other.
func TestSeveralAPIs(t *testing.T) {
	alpha, beta := newRecording(t), newRecording(t)
	g, err := New(context.Background(), Config{Store: "memory", APIs: []APIConfig{
		{Name: "alpha", Spec: writeDoc(t, "Alpha"), Upstream: alpha.srv.URL},
		{Name: "beta", Spec: writeDoc(t, "Beta"), Upstream: beta.srv.URL,
			Credentials: Credentials{Mode: "static", Static: map[string]string{"key": "beta-secret"}}},
	}}, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	c := mcp.NewClient(g.Server())
	c.Principal = g.callers.principal("caller-token")
	ctx := context.Background()
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"alpha_getItem", "beta_getItem"}) {
		t.Fatalf("tools %v", names)
	}
	for _, name := range names {
		if res, err := c.CallTool(ctx, name, map[string]any{"id": "7"}); err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
	}
	if got := alpha.requests(); !slices.Equal(got, []string{"GET /items/7 auth=Bearer caller-token key="}) {
		t.Errorf("alpha received %q", got)
	}
	if got := beta.requests(); !slices.Equal(got, []string{"GET /items/7 auth= key=beta-secret"}) {
		t.Errorf("beta received %q (the caller's bearer must not reach it)", got)
	}
	if strings.Contains(g.Server().Info().Title, alpha.srv.URL) {
		t.Error("the server's title names an upstream address")
	}
}

// TestSeveralAPIsRefused: settings that would mix APIs up are refused at
// start, naming the API.
func TestSeveralAPIsRefused(t *testing.T) {
	up := newRecording(t)
	doc := writeDoc(t, "A")
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{APIs: []APIConfig{{Name: "a", Spec: doc, Upstream: up.srv.URL}, {Name: "b", Spec: doc, Upstream: up.srv.URL}}},
			"apis a, b all use credentials mode passthrough"},
		{Config{APIs: []APIConfig{{Name: "a_b", Spec: doc, Upstream: up.srv.URL}}}, `name "a_b"`},
		{Config{APIs: []APIConfig{{Name: "a", Spec: doc, Upstream: up.srv.URL}, {Name: "A", Spec: doc, Upstream: up.srv.URL, Credentials: Credentials{Mode: "none"}}}}, `"A" is used twice`},
		{Config{Spec: doc, Upstream: up.srv.URL, APIs: []APIConfig{{Name: "a", Spec: doc, Upstream: up.srv.URL}}}, "not both"},
		{Config{APIs: []APIConfig{{Name: "a", Spec: doc, Upstream: "ftp://x"}}}, "api a: upstream"},
	}
	for _, c := range cases {
		c.cfg.Store = "memory"
		g, err := New(context.Background(), c.cfg, discardLogger())
		if err == nil {
			g.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.cfg.APIs, err, c.want)
		}
	}
}

// TestBrokenPathItem: a path item that cannot be built stops the start
// with the document's name and the item's place, as a load error, though
// it is found while the tools are made (the path items are built then).
func TestBrokenPathItem(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "broken.json")
	doc := `{"openapi": "3.0.3", "info": {"title": "b", "version": "1"}, "paths": {
	  "/ok": {"get": {"responses": {"200": {"description": "ok"}}}}, "/x": {"get": 7}}}`
	if err := os.WriteFile(spec, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), Config{Store: "memory", Spec: spec, Upstream: "http://127.0.0.1:1"}, discardLogger())
	if err == nil {
		g.Close()
	}
	if want := "openapi: " + spec + ": paths./x.get: operation is not an object"; err == nil || err.Error() != want {
		t.Errorf("New: %v, want %q", err, want)
	}
}
