package connect_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/npmtest"
)

// authServer is a running oidc-provider (testdata/oidc/server.mjs).
type authServer struct {
	Issuer string
}

func (a *authServer) authURL() string       { return a.Issuer + "/auth" }
func (a *authServer) tokenURL() string      { return a.Issuer + "/token" }
func (a *authServer) revocationURL() string { return a.Issuer + "/token/revocation" }

// asClient is one client registration at the authorization server.
type asClient struct {
	ID           string   `json:"client_id"`
	Secret       string   `json:"client_secret"`
	RedirectURIs []string `json:"redirect_uris"`
	GrantTypes   []string `json:"grant_types"`
	ResponseType []string `json:"response_types"`
}

func confidential(id, secret, redirect string) asClient {
	return asClient{ID: id, Secret: secret, RedirectURIs: []string{redirect},
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseType: []string{"code"}}
}

// oidcDir installs testdata/oidc's locked dependencies into a cache
// directory and returns it with server.mjs copied in.
func oidcDir(t *testing.T) string {
	t.Helper()
	const what = "the tests against oidc-provider"
	dir := npmtest.Install(t, npmtest.NeedTool(t, "npm", what), filepath.Join("testdata", "oidc"), "mcpgate-connect-oidc-", "oidc-provider/package.json")
	script, err := os.ReadFile(filepath.Join("testdata", "oidc", "server.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "server.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startAuthServer starts oidc-provider with clients; it stops with the test.
func startAuthServer(t *testing.T, clients ...asClient) *authServer {
	t.Helper()
	node := npmtest.NeedTool(t, "node", "the tests against oidc-provider")
	dir := oidcDir(t)
	conf, err := json.Marshal(clients)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(dir, "server.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OIDC_CLIENTS="+string(conf))
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
	var a authServer
	if err := json.Unmarshal([]byte(line), &a); err != nil || a.Issuer == "" {
		t.Fatalf("oidc-provider printed %q (%v); stderr:\n%s", line, err, stderr.String())
	}
	return &a
}

// introspect asks the authorization server about token with the client's
// credentials: whether it is active and whose it is.
func (a *authServer) introspect(t *testing.T, c asClient, token string) (active bool, sub string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, a.Issuer+"/token/introspection", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(c.ID, c.Secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Active bool   `json:"active"`
		Sub    string `json:"sub"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("introspection: HTTP %d: %v", resp.StatusCode, err)
	}
	return out.Active, out.Sub
}

// revoke revokes token at the authorization server (RFC 7009).
func (a *authServer) revoke(t *testing.T, c asClient, token, hint string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, a.revocationURL(), strings.NewReader(url.Values{"token": {token}, "token_type_hint": {hint}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(c.ID, c.Secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revocation: HTTP %d", resp.StatusCode)
	}
}
