package auth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgate/mcpgate/mcp"
)

func allKeys() []testKey { return []testKey{rsaKey(), ecdsaKey(), ed25519Key()} }

func TestValidTokenEachAlgorithm(t *testing.T) {
	is := newIssuer(t, "", allKeys()...)
	v := newTestValidator(t, is, nil)
	for _, k := range allKeys() {
		t.Run(k.alg, func(t *testing.T) {
			raw := sign(t, k, is.claims(testResource))
			p, err := v.Validate(t.Context(), raw)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			want := mcp.Principal{Subject: "user-42", Tenant: "tenant-7", Scopes: []string{"tools:read", "tools:write"}, Credential: mcp.NewSecret(raw)}
			if p.Subject != want.Subject || p.Tenant != want.Tenant || !slices.Equal(p.Scopes, want.Scopes) || p.Credential != want.Credential {
				t.Fatalf("principal = %+v, want %+v", p, want)
			}
			if p.Claims["sub"] != "user-42" || p.Claims["iss"] != is.issuer { // for policy's caller.claims
				t.Fatalf("principal claims = %v", p.Claims)
			}
			tok, err := v.ValidateToken(t.Context(), raw)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tok.Audiences, []string{testResource}) || tok.Issuer != is.issuer || !tok.ExpiresAt.Equal(t0.Add(10*time.Minute)) {
				t.Fatalf("token = %v", tok)
			}
		})
	}
	if got := is.jwksHits.Load(); got != 1 {
		t.Fatalf("JWKS fetched %d times, want 1 (keys cached)", got)
	}
}

func TestValidTokenVariants(t *testing.T) {
	is := newIssuer(t, "", allKeys()...)
	v := newTestValidator(t, is, func(c *Config) {
		c.Audiences = []string{"api://mcpgate"}
		c.ImpliedScopes = map[string][]string{"admin": {"tools:write"}, "tools:write": {"tools:read"}}
	})
	cases := []struct {
		name   string
		mod    func(jwt.MapClaims)
		key    testKey
		scopes []string
		tenant string
	}{
		{"scp array", func(c jwt.MapClaims) { delete(c, "scope"); c["scp"] = []string{"a", "b"} }, rsaKey(), []string{"a", "b"}, "tenant-7"},
		{"scope and scp merged", func(c jwt.MapClaims) { c["scope"] = "b"; c["scp"] = []string{"a", "b"} }, rsaKey(), []string{"a", "b"}, "tenant-7"},
		{"implied scopes, transitively", func(c jwt.MapClaims) { c["scope"] = "admin" }, rsaKey(), []string{"admin", "tools:read", "tools:write"}, "tenant-7"},
		{"aud array with extra audience", func(c jwt.MapClaims) { c["aud"] = []string{"other", "api://mcpgate"} }, rsaKey(), []string{"tools:read", "tools:write"}, "tenant-7"},
		{"aud with upper-case host, default port, trailing slash", func(c jwt.MapClaims) { c["aud"] = "HTTPS://MCP.Example.com:443/mcp/" }, ecdsaKey(), []string{"tools:read", "tools:write"}, "tenant-7"},
		{"no tenant claim", func(c jwt.MapClaims) { delete(c, "tid") }, ed25519Key(), []string{"tools:read", "tools:write"}, ""},
		{"expired within leeway", func(c jwt.MapClaims) { c["exp"] = t0.Add(-59 * time.Second).Unix() }, rsaKey(), []string{"tools:read", "tools:write"}, "tenant-7"},
		{"nbf within leeway", func(c jwt.MapClaims) { c["nbf"] = t0.Add(59 * time.Second).Unix() }, rsaKey(), []string{"tools:read", "tools:write"}, "tenant-7"},
		{"no kid: matched against the key set", func(c jwt.MapClaims) {}, testKey{"-", "ES256", ecKey()}, []string{"tools:read", "tools:write"}, "tenant-7"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := is.claims(testResource)
			tc.mod(c)
			p, err := v.Validate(t.Context(), sign(t, tc.key, c))
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !slices.Equal(p.Scopes, tc.scopes) || p.Tenant != tc.tenant {
				t.Fatalf("scopes %q tenant %q, want %q %q", p.Scopes, p.Tenant, tc.scopes, tc.tenant)
			}
		})
	}
}

// publicKeyPEM and DER are what an algorithm-confusion attacker uses as
// the HMAC secret.
func publicKeyForms(t *testing.T) [][]byte {
	der, err := x509.MarshalPKIXPublicKey(rsaKey().signer.Public())
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), der}
}

