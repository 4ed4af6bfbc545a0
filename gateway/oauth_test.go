package gateway

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// issuer is a local OAuth authorization server: RFC 8414 metadata and a
// JWK Set with one RSA key.
type issuer struct {
	srv *httptest.Server
	key *rsa.PrivateKey
}

func newIssuer(t *testing.T) *issuer {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: key}
	mux := http.NewServeMux()
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		b64 := base64.RawURLEncoding.EncodeToString
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
			"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
			"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
		}}})
	})
	return is
}

func (is *issuer) token(t *testing.T, sub string, aud []string, scope string) string {
	claims := jwt.MapClaims{"iss": is.srv.URL, "sub": sub, "aud": aud, "scope": scope,
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(is.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOAuthResourceServer(t *testing.T) {
	is := newIssuer(t)
	const resource = "http://127.0.0.1/mcp"
	g := newDemo(t, Config{
		Auth: AuthConfig{Mode: "oauth", Issuer: is.srv.URL, Resource: resource,
			ToolScopes: map[string][]string{"deletePet": {"pets:write"}}},
		Credentials: Credentials{UpstreamAudiences: []string{"petstore"}},
	})
	ts := httptest.NewServer(g.Handler())
	defer ts.Close()

	post := func(token, method, name, params string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{`+params+`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}

	// No token: 401 with the RFC 9728 pointer.
	resp, _ := post("", "tools/list", "", "")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`) {
		t.Fatalf("no token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	// The metadata document.
	mr, err := http.Get(ts.URL + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
	}
	json.NewDecoder(mr.Body).Decode(&meta)
	mr.Body.Close()
	if meta.Resource != resource || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != is.srv.URL || !strings.Contains(strings.Join(meta.ScopesSupported, " "), "pets:write") {
		t.Fatalf("metadata: %+v", meta)
	}
	// A token for another resource: 401.
	resp, _ = post(is.token(t, "alice", []string{"https://other.example"}, ""), "tools/list", "", "")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong audience: %d", resp.StatusCode)
	}
	// Scope-aware tools/list: without pets:write, deletePet is hidden and
	// calling it looks like calling an unknown tool.
	reader := is.token(t, "alice", []string{resource, "petstore"}, "pets:read")
	resp, body := post(reader, "tools/list", "", "")
	if resp.StatusCode != 200 || strings.Contains(body, `"deletePet"`) || !strings.Contains(body, `"getPet"`) || !strings.Contains(body, `"cacheScope":"private"`) {
		t.Fatalf("reader's tools/list: %d %s", resp.StatusCode, body[:min(len(body), 300)])
	}
	_, body = post(reader, "tools/call", "deletePet", `"name":"deletePet","arguments":{"petId":2},`)
	if !strings.Contains(body, "Unknown tool: deletePet") {
		t.Fatalf("hidden tool call: %s", body)
	}
	writer := is.token(t, "bob", []string{resource, "petstore"}, "pets:read pets:write")
	if _, body = post(writer, "tools/list", "", ""); !strings.Contains(body, `"deletePet"`) {
		t.Fatal("a writer must see deletePet")
	}
	// Passthrough only when the token's audience covers the upstream.
	// (The demo upstream knows only its own demo-token, so a forwarded JWT
	// comes back as the upstream's 401: proof that it was sent.)
	_, body = post(reader, "tools/call", "getPet", `"name":"getPet","arguments":{"petId":1},`)
	if !strings.Contains(body, `Authentication failed (HTTP 401`) {
		t.Fatalf("a token issued for the upstream must be forwarded: %s", body)
	}
	narrow := is.token(t, "carol", []string{resource}, "pets:read")
	_, body = post(narrow, "tools/call", "getPet", `"name":"getPet","arguments":{"petId":1},`)
	if !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "audience") || strings.Contains(body, "HTTP 401") {
		t.Fatalf("a token not issued for the upstream must not be forwarded: %s", body)
	}
}
