package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/mcp"
)

// exchangeAS makes is's token endpoint an RFC 8693 exchanger that checks
// the request and answers "x-<n>-for-<audience>" with expires_in 300.
func exchangeAS(t *testing.T, is *testIssuer, gate <-chan struct{}) *atomic.Int32 {
	var n atomic.Int32
	is.setToken(func(w http.ResponseWriter, r *http.Request) {
		if gate != nil {
			<-gate
		}
		id, secret, ok := r.BasicAuth()
		if !ok || id != "gw" || secret != "pw" {
			w.WriteHeader(401)
			writeJSON(w, map[string]any{"error": "invalid_client"})
			return
		}
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		f := r.PostForm
		if f.Get("grant_type") != GrantTypeTokenExchange || f.Get("subject_token_type") != TokenTypeAccessToken ||
			f.Get("requested_token_type") != TokenTypeAccessToken || f.Get("subject_token") == "" {
			t.Errorf("exchange form = %v", f)
		}
		if aud := f.Get("audience"); strings.HasPrefix(aud, "https://") && f.Get("resource") != aud {
			t.Errorf("resource = %q, want the audience %q", f.Get("resource"), aud)
		}
		if f.Get("audience") == "refuse" {
			w.WriteHeader(400)
			writeJSON(w, map[string]any{"error": "invalid_target", "error_description": "no such audience"})
			return
		}
		writeJSON(w, map[string]any{
			"access_token":      fmt.Sprintf("x-%d-for-%s", n.Add(1), f.Get("audience")),
			"issued_token_type": TokenTypeAccessToken,
			"token_type":        "Bearer",
			"expires_in":        300,
		})
	})
	return &n
}

func newTestExchanger(t *testing.T, is *testIssuer, clk *clock) *Exchanger {
	t.Helper()
	e, err := NewExchanger(t.Context(), ExchangeConfig{
		Issuer: is.issuer, ClientID: "gw", ClientSecret: "pw", HTTPClient: is.srv.Client(), Now: clk.now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestExchangeCachedPerWindow(t *testing.T) {
	is := newIssuer(t, "")
	n := exchangeAS(t, is, nil)
	clk := &clock{t: t0}
	e := newTestExchanger(t, is, clk) // token endpoint discovered
	const api = "https://api.example.com"

	for range 3 {
		tok, err := e.Exchange(t.Context(), "subject-A", api)
		if err != nil || tok != "x-1-for-"+api {
			t.Fatalf("Exchange = %q, %v", tok, err)
		}
	}
	if n.Load() != 1 {
		t.Fatalf("exchanges = %d, want 1", n.Load())
	}
	// Another subject token or another audience is another exchange.
	if tok, _ := e.Exchange(t.Context(), "subject-B", api); tok != "x-2-for-"+api {
		t.Fatalf("other subject: %q", tok)
	}
	if tok, _ := e.Exchange(t.Context(), "subject-A", "api://other"); tok != "x-3-for-api://other" {
		t.Fatalf("other audience: %q", tok)
	}
	// Reused until RefreshBefore (30s) before expires_in (300s) ends.
	clk.add(269 * time.Second)
	if tok, _ := e.Exchange(t.Context(), "subject-A", api); tok != "x-1-for-"+api {
		t.Fatalf("at 269s: %q, want the cached token", tok)
	}
	clk.add(time.Second)
	if tok, _ := e.Exchange(t.Context(), "subject-A", api); tok != "x-4-for-"+api {
		t.Fatalf("at 270s: %q, want a fresh exchange", tok)
	}
	if n.Load() != 4 {
		t.Fatalf("exchanges = %d, want 4", n.Load())
	}
}

func TestExchangeConcurrentCallersShareOne(t *testing.T) {
	is := newIssuer(t, "")
	gate := make(chan struct{})
	n := exchangeAS(t, is, gate)
	e := newTestExchanger(t, is, &clock{t: t0})
	const callers = 20
	var joined sync.WaitGroup
	joined.Add(callers)
	e.joined = joined.Done

	results := make([]string, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { results[i], errs[i] = e.Exchange(context.Background(), "subject", "https://api.example.com") })
	}
	joined.Wait() // every caller waits on an exchange; the endpoint is held
	close(gate)
	wg.Wait()
	for i := range callers {
		if errs[i] != nil || results[i] != "x-1-for-https://api.example.com" {
			t.Fatalf("caller %d: %q, %v", i, results[i], errs[i])
		}
	}
	if got := is.tokenHits.Load(); got != 1 || n.Load() != 1 {
		t.Fatalf("token endpoint hits = %d, want 1", got)
	}
}

func TestExchangeCallerCancelDoesNotCancelOthers(t *testing.T) {
	is := newIssuer(t, "")
	gate := make(chan struct{})
	exchangeAS(t, is, gate)
	e := newTestExchanger(t, is, &clock{t: t0})
	var joined sync.WaitGroup
	joined.Add(2)
	e.joined = joined.Done

	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := e.Exchange(ctx, "subject", "aud"); first <- err }()
	second := make(chan string, 1)
	go func() { tok, _ := e.Exchange(context.Background(), "subject", "aud"); second <- tok }()
	joined.Wait()
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) || !errors.Is(err, ErrExchange) {
		t.Fatalf("cancelled caller: %v", err)
	}
	close(gate)
	if tok := <-second; tok != "x-1-for-aud" {
		t.Fatalf("other caller: %q", tok)
	}
}

