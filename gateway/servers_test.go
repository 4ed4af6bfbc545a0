package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
)

// serversDoc has an operation on a server of its own (as GitHub's release
// uploads are), one on the upstream's origin under another path, one whose
// server is a template, and one on the document's servers.
const serversDoc = `openapi: 3.0.3
info: {title: Files, version: "1"}
servers: [{url: "https://api.example.com"}]
paths:
  /files/{id}:
    get:
      operationId: getFile
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
  /uploads:
    post:
      operationId: upload
      servers: [{url: "UPLOADS/v1"}]
      requestBody: {content: {application/json: {schema: {type: object}}}}
      responses: {"200": {description: ok}}
  /legacy:
    get:
      operationId: legacyList
      servers: [{url: "UPSTREAM/v0"}]
      responses: {"200": {description: ok}}
  /regional:
    get:
      operationId: regional
      servers: [{url: "https://{region}.example.com"}]
      responses: {"200": {description: ok}}
`

// TestOperationServers: an operation's own server is called, with the
// caller's credential, only when operation_servers allows its origin (or
// it is on the upstream's origin); otherwise the call goes to the upstream
// and the load says so once.
func TestOperationServers(t *testing.T) {
	upstream, uploads := newRecording(t), newRecording(t)
	doc := strings.NewReplacer("UPLOADS", uploads.srv.URL, "UPSTREAM", upstream.srv.URL).Replace(serversDoc)
	spec := filepath.Join(t.TempDir(), "files.yaml")
	edit(t, spec, doc)
	for _, tc := range []struct {
		name             string
		allowed          []string
		upstreamWant     []string
		uploadsWant      []string
		warnsAboutIgnore bool
	}{
		{"allowed", []string{uploads.srv.URL}, []string{"GET /v0/legacy auth=Bearer caller-token key=", "GET /regional auth=Bearer caller-token key="},
			[]string{"POST /v1/uploads auth=Bearer caller-token key="}, false},
		{"not allowed", nil, []string{"POST /uploads auth=Bearer caller-token key=", "GET /v0/legacy auth=Bearer caller-token key=", "GET /regional auth=Bearer caller-token key="},
			nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upstream.reset()
			uploads.reset()
			var logs bytes.Buffer
			g, err := New(context.Background(), Config{Store: "memory", Spec: spec, Upstream: upstream.srv.URL,
				OperationServers: tc.allowed}, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			c, ctx := callerClient(g, "caller-token"), context.Background()
			for _, call := range []struct {
				tool string
				args map[string]any
			}{{"upload", map[string]any{"body": map[string]any{}}}, {"legacyList", nil}, {"regional", nil}} {
				if res, err := c.CallTool(ctx, call.tool, call.args); err != nil || res.IsError {
					t.Fatalf("%s: %v %s", call.tool, err, text(res))
				}
			}
			if got := upstream.requests(); !slices.Equal(got, tc.upstreamWant) {
				t.Errorf("upstream saw %q, want %q", got, tc.upstreamWant)
			}
			if got := uploads.requests(); !slices.Equal(got, tc.uploadsWant) {
				t.Errorf("the uploads server saw %q, want %q", got, tc.uploadsWant)
			}
			warned := strings.Contains(logs.String(), "operation_servers does not allow") && strings.Contains(logs.String(), "first=\"upload (")
			if warned != tc.warnsAboutIgnore {
				t.Errorf("warned %v, want %v:\n%s", warned, tc.warnsAboutIgnore, logs.String())
			}
		})
	}
}