func TestRejectedTokens(t *testing.T) {
	is := newIssuer(t, "", allKeys()...)
	v := newTestValidator(t, is, nil)
	valid := func() jwt.MapClaims { return is.claims(testResource) }
	with := func(mod func(jwt.MapClaims)) jwt.MapClaims { c := valid(); mod(c); return c }

	hs := func(secret []byte) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, valid())
		tok.Header["kid"] = rsaKey().kid
		s, err := tok.SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	none := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodNone, valid())
		tok.Header["kid"] = rsaKey().kid
		s, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good := sign(t, rsaKey(), valid())
	parts := strings.Split(good, ".")
	otherPayload := strings.Split(sign(t, rsaKey(), with(func(c jwt.MapClaims) { c["sub"] = "admin" })), ".")[1]
	forms := publicKeyForms(t)

	cases := []struct {
		name    string
		token   string
		expired bool
	}{
		{"wrong issuer", sign(t, rsaKey(), with(func(c jwt.MapClaims) { c["iss"] = "https://evil.example.com" })), false},
		{"no issuer", sign(t, rsaKey(), with(func(c jwt.MapClaims) { delete(c, "iss") })), false},
		{"wrong audience", sign(t, rsaKey(), with(func(c jwt.MapClaims) { c["aud"] = "https://other.example.com/mcp" })), false},
		{"audience of a sub-path", sign(t, rsaKey(), with(func(c jwt.MapClaims) { c["aud"] = testResource + "/x" })), false},
		{"no audience", sign(t, rsaKey(), with(func(c jwt.MapClaims) { delete(c, "aud") })), false},
		{"expired beyond leeway", sign(t, ecdsaKey(), with(func(c jwt.MapClaims) { c["exp"] = t0.Add(-61 * time.Second).Unix() })), true},
		{"no expiry", sign(t, rsaKey(), with(func(c jwt.MapClaims) { delete(c, "exp") })), false},
		{"not yet valid", sign(t, ed25519Key(), with(func(c jwt.MapClaims) { c["nbf"] = t0.Add(2 * time.Minute).Unix() })), false},
		{"issued in the future", sign(t, rsaKey(), with(func(c jwt.MapClaims) { c["iat"] = t0.Add(2 * time.Minute).Unix() })), false},
		{"no subject", sign(t, rsaKey(), with(func(c jwt.MapClaims) { delete(c, "sub") })), false},
		{"scope claim of the wrong type", sign(t, rsaKey(), with(func(c jwt.MapClaims) { c["scope"] = 7 })), false},
		{"tenant claim not a string", sign(t, rsaKey(), with(func(c jwt.MapClaims) { c["tid"] = []string{"a", "b"} })), false},
		{"bad signature (other key, published kid)", sign(t, testKey{rsaKey().kid, "RS256", rsaKey2().signer}, valid()), false},
		{"payload swapped under a valid signature", parts[0] + "." + otherPayload + "." + parts[2], false},
		{"signature stripped", parts[0] + "." + parts[1] + ".", false},
		{"alg none", none(), false},
		{"HS256 with the RSA public key (PEM) as secret", hs(forms[0]), false},
		{"HS256 with the RSA public key (DER) as secret", hs(forms[1]), false},
		{"RS256 header with an EC key's kid", sign(t, testKey{ecdsaKey().kid, "RS256", rsaKey().signer}, valid()), false},
		{"ES256 header with an Ed25519 key's kid", sign(t, testKey{ed25519Key().kid, "ES256", ecKey()}, valid()), false},
		{"not a JWT", "opaque-token-value", false},
		{"garbage with dots", "a.b.c", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Validate(t.Context(), tc.token)
			if !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("err = %v, want ErrInvalidToken", err)
			}
			if got := errors.Is(err, ErrTokenExpired); got != tc.expired {
				t.Fatalf("errors.Is(err, ErrTokenExpired) = %v, want %v (%v)", got, tc.expired, err)
			}
			for _, part := range strings.Split(tc.token, ".") {
				if len(part) > 8 && strings.Contains(err.Error(), part) {
					t.Fatalf("error message contains a token part: %v", err)
				}
			}
		})
	}
	if _, err := v.Validate(t.Context(), ""); !errors.Is(err, ErrNoToken) {
		t.Fatalf("empty token: err = %v, want ErrNoToken", err)
	}
}

// TestWeakKeyRejected: an RSA key under 2048 bits is refused even when
// published and correctly used.
func TestWeakKeyRejected(t *testing.T) {
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	weakKey := testKey{"rsa-1024", "RS256", weak}
	is := newIssuer(t, "", weakKey)
	v := newTestValidator(t, is, nil)
	if _, err := v.Validate(t.Context(), sign(t, weakKey, is.claims(testResource))); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("RSA-1024: err = %v, want ErrInvalidToken", err)
	}
}

