package connect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/mcpgate/mcpgate/mrtr"
	"github.com/mcpgate/mcpgate/secretbox"
)

// Options configure a [Connector]. Ring, Store and Replay are shared by
// every replica; BaseURL is the gateway's public address.
type Options struct {
	// BaseURL is the public URL the gateway's pages are reached at
	// ("https://mcp.example.com"); the connect pages are BaseURL +
	// "/connect/<api>" and each API's redirect URI, to register at its
	// authorization server, is BaseURL + "/connect/<api>/callback". https,
	// or http on a loopback host.
	BaseURL string
	// Ring seals the links, the flow cookies and the stored grants (the
	// state key ring, MCPGATE_STATE_KEYS: the same on every replica).
	Ring *mrtr.KeyRing
	// Store keeps the grants; [MemoryStore] for one development process.
	Store Store
	// Replay makes each link and each callback usable once, across every
	// replica sharing it (the store's mrtr replay cache).
	Replay mrtr.ReplayCache
	// HTTPClient calls the token and revocation endpoints (default: a
	// client with a 30 s timeout).
	HTTPClient *http.Client
	// LinkTTL is how long a connect link and a started authorization stay
	// usable (default 10 minutes).
	LinkTTL time.Duration
	// RefreshMargin: an access token expiring within this is refreshed
	// before use (default 1 minute).
	RefreshMargin time.Duration
	// RefreshLease bounds how long one replica may hold the right to
	// refresh a grant before another may try (default 30 s).
	RefreshLease time.Duration
	// Login, when set, makes the connect page sign the browser's user in
	// at the MCP callers' identity provider and compare subjects, instead of
	// asking for a confirmation code (see [Login] and the package doc).
	Login *Login
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives what happens to grants (never a token); nil means
	// slog.Default.
	Logger *slog.Logger
}

// Connector is the gateway's OAuth client of the upstream APIs: it asks
// callers to connect (tool decorator), runs the authorization (HTTP pages
// and callback), keeps the grants (sealed) and refreshes them. It is safe
// for concurrent use and keeps nothing between requests that another
// replica would need.
type Connector struct {
	opts      Options
	base      *url.URL
	providers map[string]*provider

	grants *vault
	links  *secretbox.Box // connect links
	flows  *secretbox.Box // flow cookies

	refreshing singleflight.Group
}

// provider is a Provider with what the Connector derives from it.
type provider struct {
	Provider
	oauth    *oauth2.Config
	page     string // BaseURL + /connect/<api>
	callback string // the redirect URI
}

// New returns a Connector for providers.
func New(opts Options, providers ...Provider) (*Connector, error) {
	if opts.Ring == nil || opts.Store == nil || opts.Replay == nil {
		return nil, errors.New("connect: Options needs Ring, Store and Replay")
	}
	if err := checkEndpoint(opts.BaseURL); err != nil {
		return nil, fmt.Errorf("connect: base URL: %w", err)
	}
	base, _ := url.Parse(strings.TrimRight(opts.BaseURL, "/"))
	if base.RawQuery != "" {
		return nil, fmt.Errorf("connect: base URL %q must not have a query", opts.BaseURL)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.LinkTTL <= 0 {
		opts.LinkTTL = 10 * time.Minute
	}
	if opts.RefreshMargin <= 0 {
		opts.RefreshMargin = time.Minute
	}
	if opts.RefreshLease <= 0 {
		opts.RefreshLease = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Login != nil {
		if err := opts.Login.check(); err != nil {
			return nil, err
		}
	}
	c := &Connector{opts: opts, base: base, providers: map[string]*provider{}}
	var err error
	boxes := []struct {
		dst     **secretbox.Box
		purpose string
	}{{&c.links, "connect-link"}, {&c.flows, "connect-flow"}}
	for _, b := range boxes {
		if *b.dst, err = secretbox.New(opts.Ring, b.purpose); err != nil {
			return nil, err
		}
	}
	gbox, err := secretbox.New(opts.Ring, "oauth-grant")
	if err != nil {
		return nil, err
	}
	c.grants = &vault{box: gbox, store: opts.Store}
	for _, p := range providers {
		if err := p.check(); err != nil {
			return nil, err
		}
		if _, dup := c.providers[p.API]; dup {
			return nil, fmt.Errorf("connect: API %s is configured twice", p.API)
		}
		page := base.String() + "/connect/" + p.API
		c.providers[p.API] = &provider{Provider: p, oauth: p.oauth2Config(page + "/callback"), page: page, callback: page + "/callback"}
	}
	return c, nil
}

// RedirectURL is the callback URL of api to register at its authorization
// server.
func (c *Connector) RedirectURL(api string) string {
	if p := c.providers[api]; p != nil {
		return p.callback
	}
	return ""
}

// clientContext makes x/oauth2 use the configured HTTP client.
func (c *Connector) clientContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, c.opts.HTTPClient)
}