func TestExchangeErrors(t *testing.T) {
	is := newIssuer(t, "")
	exchangeAS(t, is, nil)
	e := newTestExchanger(t, is, &clock{t: t0})
	for range 2 {
		_, err := e.Exchange(t.Context(), "subject-token-value", "refuse")
		if !errors.Is(err, ErrExchange) || !strings.Contains(err.Error(), "invalid_target: no such audience") || strings.Contains(err.Error(), "subject-token-value") {
			t.Fatalf("err = %v", err)
		}
	}
	if got := is.tokenHits.Load(); got != 2 {
		t.Fatalf("token endpoint hits = %d, want 2 (failures are not cached)", got)
	}
	bad, err := NewExchanger(t.Context(), ExchangeConfig{TokenEndpoint: is.srv.URL + "/token", ClientID: "gw", ClientSecret: "nope", HTTPClient: is.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Exchange(t.Context(), "s", "aud"); !errors.Is(err, ErrExchange) || !strings.Contains(err.Error(), "invalid_client") {
		t.Fatalf("bad client: %v", err)
	}
	if _, err := e.Exchange(t.Context(), "", "aud"); !errors.Is(err, ErrExchange) {
		t.Fatalf("empty subject token: %v", err)
	}
}

func TestPassthroughAllowed(t *testing.T) {
	up, _ := url.Parse("https://api.example.com/v1")
	cases := []struct {
		aud    []string
		extra  []string
		wantOK bool
	}{
		{[]string{"https://api.example.com"}, nil, true},
		{[]string{"https://api.example.com/v1"}, nil, true},
		{[]string{"HTTPS://API.EXAMPLE.COM:443/v1/"}, nil, true},
		{[]string{"https://mcp.example.com/mcp", "https://api.example.com"}, nil, true},
		{[]string{"api://billing"}, []string{"api://billing"}, true},
		{[]string{"https://mcp.example.com/mcp"}, nil, false},
		{[]string{"https://api.example.com.evil.com"}, nil, false},
		{[]string{"https://api.example.com/v2"}, nil, false},
		{[]string{"http://api.example.com"}, nil, false},
		{nil, nil, false},
	}
	for _, tc := range cases {
		err := PassthroughAllowed(tc.aud, up, tc.extra...)
		if (err == nil) != tc.wantOK || (err != nil && !errors.Is(err, ErrAudienceMismatch)) {
			t.Errorf("PassthroughAllowed(%q, %s, %q) = %v, want ok=%v", tc.aud, up, tc.extra, err, tc.wantOK)
		}
	}
}

func TestForwardingBind(t *testing.T) {
	is := newIssuer(t, "")
	exchangeAS(t, is, nil)
	e := newTestExchanger(t, is, &clock{t: t0})
	up, _ := url.Parse("https://API.example.com/v1/")
	original := &Token{Subject: "u", Audiences: []string{testResource}, raw: "original-token"}
	covering := &Token{Subject: "u", Audiences: []string{testResource, "https://api.example.com"}, raw: "original-token"}
	ctxWith := func(t *Token) context.Context {
		return WithToken(mcp.WithPrincipal(context.Background(), t.Principal()), t)
	}

	exch := &Forwarding{Mode: ModeExchange, Upstream: up, Exchanger: e}
	for range 2 {
		ctx, err := exch.Bind(ctxWith(original))
		if err != nil {
			t.Fatal(err)
		}
		if p := mcp.PrincipalFrom(ctx); p.Credential.Reveal() != "x-1-for-https://api.example.com/v1" || p.Subject != "u" {
			t.Fatalf("exchange: principal = %+v, want the exchanged token", p)
		}
	}
	if got := is.tokenHits.Load(); got != 1 {
		t.Fatalf("token endpoint hits = %d, want 1", got)
	}

	pass := &Forwarding{Mode: ModePassthrough, Upstream: up}
	if _, err := pass.Bind(ctxWith(original)); !errors.Is(err, ErrAudienceMismatch) {
		t.Fatalf("passthrough for a token of another audience: %v", err)
	}
	ctx, err := pass.Bind(ctxWith(covering))
	if err != nil || mcp.PrincipalFrom(ctx).Credential.Reveal() != "original-token" {
		t.Fatalf("passthrough: %v, %+v", err, mcp.PrincipalFrom(ctx))
	}

	static := &Forwarding{Mode: ModeStatic, Upstream: up}
	ctx, err = static.Bind(ctxWith(covering))
	if err != nil || mcp.PrincipalFrom(ctx).Credential.Reveal() != "" {
		t.Fatalf("static: the caller's token is still forwarded: %v", err)
	}

	// A principal credential that was not validated here is not forwarded.
	ctx, err = pass.Bind(mcp.WithPrincipal(context.Background(), mcp.Principal{Subject: "x", Credential: mcp.NewSecret("unvalidated")}))
	if err != nil || mcp.PrincipalFrom(ctx).Credential.Reveal() != "" {
		t.Fatalf("unvalidated credential: %v, %+v", err, mcp.PrincipalFrom(ctx))
	}
	if _, err := (&Forwarding{Mode: "bogus"}).Bind(ctxWith(original)); err == nil {
		t.Fatal("unknown mode accepted")
	}
}
