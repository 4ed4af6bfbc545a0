package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/internal/oidctest"
)

// The world of the tests of users' own accounts (credentials mode oauth,
// connect_test.go): oidc-provider as the API's authorization server, an
// upstream that checks every token it gets there, the API's document that
// names both, the gateway's settings, and the user: an MCP client whose
// URL-mode elicitations open in a browser-less browser.

// connectAPIDoc is the API: its oauth2 scheme's authorization code flow is
// at the authorization server (ISSUER is replaced); listPets reads,
// createReport is a long-running operation served as a task.
const connectAPIDoc = `openapi: 3.0.3
info: {title: Pet Store, version: "1"}
components:
  securitySchemes:
    petsAuth:
      type: oauth2
      flows:
        authorizationCode:
          authorizationUrl: ISSUER/auth
          tokenUrl: ISSUER/token
          scopes: {openid: sign-in, "pets:read": read pets, "pets:write": start reports}
  schemas:
    Report:
      type: object
      properties: {id: {type: integer}, kind: {type: string}, status: {type: string}, rows: {type: integer}}
security: [{petsAuth: [openid, "pets:read"]}]
paths:
  /pets:
    get:
      operationId: listPets
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object}}}}
  /reports:
    post:
      operationId: createReport
      x-mcp-task: true
      security: [{petsAuth: [openid, "pets:write"]}]
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, required: [kind], properties: {kind: {type: string}}}
      responses:
        "202": {description: accepted, content: {application/json: {schema: {$ref: "#/components/schemas/Report"}}}}
  /reports/{reportId}:
    get:
      operationId: getReport
      parameters: [{name: reportId, in: path, required: true, schema: {type: integer}}]
      responses:
        "200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Report"}}}}
`

// connectAPI is the API side of the world.
type connectAPI struct {
	AS     *oidctest.Server
	Client oidctest.Client // the gateway's registration
	Other  oidctest.Client // another client of the same server, with the gateway's redirect URI too
	Up     *grantUpstream
	Spec   string
	// Env is the gateway's environment: the state keys (the same for every
	// replica) and the client secrets the settings name.
	Env []string

	// With worldOptions.login: the gateway's login client, and the MCP
	// client whose JWTs (for base/mcp) the callers present.
	Login, MCPClient oidctest.Client
	login            bool
}

// worldOptions shape a connectAPI.
type worldOptions struct {
	accessTTL time.Duration // the access tokens' lifetime (0: an hour)
	// login makes the authorization server the MCP callers' identity
	// provider too (auth mode oauth: JWTs for base/mcp) and the connect page
	// sign the browser in there (connect.login).
	login bool
}

// The environment variables holding the gateway's client secrets
// (client_secret: env:…).
const (
	clientSecretEnv = "PETS_CLIENT_SECRET"
	loginSecretEnv  = "LOGIN_CLIENT_SECRET"
)

