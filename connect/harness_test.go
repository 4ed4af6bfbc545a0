package connect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/internal/oidctest"
	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/mrtr"
	"github.com/mcpgate/mcpgate/openapi"
)

// clock is the gateway's clock, moved forward to expire tokens.
type clock struct{ off atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) advance(d time.Duration) { c.off.Add(int64(d)) }

// served is one request the balancer sent to a replica.
type served struct {
	Replica      int
	Method, Path string
}

// upstreamCall is what the recording upstream saw.
type upstreamCall struct {
	Token string
	Sub   string // from introspection at the authorization server; "" when inactive
}

// gateway is a gateway-like harness: replicas behind one round-robin
// httptest server, each with the connect handler at /connect/ and an MCP
// endpoint at /mcp whose callers are named by their bearer token (the
// principal), an mcp.Server with one tool of the "pets" API wrapped with the
// connect decorator, whose upstream is a recording server that checks each
// token at the authorization server.
type gateway struct {
	URL    string
	AS     *oidctest.Server
	Client oidctest.Client      // the gateway's registration
	Other  oidctest.Client      // another client of the same authorization server
	Login  oidctest.Client      // the gateway's login client (setup.login)
	Conn   *connect.Connector   // replica 0's
	Conns  []*connect.Connector // one per replica
	Store  connect.Store
	Clock  *clock

	loginMode bool

	mu       sync.Mutex
	upstream []upstreamCall
	rounds   []int // Round (and input responses) the wrapped tool saw, per call
	served   []served
	refuse   int // the upstream answers 401 to this many more calls, whatever the token
	nextID   atomic.Int64
}

// setup chooses the harness: how many replicas, their store (nil: a
// MemoryStore), and whether the connect page signs the browser in at the
// authorization server (which is then also the MCP callers' identity
// provider) instead of asking for a code.
type setup struct {
	replicas int
	store    connect.Store
	login    bool
}

func newGateway(t *testing.T, su setup) *gateway {
	t.Helper()
	if su.store == nil {
		su.store = &connect.MemoryStore{}
	}
	replicas := max(su.replicas, 1)
	g := &gateway{Clock: &clock{}, Store: su.store, loginMode: su.login}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	redirect := srv.URL + "/connect/pets/callback"
	g.Client = oidctest.Confidential("mcpgate", "gateway-secret", redirect)
	g.Other = oidctest.Confidential("other-app", "other-secret", redirect)
	g.Login = oidctest.Client{ID: "gateway-login", Secret: "login-secret", RedirectURIs: []string{srv.URL + "/connect/.login"},
		GrantTypes: []string{"authorization_code"}, ResponseTypes: []string{"code"}}
	g.AS = oidctest.Start(t, oidctest.Options{Clients: []oidctest.Client{g.Client, g.Other, g.Login}})
	var login *connect.Login
	if su.login {
		v, err := auth.NewValidator(context.Background(), auth.Config{Issuer: g.AS.Issuer, Resource: srv.URL + "/mcp",
			Audiences: []string{g.Login.ID}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		login = &connect.Login{Issuer: g.AS.Issuer, ClientID: g.Login.ID, ClientSecret: g.Login.Secret,
			AuthURL: g.AS.AuthURL(), TokenURL: g.AS.TokenURL(), Verify: v.Validate}
	}

	up := httptest.NewServer(http.HandlerFunc(g.serveUpstream))
	t.Cleanup(up.Close)

	// Endpoints and scopes come from the document, as for a real API.
	schemes := map[string]openapi.SecurityScheme{"petsAuth": {Type: "oauth2", Flows: map[string]openapi.OAuthFlow{
		"authorizationCode": {AuthorizationURL: g.AS.AuthURL(), TokenURL: g.AS.TokenURL(), Scopes: map[string]string{"pets:read": "read pets"}},
	}}}
	tools := []openapi.Tool{{Name: "listPets", Route: openapi.Route{Method: "GET", Path: "/pets",
		Security: []openapi.SecurityRequirement{{"petsAuth": {"openid", "pets:read"}}}}}}
	p, err := connect.Provider{API: "pets", Title: "Pet Store", ClientID: g.Client.ID, ClientSecret: g.Client.Secret,
		RevocationURL: g.AS.RevocationURL(), Issuer: g.AS.Issuer}.FromDocument(schemes, "", tools)
	if err != nil {
		t.Fatal(err)
	}
	// Replicas behind a round-robin balancer share the key ring, the store
	// and the replay cache, as replicas on one database do.
	ring := mrtr.GenerateKeyRing(slog.New(slog.DiscardHandler))
	codec, err := mrtr.NewCodec(ring, mrtr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	replay := mrtr.NewMemoryReplayCache(0, g.Clock.now)
	handlers := make([]http.Handler, replicas)
	for i := range handlers {
		conn, err := connect.New(connect.Options{
			BaseURL: srv.URL, Ring: ring, Store: g.Store, Replay: replay,
			Now: g.Clock.now, Logger: slog.New(slog.DiscardHandler), Login: login,
		}, p)
		if err != nil {
			t.Fatal(err)
		}
		g.Conns = append(g.Conns, conn)
		handlers[i] = g.replica(t, conn, codec, up.URL, &tools[0].Route)
	}
	g.Conn = g.Conns[0]
	var next atomic.Uint64
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(next.Add(1)-1) % replicas
		g.mu.Lock()
		g.served = append(g.served, served{Replica: i, Method: r.Method, Path: r.URL.Path})
		g.mu.Unlock()
		handlers[i].ServeHTTP(w, r)
	}))
	return g
}

