package connect_test

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/mrtr"
	"github.com/mcpgate/mcpgate/openapi"
)

func TestFromDocument(t *testing.T) {
	code := func(auth, token string, scopes ...string) openapi.SecurityScheme {
		sc := map[string]string{}
		for _, s := range scopes {
			sc[s] = s
		}
		return openapi.SecurityScheme{Type: "oauth2", Flows: map[string]openapi.OAuthFlow{"authorizationCode": {AuthorizationURL: auth, TokenURL: token, Scopes: sc}}}
	}
	implicit := openapi.SecurityScheme{Type: "oauth2", Flows: map[string]openapi.OAuthFlow{"implicit": {AuthorizationURL: "https://x/auth"}}}
	tool := func(reqs ...openapi.SecurityRequirement) openapi.Tool {
		return openapi.Tool{Route: openapi.Route{Security: reqs}}
	}
	gh := code("https://github.com/login/oauth/authorize", "https://github.com/login/oauth/access_token", "repo", "read:user", "admin:org")
	tests := []struct {
		name    string
		p       connect.Provider
		schemes map[string]openapi.SecurityScheme
		scheme  string
		tools   []openapi.Tool
		want    connect.Provider
		err     string
	}{
		{name: "the only scheme, scopes the operations need",
			schemes: map[string]openapi.SecurityScheme{"gh": gh, "key": {Type: "apiKey", In: "header", Name: "X-Key"}},
			tools:   []openapi.Tool{tool(openapi.SecurityRequirement{"gh": {"repo"}}), tool(openapi.SecurityRequirement{"gh": {"read:user", "repo"}}, openapi.SecurityRequirement{"key": nil}), tool()},
			want:    connect.Provider{AuthURL: gh.Flows["authorizationCode"].AuthorizationURL, TokenURL: gh.Flows["authorizationCode"].TokenURL, Scopes: []string{"read:user", "repo"}}},
		{name: "configuration wins",
			p:       connect.Provider{AuthURL: "https://ghe/auth", Scopes: []string{}},
			schemes: map[string]openapi.SecurityScheme{"gh": gh},
			tools:   []openapi.Tool{tool(openapi.SecurityRequirement{"gh": {"repo"}})},
			want:    connect.Provider{AuthURL: "https://ghe/auth", TokenURL: gh.Flows["authorizationCode"].TokenURL, Scopes: []string{}}},
		{name: "named among several", scheme: "b",
			schemes: map[string]openapi.SecurityScheme{"a": code("https://a/auth", "https://a/token"), "b": code("https://b/auth", "https://b/token")},
			want:    connect.Provider{AuthURL: "https://b/auth", TokenURL: "https://b/token"}},
		{name: "several, none named", schemes: map[string]openapi.SecurityScheme{"a": code("https://a/auth", "https://a/token"), "b": code("https://b/auth", "https://b/token")},
			err: "several oauth2 authorizationCode schemes (a, b)"},
		{name: "none", schemes: map[string]openapi.SecurityScheme{"i": implicit}, err: "no oauth2 security scheme with an authorizationCode flow"},
		{name: "none, only one endpoint configured", p: connect.Provider{AuthURL: "https://github.com/login/oauth/authorize"},
			schemes: map[string]openapi.SecurityScheme{"key": {Type: "apiKey", In: "header", Name: "X-Key"}}, err: "configure the endpoints"},
		{name: "none, the endpoints configured (GitHub's document)",
			p:       connect.Provider{AuthURL: "https://github.com/login/oauth/authorize", TokenURL: "https://github.com/login/oauth/access_token", Scopes: []string{"repo"}},
			schemes: map[string]openapi.SecurityScheme{"key": {Type: "apiKey", In: "header", Name: "X-Key"}},
			want:    connect.Provider{AuthURL: "https://github.com/login/oauth/authorize", TokenURL: "https://github.com/login/oauth/access_token", Scopes: []string{"repo"}}},
		{name: "named without the flow", scheme: "i", schemes: map[string]openapi.SecurityScheme{"i": implicit}, err: "no authorizationCode flow"},
		{name: "named, missing", scheme: "x", schemes: map[string]openapi.SecurityScheme{"gh": gh}, err: `no oauth2 security scheme "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.API = "gh"
			got, err := tt.p.FromDocument(tt.schemes, tt.scheme, tt.tools)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.AuthURL != tt.want.AuthURL || got.TokenURL != tt.want.TokenURL || !slices.Equal(got.Scopes, tt.want.Scopes) {
				t.Errorf("got %s %s %q, want %s %s %q", got.AuthURL, got.TokenURL, got.Scopes, tt.want.AuthURL, tt.want.TokenURL, tt.want.Scopes)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	ring := mrtr.GenerateKeyRing(slog.New(slog.DiscardHandler))
	ok := connect.Options{BaseURL: "https://mcp.example.com", Ring: ring, Store: &connect.MemoryStore{}, Replay: mrtr.NewMemoryReplayCache(0, nil)}
	good := connect.Provider{API: "gh", ClientID: "id", AuthURL: "https://github.com/login/oauth/authorize", TokenURL: "https://github.com/login/oauth/access_token"}
	with := func(f func(*connect.Options, *connect.Provider)) (connect.Options, connect.Provider) {
		o, p := ok, good
		f(&o, &p)
		return o, p
	}
	tests := []struct {
		name string
		f    func(*connect.Options, *connect.Provider)
		err  string
	}{
		{"no ring", func(o *connect.Options, _ *connect.Provider) { o.Ring = nil }, "needs Ring"},
		{"no replay cache", func(o *connect.Options, _ *connect.Provider) { o.Replay = nil }, "needs Ring, Store and Replay"},
		{"http base", func(o *connect.Options, _ *connect.Provider) { o.BaseURL = "http://mcp.example.com" }, "must be https"},
		{"relative base", func(o *connect.Options, _ *connect.Provider) { o.BaseURL = "/gw" }, "not an absolute URL"},
		{"base with a query", func(o *connect.Options, _ *connect.Provider) { o.BaseURL = "https://mcp.example.com/?x=1" }, "must not have a query"},
		{"bad API name", func(_ *connect.Options, p *connect.Provider) { p.API = "git hub" }, "API name"},
		{"no client id", func(_ *connect.Options, p *connect.Provider) { p.ClientID = "" }, "no client id"},
		{"http token URL", func(_ *connect.Options, p *connect.Provider) { p.TokenURL = "http://github.com/token" }, "token URL"},
		{"token URL with credentials", func(_ *connect.Options, p *connect.Provider) { p.TokenURL = "https://u:p@github.com/token" }, "user info"},
		{"no authorization URL", func(_ *connect.Options, p *connect.Provider) { p.AuthURL = "" }, "authorization URL"},
		{"bad revocation URL", func(_ *connect.Options, p *connect.Provider) { p.RevocationURL = "ftp://x" }, "revocation URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, p := with(tt.f)
			if _, err := connect.New(o, p); err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("New = %v, want an error with %q", err, tt.err)
			}
		})
	}
	if _, err := connect.New(ok, good, good); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a duplicate API: %v", err)
	}
	c, err := connect.New(ok, good)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.RedirectURL("gh"); got != "https://mcp.example.com/connect/gh/callback" {
		t.Errorf("RedirectURL = %q", got)
	}
	if _, err := c.Decorator("slack"); err == nil {
		t.Error("a decorator for an API that is not configured")
	}
	// http is fine on a loopback host, for development.
	o, _ := with(func(o *connect.Options, _ *connect.Provider) { o.BaseURL = "http://127.0.0.1:8080/" })
	if _, err := connect.New(o, good); err != nil {
		t.Errorf("loopback http base: %v", err)
	}
}
