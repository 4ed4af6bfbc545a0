package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/mcp"
)

// setupConnect builds the connector when an API's credentials mode is
// oauth: the gateway is then an OAuth client of that API's authorization
// server, and each user connects their own account once (package connect).
func (g *Gateway) setupConnect(ctx context.Context, apis []*api) error {
	var providers []connect.Provider
	for _, a := range apis {
		if a.cfg.Credentials.Mode != "oauth" {
			continue
		}
		o := a.cfg.Credentials.OAuth
		secret, err := secretValue(o.ClientSecret)
		if err != nil {
			return fmt.Errorf("credentials.oauth of %s: client secret: %w", a.cfg.label(), err)
		}
		p, err := connect.Provider{API: a.connectName(), Title: o.Title, ClientID: o.ClientID, ClientSecret: secret,
			AuthURL: o.AuthURL, TokenURL: o.TokenURL, RevocationURL: o.RevocationURL, Issuer: o.Issuer,
			Scopes: o.Scopes, AuthParams: o.AuthParams}.FromDocument(a.result.SecuritySchemes, o.Scheme, a.result.Tools)
		if err != nil {
			return fmt.Errorf("credentials.oauth of %s: %w", a.cfg.label(), err)
		}
		providers = append(providers, p)
	}
	if len(providers) == 0 {
		return nil
	}
	c := g.cfg.Connect
	if c.BaseURL == "" {
		return errors.New("credentials mode oauth needs connect.base_url (--connect-base-url): the gateway's public URL, where users connect their accounts")
	}
	if g.backend.Grants == nil {
		return fmt.Errorf("credentials mode oauth: the %s store keeps no grants", g.backend.Location)
	}
	grants, err := g.backend.Grants(ctx)
	if err != nil {
		return fmt.Errorf("credentials mode oauth: %w", err)
	}
	login, err := g.connectLogin(ctx)
	if err != nil {
		return err
	}
	g.conn, err = connect.New(connect.Options{BaseURL: c.BaseURL, Ring: g.ring, Store: grants, Replay: g.backend.Replay,
		LinkTTL: c.LinkTTL, RefreshMargin: c.RefreshMargin, RefreshLease: c.RefreshLease, Login: login, Logger: g.logger}, providers...)
	if err != nil {
		return err
	}
	for _, p := range providers {
		g.logger.Info("users connect their own accounts", "api", p.API, "redirect_uri", g.conn.RedirectURL(p.API))
	}
	if login != nil {
		g.logger.Info("the connect page signs users in at the callers' issuer", "redirect_uri", g.conn.LoginRedirectURL())
	}
	return nil
}

// connectLogin is the sign-in of the connect page (connect.login.*): the
// browser proves it is the caller the link was made for, at the issuer of
// auth mode oauth.
func (g *Gateway) connectLogin(ctx context.Context) (*connect.Login, error) {
	l := g.cfg.Connect.Login
	if l.ClientID == "" {
		if g.cfg.Auth.Mode == "oauth" {
			g.logger.Warn("connect.login.client_id is not set: the connect page checks a confirmation code, not who the browser's user is (see package connect)")
		}
		return nil, nil
	}
	if g.cfg.Auth.Mode != "oauth" {
		return nil, errors.New("connect.login needs auth mode oauth: it signs the browser in at the callers' issuer")
	}
	secret, err := secretValue(l.ClientSecret)
	if err != nil {
		return nil, fmt.Errorf("connect.login client secret: %w", err)
	}
	a := g.cfg.Auth
	var v *auth.Validator
	err = retryUnreachable(ctx, g.logger, "issuer "+a.Issuer, a.StartupTimeout, func() (err error) {
		v, err = auth.NewValidator(ctx, auth.Config{Issuer: a.Issuer, Resource: g.cfg.Connect.BaseURL, Audiences: []string{l.ClientID},
			JWKSURL: a.JWKSURL, TenantClaim: a.TenantClaim, Logger: g.logger})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("connect.login: %w", err)
	}
	authURL, tokenURL := l.AuthURL, l.TokenURL
	if md := v.Metadata(); md != nil {
		authURL, tokenURL = cmpOr(authURL, md.AuthorizationEndpoint), cmpOr(tokenURL, md.TokenEndpoint)
	}
	return &connect.Login{Issuer: a.Issuer, ClientID: l.ClientID, ClientSecret: secret, AuthURL: authURL, TokenURL: tokenURL,
		Verify: func(ctx context.Context, idToken string) (mcp.Principal, error) { return v.Validate(ctx, idToken) }}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