// replica is one gateway process: its connect handler and its MCP endpoint
// with the pets tool wrapped by its Connector.
func (g *gateway) replica(t *testing.T, conn *connect.Connector, codec *mrtr.Codec, upstream string, route *openapi.Route) http.Handler {
	t.Helper()
	s := mcp.NewServer(mcp.Implementation{Name: "harness", Version: "1"}, &mcp.ServerOptions{StateCodec: mcp.SealedState(codec)})
	decorate, err := conn.Decorator("pets")
	if err != nil {
		t.Fatal(err)
	}
	resolver := conn.AuthResolver("pets")
	client := &http.Client{Transport: conn.Transport(nil)}
	listPets := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		g.mu.Lock()
		g.rounds = append(g.rounds, req.Round*100+len(req.InputResponses))
		g.mu.Unlock()
		out, _ := http.NewRequestWithContext(ctx, http.MethodGet, upstream+"/pets", nil)
		if err := resolver.Apply(ctx, out, route); err != nil {
			return mcp.ToolError("Authentication failed: " + err.Error()), nil
		}
		resp, err := client.Do(out)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return mcp.ToolError(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, body)), nil
		}
		return mcp.TextResult(string(body)), nil
	}
	if err := s.AddTool(&mcp.Tool{Name: "listPets", InputSchema: json.RawMessage(`{"type":"object"}`)}, decorate(listPets)); err != nil {
		t.Fatal(err)
	}
	dt, dh, err := conn.DisconnectTool("pets")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddTool(dt, dh); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/connect/", conn.Handler())
	mcpHandler := mcp.NewHTTPHandler(s, nil)
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if who, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			r = r.WithContext(mcp.WithPrincipal(r.Context(), mcp.Principal{Subject: who, Credential: mcp.NewSecret(who)}))
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	return mux
}

// serveUpstream records the bearer token and answers 200 only for a token
// the authorization server says is active.
func (g *gateway) serveUpstream(w http.ResponseWriter, r *http.Request) {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	var in oidctest.Introspection
	if tok != "" {
		in, _ = g.AS.Introspect(g.Client, tok) // an error is an inactive token
	}
	active, sub := in.Active, in.Subject
	g.mu.Lock()
	if g.refuse > 0 {
		g.refuse--
		active = false
	}
	if !active {
		sub = ""
	}
	g.upstream = append(g.upstream, upstreamCall{Token: tok, Sub: sub})
	g.mu.Unlock()
	if !active {
		http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"owner":%q,"pets":[{"id":1,"name":"Rex"}]}`, sub)
}

// active reports whether the authorization server says token is active.
func (g *gateway) active(t *testing.T, token string) bool {
	t.Helper()
	return g.AS.Active(t, g.Client, token)
}

// revoke revokes token at the authorization server as the gateway.
func (g *gateway) revoke(t *testing.T, token, hint string) {
	t.Helper()
	if err := g.AS.Revoke(g.Client, token, hint); err != nil {
		t.Fatal(err)
	}
}

// refuseNext makes the upstream refuse the next n calls with 401.
func (g *gateway) refuseNext(n int) {
	g.mu.Lock()
	g.refuse = n
	g.mu.Unlock()
}

func (g *gateway) upstreamCalls() []upstreamCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]upstreamCall(nil), g.upstream...)
}

func (g *gateway) toolRounds() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.rounds...)
}

// urlCaps declares URL-mode elicitation.
var urlCaps = mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &struct{}{}}}

// toolResult is a tools/call result as the wire carries it.
type toolResult struct {
	ResultType    string `json:"resultType"`
	InputRequests map[string]struct {
		Method string `json:"method"`
		Params struct {
			Mode    string `json:"mode"`
			Message string `json:"message"`
			URL     string `json:"url"`
		} `json:"params"`
	} `json:"inputRequests"`
	RequestState string `json:"requestState"`
	Content      []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

func (r *toolResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// call makes a tools/call over HTTP as caller; extra params (inputResponses,
// requestState) are merged in.
func (g *gateway) call(t *testing.T, caller string, caps mcp.ClientCapabilities, tool string, extra map[string]any) *toolResult {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": map[string]any{},
		"_meta": map[string]any{mcp.MetaProtocolVersion: mcp.ProtocolVersion, mcp.MetaClientCapabilities: caps}}
	for k, v := range extra {
		params[k] = v
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": g.nextID.Add(1), "method": "tools/call", "params": params})
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	if caller != "" {
		req.Header.Set("Authorization", "Bearer "+caller)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result *toolResult     `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &out); err != nil || out.Result == nil {
		t.Fatalf("tools/call %s: HTTP %d: %s", tool, resp.StatusCode, raw)
	}
	return out.Result
}

