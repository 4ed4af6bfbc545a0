package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// t0 is the tests' fixed "now".
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// testKey is a signing key of the test issuer.
type testKey struct {
	kid    string
	alg    string
	signer crypto.Signer
}

func (k testKey) method() jwt.SigningMethod { return jwt.GetSigningMethod(k.alg) }

// Keys are expensive to generate (RSA): make them once per test binary.
var (
	rsaKeys = sync.OnceValue(func() [2]*rsa.PrivateKey {
		var ks [2]*rsa.PrivateKey
		for i := range ks {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			ks[i] = k
		}
		return ks
	})
	ecKey = sync.OnceValue(func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		return k
	})
	edKey = sync.OnceValue(func() ed25519.PrivateKey {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		return k
	})
)

func rsaKey() testKey     { return testKey{"rsa-1", "RS256", rsaKeys()[0]} }
func rsaKey2() testKey    { return testKey{"rsa-2", "RS256", rsaKeys()[1]} }
func ecdsaKey() testKey   { return testKey{"ec-1", "ES256", ecKey()} }
func ed25519Key() testKey { return testKey{"ed-1", "EdDSA", edKey()} }

// testIssuer is a local OAuth authorization server: RFC 8414 metadata,
// JWKS, and optional introspection and token endpoints. It counts hits.
type testIssuer struct {
	t      testing.TB
	srv    *httptest.Server
	issuer string // srv.URL + path

	mu         sync.Mutex
	published  []testKey // keys in the JWKS
	jwksStatus int       // non-zero: JWKS answers this status
	oidcOnly   bool      // serve metadata only at openid-configuration
	metaIssuer string    // non-empty: issuer claimed by the metadata
	introspect http.HandlerFunc
	token      http.HandlerFunc
	jwksHits   atomic.Int32
	metaHits   atomic.Int32
	introHits  atomic.Int32
	tokenHits  atomic.Int32
}

// newIssuer starts an issuer whose identifier is its URL plus path
// (path "" or e.g. "/tenant-a"), publishing keys.
func newIssuer(t testing.TB, path string, keys ...testKey) *testIssuer {
	t.Helper()
	is := &testIssuer{t: t, published: keys}
	mux := http.NewServeMux()
	meta := func(w http.ResponseWriter, r *http.Request) {
		is.metaHits.Add(1)
		is.mu.Lock()
		claimed := is.metaIssuer
		is.mu.Unlock()
		if claimed == "" {
			claimed = is.issuer
		}
		writeJSON(w, map[string]any{
			"issuer":                 claimed,
			"jwks_uri":               is.srv.URL + "/jwks",
			"token_endpoint":         is.srv.URL + "/token",
			"introspection_endpoint": is.srv.URL + "/introspect",
		})
	}
	mux.HandleFunc("/.well-known/oauth-authorization-server"+path, func(w http.ResponseWriter, r *http.Request) {
		is.mu.Lock()
		oidc := is.oidcOnly
		is.mu.Unlock()
		if oidc {
			http.NotFound(w, r)
			return
		}
		meta(w, r)
	})
	mux.HandleFunc(path+"/.well-known/openid-configuration", meta)
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.jwksHits.Add(1)
		is.mu.Lock()
		status, keys := is.jwksStatus, append([]testKey(nil), is.published...)
		is.mu.Unlock()
		if status != 0 {
			w.WriteHeader(status)
			return
		}
		var set []map[string]string
		for _, k := range keys {
			set = append(set, jwkOf(k))
		}
		writeJSON(w, map[string]any{"keys": set})
	})
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		is.introHits.Add(1)
		is.mu.Lock()
		h := is.introspect
		is.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		is.tokenHits.Add(1)
		is.mu.Lock()
		h := is.token
		is.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	is.issuer = is.srv.URL + path
	return is
}

func (is *testIssuer) publish(k testKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.published = append(is.published, k)
}

// set changes the issuer's behaviour under its lock.
func (is *testIssuer) set(f func(*testIssuer)) {
	is.mu.Lock()
	defer is.mu.Unlock()
	f(is)
}

func (is *testIssuer) setJWKSStatus(status int) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.jwksStatus = status
}

func (is *testIssuer) setIntrospect(h http.HandlerFunc) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.introspect = h
}

func (is *testIssuer) setToken(h http.HandlerFunc) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.token = h
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// jwkOf renders the public JWK of k (written by hand, independent of the
// library under test).
func jwkOf(k testKey) map[string]string {
	m := map[string]string{"kid": k.kid, "alg": k.alg, "use": "sig"}
	switch pub := k.signer.Public().(type) {
	case *rsa.PublicKey:
		m["kty"], m["n"], m["e"] = "RSA", b64(pub.N.Bytes()), b64(big.NewInt(int64(pub.E)).Bytes())
	case *ecdsa.PublicKey:
		ecdh, err := pub.ECDH()
		if err != nil {
			panic(err)
		}
		raw := ecdh.Bytes() // 0x04 || X || Y
		n := (len(raw) - 1) / 2
		m["kty"], m["crv"], m["x"], m["y"] = "EC", pub.Curve.Params().Name, b64(raw[1:1+n]), b64(raw[1+n:])
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", b64(pub)
	default:
		panic(fmt.Sprintf("key type %T", pub))
	}
	return m
}

// claims returns a valid claim set for the issuer and resource at t0.
func (is *testIssuer) claims(aud string) jwt.MapClaims {
	return jwt.MapClaims{
		"iss":   is.issuer,
		"sub":   "user-42",
		"aud":   aud,
		"iat":   t0.Add(-time.Minute).Unix(),
		"exp":   t0.Add(10 * time.Minute).Unix(),
		"scope": "tools:read tools:write",
		"tid":   "tenant-7",
	}
}

// sign signs claims with k, setting kid unless kid is "-".
func sign(t testing.TB, k testKey, claims jwt.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(k.method(), claims)
	if k.kid != "-" {
		tok.Header["kid"] = k.kid
	}
	s, err := tok.SignedString(k.signer)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const testResource = "https://mcp.example.com/mcp"

// newTestValidator builds a validator for is with the fixed clock.
func newTestValidator(t testing.TB, is *testIssuer, mod func(*Config)) *Validator {
	t.Helper()
	cfg := Config{
		Issuer:      is.issuer,
		Resource:    testResource,
		TenantClaim: "tid",
		HTTPClient:  is.srv.Client(),
		Now:         func() time.Time { return t0 },
		Logger:      slog.New(slog.DiscardHandler),
	}
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := NewValidator(ctx, cfg)
	if err != nil {
		t.Fatalf("NewValidator: %v", err)
	}
	return v
}

// capture is a slog handler recording every record as text.
type capture struct {
	mu    *sync.Mutex
	lines *[]string
	attrs []slog.Attr
}

func newCapture() capture { return capture{mu: new(sync.Mutex), lines: new([]string)} }

func (c capture) Enabled(context.Context, slog.Level) bool { return true }

func (c capture) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	write := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value.Resolve())
		return true
	}
	for _, a := range c.attrs {
		write(a)
	}
	r.Attrs(write)
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.lines = append(*c.lines, b.String())
	return nil
}

func (c capture) WithAttrs(as []slog.Attr) slog.Handler {
	c.attrs = append(append([]slog.Attr(nil), c.attrs...), as...)
	return c
}

func (c capture) WithGroup(string) slog.Handler { return c }

func (c capture) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), *c.lines...)
}