// Handler serves the connect pages and callbacks; mount it at "/connect/"
// of the gateway's mux (the same origin as BaseURL):
//
//	GET  /connect/<api>?s=…   the confirmation page of a connect link
//	POST /connect/<api>       the confirmed link: on to the authorization server
//	GET  /connect/<api>/callback   the authorization server's redirect
//	GET  /connect/.login   the identity provider's redirect (with Options.Login)
func (c *Connector) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+loginPath, c.serveLogin)
	mux.HandleFunc("GET /connect/{api}", c.servePage)
	mux.HandleFunc("POST /connect/{api}", c.serveConfirm)
	mux.HandleFunc("GET /connect/{api}/callback", c.serveCallback)
	return mux
}

// Key is the grant key of the caller p for api.
func keyFor(api, tenant, subject string) Key { return Key{API: api, Tenant: tenant, Subject: subject} }

// List returns the stored grants f selects, without tokens (for
// `mcpgate grants list`).
func (c *Connector) List(ctx context.Context, f Filter) ([]Record, error) {
	return c.grants.store.List(ctx, f)
}

// Revoke deletes the grant of k and, when the API has a revocation
// endpoint, asks its authorization server to revoke the tokens (best
// effort: the grant is gone from the gateway whatever the server says). It
// reports whether there was a grant (for `mcpgate grants revoke` and the
// disconnect tool).
func (c *Connector) Revoke(ctx context.Context, k Key) (bool, error) {
	rec, err := c.grants.store.Get(ctx, k)
	if errors.Is(err, ErrNoGrant) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	deleted, err := c.grants.store.Delete(ctx, k, 0)
	if err != nil || !deleted {
		return deleted, err
	}
	c.opts.Logger.Info("connect: grant revoked", "api", k.API, "subject", k.Subject, "tenant", k.Tenant)
	if p := c.providers[k.API]; p != nil && p.RevocationURL != "" {
		t, err := c.grants.open(rec)
		if err != nil {
			c.opts.Logger.Warn("connect: the grant was deleted but not revoked at the API: the state keys do not open it", "api", k.API, "subject", k.Subject, "error", err)
			return true, nil
		}
		c.revokeUpstream(ctx, p, t)
	}
	return true, nil
}

// revokeUpstream tells the authorization server (RFC 7009), refresh token
// first (which revokes the whole grant at most servers).
func (c *Connector) revokeUpstream(ctx context.Context, p *provider, t tokens) {
	for _, tok := range []struct{ value, hint string }{{t.RefreshToken, "refresh_token"}, {t.AccessToken, "access_token"}} {
		if tok.value == "" {
			continue
		}
		form := url.Values{"token": {tok.value}, "token_type_hint": {tok.hint}}
		if p.ClientSecret == "" {
			form.Set("client_id", p.ClientID) // a public client names itself
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.RevocationURL, strings.NewReader(form.Encode()))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if p.ClientSecret != "" {
			req.SetBasicAuth(url.QueryEscape(p.ClientID), url.QueryEscape(p.ClientSecret))
		}
		resp, err := c.opts.HTTPClient.Do(req)
		if err != nil {
			c.opts.Logger.Warn("connect: revocation request failed", "api", p.API, "error", err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			c.opts.Logger.Warn("connect: the authorization server refused the revocation", "api", p.API, "status", resp.StatusCode)
		}
	}
}

// Reseal re-seals with the ring's newest key the grants f selects that an
// older key sealed, and returns how many it re-sealed (for a key rotation:
// once it returns 0 for every page, no grant needs the old key). A grant
// written meanwhile is skipped (its write sealed it with the newest key).
func (c *Connector) Reseal(ctx context.Context, f Filter) (int, error) {
	recs, err := c.grants.store.List(ctx, f)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, listed := range recs {
		if listed.KeyID == c.grants.box.SealingKeyID() {
			continue
		}
		rec, err := c.grants.store.Get(ctx, listed.Key)
		if errors.Is(err, ErrNoGrant) {
			continue
		}
		if err != nil {
			return n, err
		}
		sealed, resealed, err := c.grants.box.Reseal(rec.Sealed, rec.Key.aad())
		if err != nil {
			return n, fmt.Errorf("connect: grant %s: %w", rec.Key, err)
		}
		if !resealed {
			continue
		}
		rec.Sealed, rec.KeyID = sealed, c.grants.box.SealingKeyID()
		ok, err := c.grants.store.Update(ctx, rec)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}