// newConnectAPI starts the authorization server, with the gateway
// registered for the callback under base (its connect.base_url), and the
// upstream.
func newConnectAPI(t *testing.T, base string, o worldOptions) *connectAPI {
	t.Helper()
	redirect := base + "/connect/api/callback"
	c := &connectAPI{
		Client: oidctest.Confidential("mcpgate", "gateway-secret", redirect),
		Other:  oidctest.Confidential("other-app", "other-secret", redirect),
		Env:    append(clusterEnv(t), clientSecretEnv+"=gateway-secret", loginSecretEnv+"=login-secret"),
		login:  o.login,
	}
	ao := oidctest.Options{Clients: []oidctest.Client{c.Client, c.Other}, AccessTokenTTL: o.accessTTL}
	if o.login {
		c.Login = oidctest.Client{ID: "gateway-login", Secret: "login-secret", RedirectURIs: []string{base + "/connect/.login"},
			GrantTypes: []string{"authorization_code"}, ResponseTypes: []string{"code"}}
		c.MCPClient = oidctest.Client{ID: "mcp-client", Secret: "mcp-secret", RedirectURIs: []string{"http://127.0.0.1:9/mcp-client/callback"},
			GrantTypes: []string{"authorization_code"}, ResponseTypes: []string{"code"}}
		ao.Clients = append(ao.Clients, c.Login, c.MCPClient)
		ao.Resource = base + "/mcp"
	}
	c.AS = oidctest.Start(t, ao)
	c.Up = newGrantUpstream(t, c.AS, c.Client)
	c.Spec = filepath.Join(t.TempDir(), "pets.yaml")
	if err := os.WriteFile(c.Spec, []byte(strings.ReplaceAll(connectAPIDoc, "ISSUER", c.AS.Issuer)), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// config writes the gateway's settings file: the API with credentials mode
// oauth, the store, the connect pages at base; extra is appended (YAML).
func (c *connectAPI) config(t *testing.T, base, store, extra string) string {
	t.Helper()
	login := ""
	if c.login {
		login = fmt.Sprintf(", login: {client_id: %s, client_secret: \"env:%s\"}", c.Login.ID, loginSecretEnv)
		extra += fmt.Sprintf("auth: {mode: oauth, issuer: %q, resource: %q}\n", c.AS.Issuer, base+"/mcp")
	}
	yaml := fmt.Sprintf(`spec: %s
upstream: %s
store: %q
connect: {base_url: %q, refresh_margin: 1s%s}
credentials:
  mode: oauth
  oauth:
    client_id: %s
    client_secret: env:%s
    revocation_url: %s
    issuer: %s
    title: Pet Store
%s`, c.Spec, c.Up.URL, store, base, login, c.Client.ID, clientSecretEnv, c.AS.RevocationURL(), c.AS.Issuer, extra)
	path := filepath.Join(t.TempDir(), "mcpgate.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startConnectGateway starts one gateway whose connect.base_url is its own
// address, before a new connectAPI: it reserves a loopback port, registers
// the callback on it at the authorization server and listens there (with
// another port, and another world, if that one was taken meanwhile). It
// returns the world, the gateway and its settings file.
func startConnectGateway(t *testing.T, o worldOptions, extra string) (*connectAPI, *gatewayProc, string) {
	t.Helper()
	var last error
	for range 3 {
		addr := freePort(t)
		base := "http://" + addr
		api := newConnectAPI(t, base, o)
		cfg := api.config(t, base, "sqlite:"+filepath.Join(t.TempDir(), "mcpgate.db"), extra)
		g, err := launchAt(t, api.Env, []string{"--config", cfg}, addr)
		if err == nil {
			return api, g, cfg
		}
		if last = err; !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("starting mcpgate with credentials mode oauth: %v", last)
	return nil, nil, ""
}

// seen is one request the upstream received, with what the authorization
// server said about its bearer token.
type seen struct {
	Method, Path string
	Token        string
	Active       bool
	Sub          string // the token's user at the authorization server
	At           time.Time
}

// grantUpstream is the API: it checks every bearer at the authorization
// server (introspection, as the gateway's client), answers 401 to one that
// is not active, serves GET /pets with the token's user as owner and the
// reports as reportUpstream does.
type grantUpstream struct {
	*httptest.Server
	Reports *reportUpstream

	as     *oidctest.Server
	client oidctest.Client
	mu     sync.Mutex
	seen   []seen
}

func newGrantUpstream(t *testing.T, as *oidctest.Server, client oidctest.Client) *grantUpstream {
	u := &grantUpstream{Reports: newReportUpstream(t), as: as, client: client}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func (u *grantUpstream) serve(w http.ResponseWriter, r *http.Request) {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	var in oidctest.Introspection
	if tok != "" {
		in, _ = u.as.Introspect(u.client, tok) // an error counts as an inactive token
	}
	u.mu.Lock()
	u.seen = append(u.seen, seen{Method: r.Method, Path: r.URL.Path, Token: tok, Active: in.Active, Sub: in.Subject, At: time.Now()})
	u.mu.Unlock()
	switch {
	case !in.Active:
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
	case r.URL.Path == "/pets":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"owner":%q,"pets":[{"id":1,"name":"Rex"}]}`, in.Subject)
	default:
		u.Reports.serve(w, r)
	}
}

// requests returns what the upstream received so far, under path (all
// with "").
func (u *grantUpstream) requests(path string) []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []seen
	for _, s := range u.seen {
		if strings.HasPrefix(s.Path, path) {
			out = append(out, s)
		}
	}
	return out
}

// last is the last request under path; it fails the test when there is none.
func (u *grantUpstream) last(t *testing.T, path string) seen {
	t.Helper()
	rs := u.requests(path)
	if len(rs) == 0 {
		t.Fatalf("the upstream received no request under %s", path)
	}
	return rs[len(rs)-1]
}

// active asks the authorization server whether token is still active.
func (c *connectAPI) active(t *testing.T, token string) bool {
	t.Helper()
	return c.AS.Active(t, c.Client, token)
}

// connectCode finds the confirmation code in a connect message.
var connectCode = regexp.MustCompile(`\b[A-Z2-7]{4}-[A-Z2-7]{4}\b`)

// connectPage completes a connect link in b, up to the authorization
// server's first page: the gateway's confirmation page, and the code typed
// into its form. With connect.login the link leads to the sign-in at once.
func connectPage(t testing.TB, b *oidctest.Browser, link, code string) oidctest.Page {
	t.Helper()
	p := b.Get(t, link)
	action := oidctest.FormAction(p)
	if p.Status != http.StatusOK || action == "" || !strings.Contains(p.Body, `name="code"`) {
		return p
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return b.Post(t, action, url.Values{"s": {u.Query().Get("s")}, "code": {code}})
}

// completeConnect completes a connect link in b as the authorization
// server's user login: the gateway's page, the code, login and consent; it
// returns the last page (the gateway's, after the callback).
func completeConnect(t testing.TB, b *oidctest.Browser, link, code, login string) oidctest.Page {
	t.Helper()
	return b.Authorize(t, connectPage(t, b, link, code), login)
}

// atCallback stops a browser at the redirect into a gateway's callback.
func atCallback(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/connect/api/callback") }

// connected reports whether p is the gateway's page after a stored grant.
func connected(p oidctest.Page) bool {
	return p.Status == http.StatusOK && strings.Contains(p.Body, "account is connected")
}

// user is the person at an MCP client: every URL-mode elicitation the
// client gets opens in their browser, which completes the connect page and
// signs in at the authorization server as login; the client then answers
// accept, or decline when told to (or when the browser did not end on the
// gateway's "connected" page).
type user struct {
	login string
	b     *oidctest.Browser

	mu      sync.Mutex
	asked   []*sdk.ElicitParams
	pages   []oidctest.Page
	decline bool
	t       testing.TB
	// beforeCallback, when set, runs when the browser is about to follow
	// the authorization server's redirect into the gateway's callback
	// (a test points the balancer at another replica there).
	beforeCallback func()
}

func newUser(t testing.TB, login string) *user {
	return &user{login: login, b: oidctest.NewBrowser(), t: t}
}

// handle is the client's elicitation handler. It runs in the client's
// goroutine: a page that is not the expected one makes it decline (the
// test then fails on the call's result); only a browser that cannot reach
// a server at all fails the test from here.
func (u *user) handle(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.asked = append(u.asked, req.Params)
	if req.Params.Mode != "url" || u.decline {
		return &sdk.ElicitResult{Action: "decline"}, nil
	}
	if u.beforeCallback != nil {
		u.b.StopAt = atCallback
	}
	p := completeConnect(u.t, u.b, req.Params.URL, connectCode.FindString(req.Params.Message), u.login)
	if u.beforeCallback != nil && p.Status == http.StatusSeeOther {
		u.b.StopAt = nil
		u.beforeCallback()
		p = u.b.Get(u.t, p.Location)
	}
	u.pages = append(u.pages, p)
	if !connected(p) {
		return &sdk.ElicitResult{Action: "decline"}, nil
	}
	return &sdk.ElicitResult{Action: "accept"}, nil
}

// questions returns the elicitations asked so far.
func (u *user) questions() []*sdk.ElicitParams {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*sdk.ElicitParams(nil), u.asked...)
}

// lastPage is the browser's page at the end of the last completion.
func (u *user) lastPage() oidctest.Page {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.pages) == 0 {
		return oidctest.Page{}
	}
	return u.pages[len(u.pages)-1]
}

func (u *user) setDecline(v bool) {
	u.mu.Lock()
	u.decline = v
	u.mu.Unlock()
}

// client connects the user's MCP client (the go-sdk) to url, as the caller
// bearer, declaring the elicitation capability caps (nil: no elicitation
// at all).
func (u *user) client(t *testing.T, url, bearer string, caps *sdk.ElicitationCapabilities) *sdk.ClientSession {
	t.Helper()
	opts := &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{Elicitation: caps}}
	if caps != nil {
		opts.ElicitationHandler = u.handle
	}
	return connectHTTP(t, url, connectOptions{Bearer: bearer, Client: opts})
}

// urlMode is the elicitation capability of a client that opens links.
var urlMode = &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}

// grantRow is one grant as `mcpgate grants list --format json` prints it.
type grantRow struct {
	API         string    `json:"api"`
	Tenant      string    `json:"tenant"`
	Subject     string    `json:"subject"`
	Scopes      string    `json:"scopes"`
	Expiry      time.Time `json:"expiry"`
	Refreshable bool      `json:"refreshable"`
	KeyID       string    `json:"keyId"`
	Updated     time.Time `json:"updated"`
}

// grantsCLI runs `mcpgate grants ARGS…` with env and returns its output;
// a non-zero exit fails the test.
func grantsCLI(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, errOut, err := runGrants(t, env, args...)
	if err != nil {
		t.Fatalf("mcpgate grants %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out + errOut
}

func runGrants(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"grants"}, args...)...)
	cmd.Env = append(baseEnv(t), env...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// listGrants is `mcpgate grants list --config cfg --format json`.
func listGrants(t *testing.T, env []string, cfg string) []grantRow {
	t.Helper()
	out, errOut, err := runGrants(t, env, "list", "--config", cfg, "--format", "json")
	var rows []grantRow
	if err == nil {
		err = json.Unmarshal([]byte(out), &rows)
	}
	if err != nil {
		t.Fatalf("mcpgate grants list: %v\n%s%s", err, out, errOut)
	}
	return rows
}

// balancer is the load balancer in front of replicas: every request goes
// to the replica the test points it at, and it records who served what.
type balancer struct {
	*httptest.Server
	mu     sync.Mutex
	target *gatewayProc
	name   string
	served []string // "NAME METHOD PATH"
}

func newBalancer(t *testing.T) *balancer {
	lb := &balancer{}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		lb.mu.Lock()
		target, name := lb.target, lb.name
		lb.served = append(lb.served, name+" "+r.In.Method+" "+r.In.URL.Path)
		lb.mu.Unlock()
		u, _ := url.Parse(target.Base)
		r.SetURL(u)
		r.Out.Host = r.In.Host // the public name, as a balancer keeps it
	}}
	lb.Server = httptest.NewServer(proxy)
	t.Cleanup(lb.Close)
	return lb
}

// to points the balancer at g, named name in the record.
func (lb *balancer) to(name string, g *gatewayProc) {
	lb.mu.Lock()
	lb.target, lb.name = g, name
	lb.mu.Unlock()
}

// servedBy returns the names of the replicas that served method and path.
func (lb *balancer) servedBy(method, path string) []string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	var out []string
	for _, s := range lb.served {
		if name, rest, _ := strings.Cut(s, " "); rest == method+" "+path {
			out = append(out, name)
		}
	}
	return out
}