// askedToConnect checks that r is an MRTR round with the URL elicitation of
// a connect link, and returns the link and the confirmation code.
func (g *gateway) askedToConnect(t *testing.T, r *toolResult) (link, code string) {
	t.Helper()
	if r.ResultType != "input_required" {
		t.Fatalf("want an input_required round, got %q: %s", r.ResultType, r.text())
	}
	in, ok := r.InputRequests["connect"]
	if !ok || in.Method != mcp.MethodElicit || in.Params.Mode != "url" {
		t.Fatalf("want a URL-mode elicitation under \"connect\", got %+v", r.InputRequests)
	}
	if !strings.HasPrefix(in.Params.URL, g.URL+"/connect/pets?s=") {
		t.Fatalf("the link %q is not the gateway's own connect page", in.Params.URL)
	}
	code = codePattern.FindString(in.Params.Message)
	if g.loginMode != (code == "") {
		t.Fatalf("message %q: a code must be there exactly when the page does not sign the user in", in.Params.Message)
	}
	return in.Params.URL, code
}

var codePattern = regexp.MustCompile(`\b[A-Z2-7]{4}-[A-Z2-7]{4}\b`)

func codeIn(t *testing.T, msg string) string {
	t.Helper()
	code := codePattern.FindString(msg)
	if code == "" {
		t.Fatalf("no confirmation code in %q", msg)
	}
	return code
}

// browser is a user's browser (oidctest.Browser) that also knows the
// gateway's connect page.
type browser struct{ *oidctest.Browser }

type page = oidctest.Page

func newBrowser() *browser { return &browser{oidctest.NewBrowser()} }

// atCallback stops a browser at the redirect into the gateway's callback.
func atCallback(req *http.Request) bool {
	return strings.HasSuffix(req.URL.Path, "/callback") && strings.Contains(req.URL.Path, "/connect/")
}

func (b *browser) get(t *testing.T, u string) page {
	t.Helper()
	return b.Get(t, u)
}

func (b *browser) post(t *testing.T, u string, form url.Values) page {
	t.Helper()
	return b.Post(t, u, form)
}

// confirm opens the link, types code and follows on to the authorization
// server; it returns the page it lands on.
func (b *browser) confirm(t *testing.T, link, code string) page {
	t.Helper()
	p := b.get(t, link)
	if p.Status != http.StatusOK || !strings.Contains(p.Body, `name="code"`) {
		t.Fatalf("connect page: HTTP %d: %s", p.Status, p.Body)
	}
	u, _ := url.Parse(link)
	s := u.Query().Get("s")
	u.RawQuery = ""
	return b.post(t, u.String(), url.Values{"s": {s}, "code": {code}})
}

// authorize goes through the authorization server's login and consent
// pages as login, starting at p; it returns the page after them.
func (b *browser) authorize(t *testing.T, p page, login string) page {
	t.Helper()
	return b.Authorize(t, p, login)
}

// untilCallback goes from link to the redirect into the gateway's callback
// and stops there, returning that redirect (its Location is the callback
// URL); later requests of b follow every redirect again.
func (b *browser) untilCallback(t *testing.T, link, code, login string) page {
	t.Helper()
	b.StopAt = atCallback
	defer func() { b.StopAt = nil }()
	stop := b.authorize(t, b.confirm(t, link, code), login)
	if stop.Status != http.StatusSeeOther || !strings.Contains(stop.Location, "/connect/pets/callback?") {
		t.Fatalf("want a redirect to the callback, got HTTP %d %q", stop.Status, stop.Location)
	}
	return stop
}

// connect completes a link in b as the authorization server's user login
// and returns the gateway's final page.
func (b *browser) connect(t *testing.T, link, code, login string) page {
	t.Helper()
	return b.authorize(t, b.confirm(t, link, code), login)
}

// replicasServing returns the replicas that served method and path, in
// order.
func (g *gateway) replicasServing(method, path string) []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []int
	for _, s := range g.served {
		if s.Method == method && s.Path == path {
			out = append(out, s.Replica)
		}
	}
	return out
}

func (g *gateway) grants(t *testing.T) []connect.Record {
	t.Helper()
	recs, err := g.Store.List(context.Background(), connect.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func (g *gateway) hasGrant(t *testing.T, subject string) bool {
	t.Helper()
	_, err := g.Store.Get(context.Background(), connect.Key{API: "pets", Subject: subject})
	return err == nil
}

func s256(verifier string) string { return oauth2.S256ChallengeFromVerifier(verifier) }