func TestRequiredScopesPerRequest(t *testing.T) {
	is := newIssuer(t, "", rsaKey())
	v := newTestValidator(t, is, func(c *Config) { c.RequiredScopes = []string{"tools:read", "mcp:use", "tools:write"} })
	_, err := v.Validate(t.Context(), sign(t, rsaKey(), is.claims(testResource)))
	var ise *InsufficientScopeError
	if !errors.As(err, &ise) || !slices.Equal(ise.Missing, []string{"mcp:use"}) {
		t.Fatalf("err = %v, want InsufficientScopeError{mcp:use}", err)
	}
	c := is.claims(testResource)
	c["scope"] = "tools:read tools:write mcp:use"
	if _, err := v.Validate(t.Context(), sign(t, rsaKey(), c)); err != nil {
		t.Fatalf("all scopes granted: %v", err)
	}
}

// TestUnknownKIDRefresh: a key published after the validator loaded the
// JWK Set is found by one refresh.
func TestUnknownKIDRefresh(t *testing.T) {
	is := newIssuer(t, "", rsaKey())
	v := newTestValidator(t, is, nil)
	if got := is.jwksHits.Load(); got != 1 {
		t.Fatalf("initial JWKS fetches = %d, want 1", got)
	}
	is.publish(ed25519Key())
	if _, err := v.Validate(t.Context(), sign(t, ed25519Key(), is.claims(testResource))); err != nil {
		t.Fatalf("token signed with a rotated-in key: %v", err)
	}
	if got := is.jwksHits.Load(); got != 2 {
		t.Fatalf("JWKS fetches = %d, want 2 (one refresh)", got)
	}
	// Known keys do not refresh.
	for range 5 {
		if _, err := v.Validate(t.Context(), sign(t, ed25519Key(), is.claims(testResource))); err != nil {
			t.Fatal(err)
		}
	}
	if got := is.jwksHits.Load(); got != 2 {
		t.Fatalf("JWKS fetches = %d after known-key tokens, want 2", got)
	}
}

// TestUnknownKIDFloodRateLimited: a flood of tokens with unknown kids
// causes at most one refresh per interval; all are rejected at once; once
// the interval has passed, one more refresh is allowed.
func TestUnknownKIDFloodRateLimited(t *testing.T) {
	const interval = time.Hour
	is := newIssuer(t, "", rsaKey())
	v := newTestValidator(t, is, func(c *Config) { c.UnknownKIDRefreshInterval = interval })

	var wg sync.WaitGroup
	errs := make([]error, 64)
	for i := range errs {
		wg.Go(func() {
			k := testKey{fmt.Sprintf("unknown-%d", i), "RS256", rsaKey().signer}
			_, errs[i] = v.Validate(context.Background(), sign(t, k, is.claims(testResource)))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("token %d: err = %v, want ErrInvalidToken", i, err)
		}
	}
	if got := is.jwksHits.Load(); got != 2 {
		t.Fatalf("JWKS fetches after the flood = %d, want 2 (initial + one refresh)", got)
	}

	// A key rotated in now is not fetched before the interval has passed.
	is.publish(ecdsaKey())
	rotated := sign(t, ecdsaKey(), is.claims(testResource))
	if _, err := v.Validate(t.Context(), rotated); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("within the interval: err = %v, want ErrInvalidToken", err)
	}
	if got := is.jwksHits.Load(); got != 2 {
		t.Fatalf("JWKS fetches within the interval = %d, want 2", got)
	}

	// Let the interval pass on the limiter's clock: AllowN at a later
	// instant refills the bucket without taking a token.
	v.kidLimiter.AllowN(time.Now().Add(interval), 0)
	if _, err := v.Validate(t.Context(), rotated); err != nil {
		t.Fatalf("after the interval: %v", err)
	}
	if got := is.jwksHits.Load(); got != 3 {
		t.Fatalf("JWKS fetches after the interval = %d, want 3", got)
	}
	// And the next unknown kid is limited again.
	if _, err := v.Validate(t.Context(), sign(t, testKey{"unknown-x", "RS256", rsaKey().signer}, is.claims(testResource))); !errors.Is(err, ErrInvalidToken) {
		t.Fatal(err)
	}
	if got := is.jwksHits.Load(); got != 3 {
		t.Fatalf("JWKS fetches = %d, want 3", got)
	}
}

func TestUnknownKIDIntervalMustExceedFetchTimeout(t *testing.T) {
	is := newIssuer(t, "", rsaKey())
	_, err := NewValidator(t.Context(), Config{
		Issuer: is.issuer, Resource: testResource, HTTPClient: is.srv.Client(),
		FetchTimeout: 10 * time.Second, UnknownKIDRefreshInterval: 10 * time.Second,
	})
	if err == nil || !strings.Contains(err.Error(), "must exceed FetchTimeout") {
		t.Fatalf("err = %v", err)
	}
}