// TestOperationServerChoice: which of an operation's servers its calls go
// to, for the upstream https://api.example.com/v1.
func TestOperationServerChoice(t *testing.T) {
	upstream, _ := url.Parse("https://api.example.com/v1")
	allowed := map[string]bool{"https://uploads.example.com": true}
	for _, tc := range []struct {
		servers []string
		want    string // "" for the upstream
		listed  bool
	}{
		{nil, "", false},
		{[]string{"https://api.example.com/v1"}, "", true},
		{[]string{"https://API.example.com:443/v1/"}, "", true},
		{[]string{"https://api.example.com/v2"}, "https://api.example.com/v2", true},
		{[]string{"https://uploads.example.com"}, "https://uploads.example.com", true},
		{[]string{"https://uploads.example.com:443/x?q=1"}, "https://uploads.example.com:443/x", true},
		{[]string{"http://uploads.example.com"}, "", true}, // another origin (scheme)
		{[]string{"https://evil.example.com", "https://uploads.example.com/u"}, "https://uploads.example.com/u", true},
		{[]string{"https://{region}.example.com"}, "", true},
		{[]string{"/relative"}, "", true},
		{[]string{"https://user:pw@uploads.example.com"}, "", true},
	} {
		u, listed := operationServer(&openapi.Tool{Route: openapi.Route{Servers: tc.servers}}, upstream, allowed)
		got := ""
		if u != nil {
			got = u.String()
		}
		if got != tc.want || listed != tc.listed {
			t.Errorf("%q: %q %v, want %q %v", tc.servers, got, listed, tc.want, tc.listed)
		}
	}
}

// TestOperationServersSetting: an entry must be an origin.
func TestOperationServersSetting(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"https://uploads.github.com", "https://uploads.github.com"},
		{"HTTPS://Uploads.GitHub.com:443/", "https://uploads.github.com"},
		{"http://127.0.0.1:8081", "http://127.0.0.1:8081"},
		{"https://uploads.github.com/path", ""},
		{"uploads.github.com", ""},
		{"ftp://x", ""},
		{"https://u:p@x", ""},
	} {
		got, err := originSetting(tc.in)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("%q: %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	_, err := New(context.Background(), Config{Store: "memory", Demo: true, OperationServers: []string{"https://x/y"}}, discardLogger())
	if err == nil || !strings.Contains(err.Error(), "operation_servers[0]") {
		t.Errorf("a bad entry: %v", err)
	}
}

// callerClient is an in-memory client calling as the bearer of token.
func callerClient(g *Gateway, token string) *mcp.Client {
	c := mcp.NewClient(g.Server())
	c.Principal = g.callers.principal(token)
	return c
}

func (r *recording) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = nil
}

// TestOperationServerStatusCall: an operation on a server of its own that
// answers 202 with a Location there is told to read its status through the
// status tool on that same server, not left without one.
func TestOperationServerStatusCall(t *testing.T) {
	uploads := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "http://"+r.Host+"/v1/jobs/42")
		w.WriteHeader(http.StatusAccepted)
	}))
	defer uploads.Close()
	doc := `openapi: 3.0.3
info: {title: Jobs, version: "1"}
paths:
  /imports:
    post:
      operationId: startImport
      servers: [{url: "UPLOADS/v1"}]
      responses: {"202": {description: accepted}}
  /jobs/{id}:
    get:
      operationId: getJob
      servers: [{url: "UPLOADS/v1"}]
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses: {"200": {description: ok}}
`
	spec := filepath.Join(t.TempDir(), "jobs.yaml")
	edit(t, spec, strings.ReplaceAll(doc, "UPLOADS", uploads.URL))
	g, err := New(context.Background(), Config{Store: "memory", Spec: spec, Upstream: "http://127.0.0.1:1",
		OperationServers: []string{uploads.URL}, TaskInlineWait: -1,
		Tools: ServedTools{ToolsConfig: ToolsConfig{Tasks: []string{"startImport"}}}}, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	res, err := callerClient(g, "caller-token").CallTool(context.Background(), "startImport", nil)
	if err != nil || res.IsError {
		t.Fatalf("startImport: %v %s", err, text(res))
	}
	if want := `Call getJob with {"id":42} to read its status.`; !strings.Contains(text(res), want) {
		t.Errorf("the still-running answer %q does not say %q", text(res), want)
	}
}
