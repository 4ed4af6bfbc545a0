package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The OAuth resource-server mode end to end: the real binary with
// --auth oauth, an in-test authorization server (metadata, JWKS, an RFC 8693
// token endpoint), a recording upstream, and the go-sdk client carrying a
// token.

const oauthResource = "https://mcp.example.test/mcp"

type authServer struct {
	*httptest.Server
	key       *rsa.PrivateKey
	exchanges atomic.Int32
}

func newAuthServer(t *testing.T) *authServer {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	as := &authServer{key: key}
	mux := http.NewServeMux()
	as.Server = httptest.NewServer(mux)
	t.Cleanup(as.Close)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": as.URL, "jwks_uri": as.URL + "/jwks", "token_endpoint": as.URL + "/token"})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		b64 := base64.RawURLEncoding.EncodeToString
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
			"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes())}}})
	})
	// RFC 8693: a fresh upstream token per exchange, issued only to the
	// gateway's client credentials.
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || id != "mcpgate" || secret != "gw-secret" || r.FormValue("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" || r.FormValue("subject_token") == "" {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		n := as.exchanges.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"upstream-token-%d","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":3600}`, n)
	})
	return as
}

func (as *authServer) token(t *testing.T, sub, scope string, aud ...string) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": as.URL, "sub": sub, "aud": aud, "scope": scope,
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()})
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(as.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const oauthSpec = `{"openapi":"3.1.0","info":{"title":"scoped API","version":"1"},
 "components":{"securitySchemes":{
   "oauth":{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"https://as.example/token","scopes":{"items:read":"read","items:write":"write"}}}},
   "apikey":{"type":"apiKey","in":"header","name":"X-API-Key"}}},
 "paths":{
  "/items":{"get":{"operationId":"listItems","security":[{"oauth":["items:read"]}],"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object"}}}}}}},
  "/items/{n}":{"delete":{"operationId":"deleteItem","security":[{"oauth":["items:write"]}],"parameters":[{"name":"n","in":"path","required":true,"schema":{"type":"integer"}}],"responses":{"204":{"description":"deleted"}}}},
  "/slow":{"get":{"operationId":"slowRead","x-mcp-task":true,"security":[{"oauth":["items:read"]}],"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object"}}}}}}},
  "/profile":{"get":{"operationId":"getProfile","security":[{"apikey":[]}],"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object"}}}}}}}}}`

// credRecorder is the upstream: it records the credentials each request
// carried.
type credRecorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "PATH auth=… key=…"
}

func newCredRecorder(t *testing.T) *credRecorder {
	rec := &credRecorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, fmt.Sprintf("%s %s auth=%s key=%s", r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-API-Key")))
		rec.mu.Unlock()
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (rec *credRecorder) last() string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.seen) == 0 {
		return ""
	}
	return rec.seen[len(rec.seen)-1]
}

func startOAuthGateway(t *testing.T, as *authServer, up *credRecorder, config string, env ...string) *gatewayProc {
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.json")
	cfg := filepath.Join(dir, "mcpgate.yaml")
	if err := os.WriteFile(spec, []byte(oauthSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return startGateway(t, env, "--config", cfg, "--spec", spec, "--upstream", up.URL, "--store", "memory",
		"--auth", "oauth", "--issuer", as.URL, "--resource", oauthResource)
}

func toolSet(t *testing.T, url, token string) []string {
	cs := connectHTTP(t, url, connectOptions{Bearer: token})
	names := toolNames(t, cs)
	slices.Sort(names)
	return names
}

func TestOAuthScopedToolsAndPassthrough(t *testing.T) {
	as, up := newAuthServer(t), newCredRecorder(t)
	g := startOAuthGateway(t, as, up, "credentials: {mode: passthrough}\n")
	reader := as.token(t, "alice", "items:read", oauthResource, up.URL)
	// getProfile needs an API key, not an OAuth scope: everyone sees it.
	if got := toolSet(t, g.URL, reader); !slices.Equal(got, []string{"getProfile", "listItems", "slowRead"}) {
		t.Fatalf("a reader sees %v", got)
	}
	writer := as.token(t, "bob", "items:read items:write", oauthResource, up.URL)
	if got := toolSet(t, g.URL, writer); !slices.Equal(got, []string{"deleteItem", "getProfile", "listItems", "slowRead"}) {
		t.Fatalf("a writer sees %v", got)
	}
	cs := connectHTTP(t, g.URL, connectOptions{Bearer: reader})
	wantOK(t, "listItems", call(t, cs, "listItems", nil))
	if got := up.last(); got != "GET /items auth=Bearer "+reader+" key=" {
		t.Fatalf("passthrough: the upstream saw %q", got)
	}
	// A token not issued for the upstream is never forwarded.
	narrow := as.token(t, "carol", "items:read", oauthResource)
	before := up.last()
	cs = connectHTTP(t, g.URL, connectOptions{Bearer: narrow})
	wantError(t, "listItems", call(t, cs, "listItems", nil), "audience")
	if up.last() != before {
		t.Fatalf("a token for another audience reached the upstream: %q", up.last())
	}
	if strings.Contains(g.Log.String(), reader) || strings.Contains(g.Log.String(), narrow) {
		t.Fatal("a token reached the gateway's log")
	}
}

func TestOAuthExchange(t *testing.T) {
	as, up := newAuthServer(t), newCredRecorder(t)
	g := startOAuthGateway(t, as, up, fmt.Sprintf(`credentials:
  mode: exchange
  exchange: {token_endpoint: %q, client_id: mcpgate, client_secret: "env:GW_SECRET"}
