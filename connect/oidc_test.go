package connect_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// needTool finds a program on PATH; without it the test is skipped, except
// in CI, where it fails.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required in CI for the tests against oidc-provider: %v", name, err)
		}
		t.Skipf("%s not found on PATH: skipping the tests against oidc-provider (install Node.js >= 20 with npm)", name)
	}
	return p
}

// oidcDir installs testdata/oidc's locked dependencies into a cache
// directory named after the lock's hash (the repository is never written)
// and returns it with server.mjs copied in.
func oidcDir(t *testing.T, npm string) string {
	t.Helper()
	src := filepath.Join("testdata", "oidc")
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pkg, lock, script := read("package.json"), read("package-lock.json"), read("server.mjs")
	sum := sha256.Sum256(append(append([]byte(nil), pkg...), lock...))
	dir := filepath.Join(os.TempDir(), "mcpgate-connect-oidc-"+hex.EncodeToString(sum[:8]))
	marker := filepath.Join(dir, "node_modules", "oidc-provider", "package.json")
	if _, err := os.Stat(marker); err != nil {
		// Install privately, then move into place: concurrent runs never
		// see a half-installed tree.
		tmp, err := os.MkdirTemp(os.TempDir(), "mcpgate-connect-oidc-install-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
			if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(os.TempDir(), "mcpgate-connect-npm-cache"), "npm_config_update_notifier=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", tmp, err, out)
		}
		if err := os.Rename(tmp, dir); err != nil {
			if _, statErr := os.Stat(marker); statErr != nil {
				t.Fatalf("moving the install into place: %v", err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "server.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startAuthServer starts oidc-provider with clients; it stops with the test.
func startAuthServer(t *testing.T, clients ...asClient) *authServer {
	t.Helper()
	node := needTool(t, "node")
	dir := oidcDir(t, needTool(t, "npm"))
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