func TestJWKSUnavailableAtStart(t *testing.T) {
	is := newIssuer(t, "", rsaKey())
	is.setJWKSStatus(500)
	v := newTestValidator(t, is, nil) // does not fail: keys are fetched when needed
	raw := sign(t, rsaKey(), is.claims(testResource))
	is.setJWKSStatus(0)
	if _, err := v.Validate(t.Context(), raw); err != nil {
		t.Fatalf("after the JWKS recovered: %v", err)
	}
	if got := is.jwksHits.Load(); got != 2 {
		t.Fatalf("JWKS fetches = %d, want 2", got)
	}
}

func TestDiscovery(t *testing.T) {
	t.Run("RFC 8414 with a path issuer", func(t *testing.T) {
		is := newIssuer(t, "/tenant-a", rsaKey())
		md, err := Discover(t.Context(), is.srv.Client(), is.issuer)
		if err != nil {
			t.Fatal(err)
		}
		if md.Issuer != is.issuer || md.JWKSURI != is.srv.URL+"/jwks" || md.TokenEndpoint != is.srv.URL+"/token" || md.IntrospectionEndpoint != is.srv.URL+"/introspect" {
			t.Fatalf("metadata = %+v", md)
		}
		v := newTestValidator(t, is, nil)
		if _, err := v.Validate(t.Context(), sign(t, rsaKey(), is.claims(testResource))); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("OpenID configuration fallback", func(t *testing.T) {
		is := newIssuer(t, "/realm", rsaKey())
		is.set(func(is *testIssuer) { is.oidcOnly = true })
		v := newTestValidator(t, is, nil)
		if v.Metadata() == nil || v.Metadata().JWKSURI != is.srv.URL+"/jwks" {
			t.Fatalf("metadata = %+v", v.Metadata())
		}
		if got := is.metaHits.Load(); got != 1 {
			t.Fatalf("metadata hits = %d, want 1 (the appended OIDC form)", got)
		}
	})
	t.Run("issuer mismatch", func(t *testing.T) {
		is := newIssuer(t, "", rsaKey())
		is.set(func(is *testIssuer) { is.metaIssuer = "https://evil.example.com" })
		_, err := Discover(t.Context(), is.srv.Client(), is.issuer)
		if err == nil || !strings.Contains(err.Error(), "names issuer") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("configured JWKS URL skips discovery", func(t *testing.T) {
		is := newIssuer(t, "", rsaKey())
		v := newTestValidator(t, is, func(c *Config) { c.JWKSURL = is.srv.URL + "/jwks" })
		if _, err := v.Validate(t.Context(), sign(t, rsaKey(), is.claims(testResource))); err != nil {
			t.Fatal(err)
		}
		if got := is.metaHits.Load(); got != 0 {
			t.Fatalf("metadata hits = %d, want 0", got)
		}
	})
	t.Run("URLs", func(t *testing.T) {
		got, err := DiscoveryURLs("https://as.example.com/t/1/")
		want := []string{
			"https://as.example.com/.well-known/oauth-authorization-server/t/1",
			"https://as.example.com/.well-known/openid-configuration/t/1",
			"https://as.example.com/t/1/.well-known/openid-configuration",
		}
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("DiscoveryURLs = %q, %v", got, err)
		}
	})
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Resource: testResource, JWKSURL: "https://as.example.com/jwks"},
		{Issuer: "https://as.example.com", Resource: "http://mcp.example.com/mcp", JWKSURL: "https://as.example.com/jwks"},
		{Issuer: "https://as.example.com", Resource: "https://mcp.example.com/mcp#x", JWKSURL: "https://as.example.com/jwks"},
		{Issuer: "https://as.example.com", Resource: "mcp.example.com", JWKSURL: "https://as.example.com/jwks"},
	} {
		if _, err := NewValidator(t.Context(), cfg); err == nil {
			t.Errorf("NewValidator(%+v) succeeded", cfg)
		}
	}
}

func TestTokenNeverFormatsCredential(t *testing.T) {
	tok := &Token{Subject: "s", raw: "SECRET-TOKEN-VALUE"}
	for _, s := range []string{fmt.Sprint(tok), fmt.Sprintf("%v %+v %#v", tok, tok, tok), fmt.Sprintf("%v %+v %#v", *tok, *tok, *tok)} {
		if strings.Contains(s, "SECRET") {
			t.Fatalf("formatted token shows the credential: %s", s)
		}
	}
	c := newCapture()
	slog.New(c).Info("x", "token", tok, "tokenValue", *tok)
	for _, l := range c.all() {
		if strings.Contains(l, "SECRET") || !strings.Contains(l, "sub=s") {
			t.Fatalf("logged: %s", l)
		}
	}
}
