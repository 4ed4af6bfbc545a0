package auth

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgate/mcpgate/mcp"
)

const wantMetadataURL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"

func testMetadata(issuer string) *ResourceMetadata {
	return &ResourceMetadata{
		Resource:             testResource,
		AuthorizationServers: []string{issuer},
		ScopesSupported:      []string{"tools:read", "offline_access", "tools:write"},
		ResourceName:         "Example MCP Server",
	}
}

func TestResourceMetadataDocument(t *testing.T) {
	meta := &ResourceMetadata{
		Resource:              "HTTPS://MCP.Example.com/mcp/",
		AuthorizationServers:  []string{"https://auth.example.com"},
		ScopesSupported:       []string{"tools:read", "offline_access", "tools:write", "tools:read"},
		ResourceName:          "Example MCP Server",
		ResourceDocumentation: "https://mcp.example.com/docs",
	}
	if got := meta.URL(); got != wantMetadataURL {
		t.Fatalf("URL() = %q, want %q", got, wantMetadataURL)
	}
	if got, want := meta.Paths(), []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}; !slices.Equal(got, want) {
		t.Fatalf("Paths() = %q, want %q", got, want)
	}
	mux := http.NewServeMux()
	if err := meta.Register(mux); err != nil {
		t.Fatal(err)
	}
	const want = `{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com"],` +
		`"scopes_supported":["tools:read","tools:write"],"bearer_methods_supported":["header"],` +
		`"resource_name":"Example MCP Server","resource_documentation":"https://mcp.example.com/docs"}`
	for _, p := range meta.Paths() {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		if rec.Code != 200 || rec.Body.String() != want {
			t.Fatalf("GET %s = %d %s\nwant %s", p, rec.Code, rec.Body, want)
		}
		h := rec.Header()
		if h.Get("Content-Type") != "application/json" || h.Get("Cache-Control") != "public, max-age=3600" || h.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("GET %s headers = %v", p, h)
		}
	}
	h, err := meta.Handler()
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("HEAD", meta.Paths()[0], nil))
	if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("HEAD = %d %q", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", meta.Paths()[0], nil))
	if rec.Code != 405 || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST = %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource/other", nil))
	if rec.Code != 404 {
		t.Fatalf("other path = %d", rec.Code)
	}

	// A resource without a path has only the root form.
	root := &ResourceMetadata{Resource: "https://mcp.example.com", AuthorizationServers: []string{"https://auth.example.com"}}
	if got := root.Paths(); !slices.Equal(got, []string{WellKnownPath}) || root.URL() != "https://mcp.example.com"+WellKnownPath {
		t.Fatalf("root resource: Paths %q URL %q", got, root.URL())
	}

	for _, bad := range []*ResourceMetadata{
		{Resource: "https://mcp.example.com/mcp"},
		{Resource: "http://mcp.example.com/mcp", AuthorizationServers: []string{"https://a.example.com"}},
		{Resource: "https://mcp.example.com/mcp#f", AuthorizationServers: []string{"https://a.example.com"}},
		{Resource: "https://mcp.example.com/mcp", AuthorizationServers: []string{"not a url"}},
	} {
		if _, err := bad.Handler(); err == nil {
			t.Errorf("Handler() of %+v succeeded", bad)
		}
	}
}

// serve runs req through the middleware and reports the response and the
// context the next handler saw (nil when it was not called).
func serve(t *testing.T, v *Validator, meta *ResourceMetadata, req *http.Request) (*httptest.ResponseRecorder, *http.Request) {
	t.Helper()
	var seen *http.Request
	h := Middleware(v, meta)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r
		w.WriteHeader(204)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec, seen
}

func bearer(tok string) *http.Request {
	r := httptest.NewRequest("POST", "https://mcp.example.com/mcp", strings.NewReader("{}"))
	r.Header.Set("Authorization", "Bearer "+tok)
	return r
}