`, as.URL+"/token"), "GW_SECRET=gw-secret")
	caller := as.token(t, "alice", "items:read", oauthResource) // not issued for the upstream
	cs := connectHTTP(t, g.URL, connectOptions{Bearer: caller})
	wantOK(t, "listItems", call(t, cs, "listItems", nil))
	wantOK(t, "listItems", call(t, cs, "listItems", nil))
	if got := up.last(); got != "GET /items auth=Bearer upstream-token-1 key=" {
		t.Fatalf("exchange: the upstream saw %q (want the exchanged token, never the caller's)", got)
	}
	if n := as.exchanges.Load(); n != 1 {
		t.Fatalf("%d exchanges for two calls with one token (the exchanged token is cached)", n)
	}
}

func TestOAuthStatic(t *testing.T) {
	as, up := newAuthServer(t), newCredRecorder(t)
	g := startOAuthGateway(t, as, up, "credentials: {mode: static}\n", "MCPGATE_SECRET_APIKEY=static-key")
	caller := as.token(t, "alice", "items:read", oauthResource, up.URL)
	cs := connectHTTP(t, g.URL, connectOptions{Bearer: caller})
	wantOK(t, "getProfile", call(t, cs, "getProfile", nil))
	if got := up.last(); got != "GET /profile auth= key=static-key" {
		t.Fatalf("static: the upstream saw %q (the caller's token must not travel)", got)
	}
	if strings.Contains(g.Log.String(), "static-key") {
		t.Fatal("the static secret reached the log")
	}
}

// TestOAuthSubjectBinding: sealed MRTR state and tasks created by one
// subject are refused to another, even with the same scopes.
func TestOAuthSubjectBinding(t *testing.T) {
	as, up := newAuthServer(t), newCredRecorder(t)
	g := startOAuthGateway(t, as, up, "credentials: {mode: passthrough}\n")
	alice := as.token(t, "alice", "items:read items:write", oauthResource, up.URL)
	bob := as.token(t, "bob", "items:read items:write", oauthResource, up.URL)
	post := func(token, method, name string, params map[string]any) (map[string]any, map[string]any) {
		params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, g.URL, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		req.Header.Set("Mcp-Name", name)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Result, Error map[string]any }
		json.NewDecoder(resp.Body).Decode(&out)
		return out.Result, out.Error
	}
	// Alice's confirmation question cannot be answered by Bob.
	res, _ := post(alice, "tools/call", "deleteItem", map[string]any{"name": "deleteItem", "arguments": map[string]any{"n": 1}})
	state, _ := res["requestState"].(string)
	if res["resultType"] != "input_required" || state == "" {
		t.Fatalf("deleteItem should ask alice first: %v", res)
	}
	answer := func() map[string]any {
		return map[string]any{"name": "deleteItem", "arguments": map[string]any{"n": 1}, "requestState": state,
			"inputResponses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}
	}
	if _, e := post(bob, "tools/call", "deleteItem", answer()); e == nil || e["code"] != float64(-32602) {
		t.Fatalf("bob resumed alice's requestState: %v", e)
	}
	if res, e := post(alice, "tools/call", "deleteItem", answer()); e != nil || res["resultType"] != "complete" {
		t.Fatalf("alice's own resume: %v %v", res, e)
	}
	// Alice's task is unknown to Bob.
	res, _ = post(alice, "tools/call", "slowRead", map[string]any{"name": "slowRead", "arguments": map[string]any{}})
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" {
		t.Fatalf("slowRead should be a task: %v", res)
	}
	_, bobErr := post(bob, "tasks/get", id, map[string]any{"taskId": id})
	_, unknownErr := post(bob, "tasks/get", "no-such-task", map[string]any{"taskId": "no-such-task"})
	if bobErr == nil || fmt.Sprint(bobErr) != fmt.Sprint(unknownErr) {
		t.Fatalf("bob's view of alice's task %v differs from an unknown id %v", bobErr, unknownErr)
	}
	if _, e := post(bob, "tasks/cancel", id, map[string]any{"taskId": id}); e == nil {
		t.Fatal("bob cancelled alice's task")
	}
	if res, e := post(alice, "tasks/get", id, map[string]any{"taskId": id}); e != nil || res["taskId"] != id {
		t.Fatalf("alice's own task: %v %v", res, e)
	}
}
