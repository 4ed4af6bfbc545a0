// Package oidctest gives tests a real authorization server and a user to
// drive it: oidc-provider (the certified Node OpenID provider, pinned in
// server/package-lock.json, started by [Start]) with its development login
// and consent pages, introspection and revocation; and a [Browser], a
// cookie jar that goes through those pages without a browser.
//
// Invariants: the server listens on a free loopback port, is ready when
// Start returns and stops with the test (its standard input closes); every
// client with the refresh_token grant type gets refresh tokens, which
// rotate; PKCE (S256) is required of every client. Without node or npm a
// test is skipped, except in CI (package npmtest).
package oidctest

import (
	"bufio"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpgate/mcpgate/internal/npmtest"
)

// Client is one client registration at the authorization server (OAuth
// dynamic client metadata, as oidc-provider reads it).
type Client struct {
	ID            string   `json:"client_id"`
	Secret        string   `json:"client_secret,omitempty"`
	RedirectURIs  []string `json:"redirect_uris"`
	GrantTypes    []string `json:"grant_types"`
	ResponseTypes []string `json:"response_types"`
}

// Confidential is a client with a secret that uses the authorization code
// and refresh token grants.
func Confidential(id, secret string, redirectURIs ...string) Client {
	return Client{ID: id, Secret: secret, RedirectURIs: redirectURIs,
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}}
}

// Options configure the server [Start] runs.
type Options struct {
	Clients []Client
	// AccessTokenTTL is the lifetime of access tokens, in whole seconds
	// (default one hour).
	AccessTokenTTL time.Duration
	// Resource, when set, is a resource server (an MCP endpoint): a client
	// asking for it (RFC 8707) gets a JWT access token for it, with the
	// scope mcp (see [Server.UserToken]).
	Resource string
}

// Server is a running oidc-provider.
type Server struct {
	// Issuer is its issuer identifier, http://127.0.0.1:PORT; its endpoints
	// are under it.
	Issuer string
}

// AuthURL is the authorization endpoint.
func (s *Server) AuthURL() string { return s.Issuer + "/auth" }

// TokenURL is the token endpoint.
func (s *Server) TokenURL() string { return s.Issuer + "/token" }

// RevocationURL is the RFC 7009 revocation endpoint.
func (s *Server) RevocationURL() string { return s.Issuer + "/token/revocation" }

// IntrospectionURL is the RFC 7662 introspection endpoint.
func (s *Server) IntrospectionURL() string { return s.Issuer + "/token/introspection" }

//go:embed server/package.json server/package-lock.json server/server.mjs
var serverFiles embed.FS

// Start runs oidc-provider with o's clients; it stops when the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	const what = "the tests against oidc-provider"
	node := npmtest.NeedTool(t, "node", what)
	dir := install(t, npmtest.NeedTool(t, "npm", what))
	clients, err := json.Marshal(o.Clients)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(dir, "server.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OIDC_CLIENTS="+string(clients))
	if o.Resource != "" {
		cmd.Env = append(cmd.Env, "OIDC_RESOURCE="+o.Resource)
	}
	if o.AccessTokenTTL > 0 {
		cmd.Env = append(cmd.Env, "OIDC_ACCESS_TOKEN_TTL="+strconv.Itoa(int(o.AccessTokenTTL/time.Second)))
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the server exits when its stdin closes
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var line string
	select {
	case line = <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("oidc-provider did not start in 30 s; stderr:\n%s", stderr.String())
	}
	var s Server
	if err := json.Unmarshal([]byte(line), &s); err != nil || s.Issuer == "" {
		t.Fatalf("oidc-provider printed %q (%v); stderr:\n%s", line, err, stderr.String())
	}
	return &s
}

// install installs the server's locked dependencies into a cache directory
// (once per lock) and returns it with server.mjs copied in.
func install(t testing.TB, npm string) string {
	t.Helper()
	src := t.TempDir()
	for _, name := range []string{"package.json", "package-lock.json", "server.mjs"} {
		b, err := serverFiles.ReadFile("server/" + name)
		if err == nil {
			err = os.WriteFile(filepath.Join(src, name), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	dir := npmtest.Install(t, npm, src, "mcpgate-connect-oidc-", "oidc-provider/package.json")
	script, _ := serverFiles.ReadFile("server/server.mjs")
	if err := os.WriteFile(filepath.Join(dir, "server.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Introspection is what the server says about a token (RFC 7662).
type Introspection struct {
	Active   bool   `json:"active"`
	Subject  string `json:"sub"`
	ClientID string `json:"client_id"`
	Scope    string `json:"scope"`
	Expiry   int64  `json:"exp"`
}

// Introspect asks the server about token with c's credentials (a client
// may introspect its own tokens).
func (s *Server) Introspect(c Client, token string) (Introspection, error) {
	var out Introspection
	resp, err := s.post(c, s.IntrospectionURL(), url.Values{"token": {token}})
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("introspection: HTTP %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("introspection: %w", err)
	}
	return out, nil
}

// Active reports whether token is active as c sees it; an unanswered
// introspection fails the test.
func (s *Server) Active(t testing.TB, c Client, token string) bool {
	t.Helper()
	in, err := s.Introspect(c, token)
	if err != nil {
		t.Fatal(err)
	}
	return in.Active
}

// Revoke revokes token at the server with c's credentials (RFC 7009); hint
// is access_token or refresh_token.
func (s *Server) Revoke(c Client, token, hint string) error {
	resp, err := s.post(c, s.RevocationURL(), url.Values{"token": {token}, "token_type_hint": {hint}})
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revocation: HTTP %d", resp.StatusCode)
	}
	return nil
}

func (s *Server) post(c Client, endpoint string, form url.Values) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(c.ID, c.Secret)
	return http.DefaultClient.Do(req)
}

// UserToken is the access token that c gets for the user login at the
// server's resource (Options.Resource), with scope: the authorization
// code flow with PKCE in b (c's first redirect URI is where b stops), then
// the code redeemed at the token endpoint.
func (s *Server) UserToken(t testing.TB, b *Browser, c Client, login, resource, scope string) string {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	cfg := &oauth2.Config{ClientID: c.ID, ClientSecret: c.Secret, RedirectURL: c.RedirectURIs[0], Scopes: strings.Fields(scope),
		Endpoint: oauth2.Endpoint{AuthURL: s.AuthURL(), TokenURL: s.TokenURL(), AuthStyle: oauth2.AuthStyleInHeader}}
	res := oauth2.SetAuthURLParam("resource", resource)
	stop := b.StopAt
	b.StopAt = func(r *http.Request) bool { return strings.HasPrefix(r.URL.String(), c.RedirectURIs[0]) }
	p := b.Authorize(t, b.Get(t, cfg.AuthCodeURL("state-"+login, oauth2.S256ChallengeOption(verifier), res)), login)
	b.StopAt = stop
	back, err := url.Parse(p.Location)
	if err != nil || back.Query().Get("code") == "" {
		t.Fatalf("no authorization code for %s: HTTP %d %q %s", c.ID, p.Status, p.Location, p.Body)
	}
	tok, err := cfg.Exchange(context.Background(), back.Query().Get("code"), oauth2.VerifierOption(verifier), res)
	if err != nil {
		t.Fatalf("the token of %s for %s: %v", login, c.ID, err)
	}
	return tok.AccessToken
}
