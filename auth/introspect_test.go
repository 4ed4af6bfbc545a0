package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// opaqueAS answers introspection for the tokens in answers (anything else
// is inactive) and checks the client authentication.
func opaqueAS(t *testing.T, is *testIssuer, answers map[string]map[string]any) {
	is.setIntrospect(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || id != "mcpgate" || secret != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			writeJSON(w, map[string]any{"error": "invalid_client"})
			return
		}
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			t.Errorf("introspection request %s %s", r.Method, r.Header.Get("Content-Type"))
		}
		ans, ok := answers[r.PostFormValue("token")]
		if !ok {
			writeJSON(w, map[string]any{"active": false})
			return
		}
		writeJSON(w, ans)
	})
}

func activeAnswer(is *testIssuer) map[string]any {
	return map[string]any{
		"active": true, "sub": "user-9", "scope": "tools:read", "aud": []string{"https://other", testResource},
		"iss": is.issuer, "exp": t0.Add(5 * time.Minute).Unix(), "client_id": "app", "tid": "t-1",
	}
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestIntrospection(t *testing.T) {
	is := newIssuer(t, "", rsaKey())
	with := func(mod func(map[string]any)) map[string]any { a := activeAnswer(is); mod(a); return a }
	opaqueAS(t, is, map[string]map[string]any{
		"good":         activeAnswer(is),
		"wrong-aud":    with(func(a map[string]any) { a["aud"] = "https://other" }),
		"no-aud":       with(func(a map[string]any) { delete(a, "aud") }),
		"wrong-iss":    with(func(a map[string]any) { a["iss"] = "https://evil" }),
		"expired":      with(func(a map[string]any) { a["exp"] = t0.Add(-2 * time.Minute).Unix() }),
		"future":       with(func(a map[string]any) { a["nbf"] = t0.Add(2 * time.Minute).Unix() }),
		"no-sub":       with(func(a map[string]any) { delete(a, "sub") }),
		"no-scope":     with(func(a map[string]any) { a["scope"] = "other" }),
		"bad-aud-type": with(func(a map[string]any) { a["aud"] = 5 }),
	})
	v := newTestValidator(t, is, func(c *Config) {
		c.Introspection = &IntrospectionConfig{ClientID: "mcpgate", ClientSecret: "s3cret"} // endpoint discovered
		c.RequiredScopes = []string{"tools:read"}
	})

	p, err := v.Validate(t.Context(), "good")
	if err != nil {
		t.Fatalf("active token: %v", err)
	}
	if p.Subject != "user-9" || p.Tenant != "t-1" || !slices.Equal(p.Scopes, []string{"tools:read"}) || p.Credential.Reveal() != "good" {
		t.Fatalf("principal = %+v", p)
	}
	for tok, want := range map[string]error{
		"unknown":      ErrInvalidToken, // inactive
		"wrong-aud":    ErrInvalidToken,
		"no-aud":       ErrInvalidToken,
		"wrong-iss":    ErrInvalidToken,
		"expired":      ErrTokenExpired,
		"future":       ErrInvalidToken,
		"no-sub":       ErrInvalidToken,
		"bad-aud-type": ErrUnavailable, // a malformed answer is the server's fault
	} {
		if _, err := v.Validate(t.Context(), tok); !errors.Is(err, want) {
			t.Errorf("%s: err = %v, want %v", tok, err, want)
		}
	}
	var ise *InsufficientScopeError
	if _, err := v.Validate(t.Context(), "no-scope"); !errors.As(err, &ise) {
		t.Errorf("no-scope: err = %v, want InsufficientScopeError", err)
	}
	// JWTs still go to the JWK Set, not to introspection.
	before := is.introHits.Load()
	if _, err := v.Validate(t.Context(), sign(t, rsaKey(), is.claims(testResource))); err != nil {
		t.Fatal(err)
	}
	if is.introHits.Load() != before {
		t.Fatal("a JWT was introspected")
	}
}

func TestIntrospectionCache(t *testing.T) {
	is := newIssuer(t, "", rsaKey())
	opaqueAS(t, is, map[string]map[string]any{"good": activeAnswer(is)}) // exp = t0+5m
	clk := &clock{t: t0}
	v := newTestValidator(t, is, func(c *Config) {
		c.Introspection = &IntrospectionConfig{Endpoint: is.srv.URL + "/introspect", ClientID: "mcpgate", ClientSecret: "s3cret", CacheTTL: 2 * time.Minute}
		c.JWKSURL = is.srv.URL + "/jwks"
		c.Now = clk.now
	})
	if is.metaHits.Load() != 0 {
		t.Fatal("discovery ran although JWKS and introspection endpoint were configured")
	}
	for range 3 {
		if _, err := v.Validate(t.Context(), "good"); err != nil {
			t.Fatal(err)
		}
	}
	if got := is.introHits.Load(); got != 1 {
		t.Fatalf("introspection calls = %d, want 1 (cached)", got)
	}
	clk.add(2 * time.Minute) // the TTL ends
	if _, err := v.Validate(t.Context(), "good"); err != nil {
		t.Fatal(err)
	}
	if got := is.introHits.Load(); got != 2 {
		t.Fatalf("introspection calls after the TTL = %d, want 2", got)
	}
	// Inactive answers are not cached.
	for range 2 {
		if _, err := v.Validate(t.Context(), "unknown"); !errors.Is(err, ErrInvalidToken) {
			t.Fatal(err)
		}
	}
	if got := is.introHits.Load(); got != 4 {
		t.Fatalf("introspection calls = %d, want 4 (inactive not cached)", got)
	}
}

func TestIntrospectionCacheBoundedByExp(t *testing.T) {
	is := newIssuer(t, "")
	ans := activeAnswer(is)
	ans["exp"] = t0.Add(30 * time.Second).Unix()
	opaqueAS(t, is, map[string]map[string]any{"short": ans})
	clk := &clock{t: t0}
	in, err := NewIntrospector(IntrospectionConfig{Endpoint: is.srv.URL + "/introspect", ClientID: "mcpgate", ClientSecret: "s3cret", CacheTTL: time.Hour}, is.srv.Client(), clk.now)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []time.Duration{0, 29 * time.Second, time.Second} {
		clk.add(step)
		r, err := in.Introspect(t.Context(), "short")
		if err != nil || !r.Active {
			t.Fatalf("Introspect = %+v, %v", r, err)
		}
	}
	if got := is.introHits.Load(); got != 2 {
		t.Fatalf("introspection calls = %d, want 2 (cache ends at exp, not after the 1h TTL)", got)
	}
}

func TestIntrospectionFailures(t *testing.T) {
	is := newIssuer(t, "")
	opaqueAS(t, is, map[string]map[string]any{"good": activeAnswer(is)})
	v := newTestValidator(t, is, func(c *Config) {
		c.Introspection = &IntrospectionConfig{Endpoint: is.srv.URL + "/introspect", ClientID: "mcpgate", ClientSecret: "wrong"}
	})
	_, err := v.Validate(t.Context(), "good")
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrInvalidToken) {
		t.Fatalf("rejected client credentials: err = %v, want ErrUnavailable", err)
	}
	rec := httptest.NewRecorder()
	WriteError(rec, testMetadata(is.issuer), err)
	if rec.Code != 503 {
		t.Fatalf("status = %d, want 503", rec.Code)
	}

	is.setIntrospect(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, map[string]any{"sub": "x"}) })
	if _, err := v.Validate(t.Context(), "good"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf(`answer without "active": err = %v`, err)
	}
}