func TestMiddlewareChallenges(t *testing.T) {
	is := newIssuer(t, "", allKeys()...)
	v := newTestValidator(t, is, func(c *Config) { c.RequiredScopes = []string{"tools:read"} })
	meta := testMetadata(is.issuer)
	claims := func(mod func(jwt.MapClaims)) jwt.MapClaims { c := is.claims(testResource); mod(c); return c }

	noHeader := httptest.NewRequest("POST", "https://mcp.example.com/mcp", nil)
	basic := httptest.NewRequest("POST", "https://mcp.example.com/mcp", nil)
	basic.SetBasicAuth("u", "p")
	twice := bearer(sign(t, rsaKey(), is.claims(testResource)))
	twice.Header.Add("Authorization", "Bearer x")
	inQuery := httptest.NewRequest("POST", "https://mcp.example.com/mcp?access_token=abc", nil)

	cases := []struct {
		name      string
		req       *http.Request
		status    int
		challenge string
		body      string
	}{
		{"no token", noHeader, 401,
			`Bearer resource_metadata="` + wantMetadataURL + `", scope="tools:read tools:write"`,
			`{"error":"unauthorized","error_description":"a bearer access token is required"}`},
		{"another scheme", basic, 401,
			`Bearer resource_metadata="` + wantMetadataURL + `", scope="tools:read tools:write"`,
			`{"error":"unauthorized","error_description":"a bearer access token is required"}`},
		{"invalid token", bearer(sign(t, rsaKey(), claims(func(c jwt.MapClaims) { c["aud"] = "https://other.example.com" }))), 401,
			`Bearer error="invalid_token", error_description="the access token is invalid", resource_metadata="` + wantMetadataURL + `"`,
			`{"error":"invalid_token","error_description":"the access token is invalid"}`},
		{"expired token", bearer(sign(t, ecdsaKey(), claims(func(c jwt.MapClaims) { c["exp"] = t0.Add(-time.Hour).Unix() }))), 401,
			`Bearer error="invalid_token", error_description="the access token expired", resource_metadata="` + wantMetadataURL + `"`,
			`{"error":"invalid_token","error_description":"the access token expired"}`},
		{"malformed bearer", bearer("a b"), 401,
			`Bearer error="invalid_token", error_description="the access token is invalid", resource_metadata="` + wantMetadataURL + `"`,
			`{"error":"invalid_token","error_description":"the access token is invalid"}`},
		{"missing scope", bearer(sign(t, ed25519Key(), claims(func(c jwt.MapClaims) { c["scope"] = "other" }))), 403,
			`Bearer error="insufficient_scope", scope="tools:read", resource_metadata="` + wantMetadataURL + `"`,
			`{"error":"insufficient_scope","error_description":"the access token lacks a required scope"}`},
		{"two Authorization headers", twice, 400,
			`Bearer error="invalid_request", error_description="the access token must be sent once, in the Authorization header", resource_metadata="` + wantMetadataURL + `"`,
			`{"error":"invalid_request","error_description":"the access token must be sent once, in the Authorization header"}`},
		{"token in the query", inQuery, 400,
			`Bearer error="invalid_request", error_description="the access token must be sent once, in the Authorization header", resource_metadata="` + wantMetadataURL + `"`,
			`{"error":"invalid_request","error_description":"the access token must be sent once, in the Authorization header"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, seen := serve(t, v, meta, tc.req)
			if seen != nil {
				t.Fatal("next handler ran")
			}
			if rec.Code != tc.status {
				t.Fatalf("status = %d, want %d", rec.Code, tc.status)
			}
			if got := rec.Header().Values("WWW-Authenticate"); len(got) != 1 || got[0] != tc.challenge {
				t.Fatalf("WWW-Authenticate = %q\nwant %q", got, tc.challenge)
			}
			if got := rec.Body.String(); got != tc.body {
				t.Fatalf("body = %s, want %s", got, tc.body)
			}
			if rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Cache-Control") != "no-store" {
				t.Fatalf("headers = %v", rec.Header())
			}
		})
	}
}

func TestMiddlewareAcceptsAndSetsPrincipal(t *testing.T) {
	is := newIssuer(t, "", allKeys()...)
	v := newTestValidator(t, is, func(c *Config) { c.RequiredScopes = []string{"tools:read"} })
	for _, k := range allKeys() {
		raw := sign(t, k, is.claims(testResource))
		req := bearer(raw)
		req.Header.Set("Authorization", "bearer  "+raw) // scheme is case-insensitive
		rec, seen := serve(t, v, testMetadata(is.issuer), req)
		if rec.Code != 204 || seen == nil {
			t.Fatalf("%s: status %d, next ran %v", k.alg, rec.Code, seen != nil)
		}
		p := mcp.PrincipalFrom(seen.Context())
		if p.Subject != "user-42" || p.Tenant != "tenant-7" || p.Credential.Reveal() != raw || !slices.Equal(p.Scopes, []string{"tools:read", "tools:write"}) {
			t.Fatalf("%s: principal = %+v", k.alg, p)
		}
		tok, ok := TokenFrom(seen.Context())
		if !ok || tok.Credential() != raw || !slices.Equal(tok.Audiences, []string{testResource}) {
			t.Fatalf("%s: TokenFrom = %v, %v", k.alg, tok, ok)
		}
	}
}

func TestWriteErrorUnavailable(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteError(rec, testMetadata("https://auth.example.com"), ErrUnavailable)
	if rec.Code != 503 || rec.Header().Get("WWW-Authenticate") != "" || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("= %d %v", rec.Code, rec.Header())
	}
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["error"] != "temporarily_unavailable" {
		t.Fatalf("body = %s", rec.Body)
	}
}

// TestNoTokenInLogs runs every rejection path (and a JWKS failure, which
// the validator logs) with a capturing logger and checks that no record
// holds a token or any part of one.
func TestNoTokenInLogs(t *testing.T) {
	is := newIssuer(t, "", rsaKey(), ecdsaKey())
	c := newCapture()
	v := newTestValidator(t, is, func(cfg *Config) {
		cfg.Logger = slog.New(c)
		cfg.RequiredScopes = []string{"tools:read"}
	})
	claims := func(mod func(jwt.MapClaims)) jwt.MapClaims { cl := is.claims(testResource); mod(cl); return cl }
	tokens := []string{
		sign(t, rsaKey(), is.claims(testResource)),
		sign(t, rsaKey(), claims(func(c jwt.MapClaims) { c["exp"] = t0.Add(-time.Hour).Unix() })),
		sign(t, rsaKey(), claims(func(c jwt.MapClaims) { c["aud"] = "https://x.example.com" })),
		sign(t, ecdsaKey(), claims(func(c jwt.MapClaims) { c["scope"] = "none" })),
		sign(t, testKey{"rsa-1", "RS256", rsaKey2().signer}, is.claims(testResource)),
		"opaque.not-a.jwt",
		"Zm9vYmFyYmF6cXV4cXV1eA",
	}
	is.setJWKSStatus(500) // the unknown-kid refresh fails and is logged
	tokens = append(tokens, sign(t, testKey{"new-kid", "RS256", rsaKey().signer}, is.claims(testResource)))
	for _, tok := range tokens {
		serve(t, v, testMetadata(is.issuer), bearer(tok))
		q := httptest.NewRequest("GET", "https://mcp.example.com/mcp?access_token="+tok, nil)
		serve(t, v, testMetadata(is.issuer), q)
	}
	lines := c.all()
	if len(lines) < len(tokens) {
		t.Fatalf("only %d log records; the rejections were not logged", len(lines))
	}
	sawRefresh := false
	for _, l := range lines {
		sawRefresh = sawRefresh || strings.Contains(l, "JWKS refresh failed")
		for _, tok := range tokens {
			for _, part := range strings.Split(tok, ".") {
				if len(part) >= 8 && strings.Contains(l, part) {
					t.Fatalf("log record holds a token part %q: %s", part, l)
				}
			}
		}
	}
	if !sawRefresh {
		t.Fatalf("the failed JWKS refresh was not logged: %q", lines)
	}
}

func TestRequireScopesStepUp(t *testing.T) {
	is := newIssuer(t, "", rsaKey())
	v := newTestValidator(t, is, nil)
	meta := testMetadata(is.issuer)
	perTool := map[string][][]string{"delete_pet": {{"pets:admin"}, {"pets:write", "pets:delete"}}}
	h := Middleware(v, meta)(RequireScopes(meta, func(r *http.Request) [][]string {
		if r.Header.Get("Mcp-Method") != "tools/call" {
			return nil
		}
		return perTool[r.Header.Get("Mcp-Name")]
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })))

	call := func(scope, tool string) *httptest.ResponseRecorder {
		c := is.claims(testResource)
		c["scope"] = scope
		req := bearer(sign(t, rsaKey(), c))
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", tool)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := call("pets:write", "list_pets"); rec.Code != 204 {
		t.Fatalf("tool without requirement: %d", rec.Code)
	}
	rec := call("pets:write", "delete_pet")
	want := `Bearer error="insufficient_scope", scope="pets:delete", resource_metadata="` + wantMetadataURL + `"`
	if rec.Code != 403 || rec.Header().Get("WWW-Authenticate") != want {
		t.Fatalf("step-up: %d %q\nwant 403 %q", rec.Code, rec.Header().Get("WWW-Authenticate"), want)
	}
	for _, scope := range []string{"pets:admin", "pets:write pets:delete"} {
		if rec := call(scope, "delete_pet"); rec.Code != 204 {
			t.Fatalf("scope %q: %d", scope, rec.Code)
		}
	}
}
