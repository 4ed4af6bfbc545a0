package connect

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/secretbox"
)

// Login makes the connect page prove who the browser's user is: before the
// API's authorization starts, the browser signs in (OpenID Connect,
// authorization code with PKCE and a nonce) at the identity provider that
// issues the MCP callers' tokens (auth mode oauth), and the signed-in
// subject and tenant must be those of the caller the link was made for.
// This is the check MCP requires for URL-mode flows: a link sent to someone
// else is refused for them, whatever they type. With Login set, links carry
// no confirmation code and the code form is refused.
//
// The identity provider must give the login client the same subject as the
// MCP access tokens (public subject identifiers, not pairwise ones).
type Login struct {
	// Issuer is the identity provider's issuer (RFC 9207 iss checked).
	Issuer string
	// ClientID and ClientSecret are the gateway's login client; its
	// redirect URI is [Connector.LoginRedirectURL].
	ClientID     string
	ClientSecret string
	// AuthURL and TokenURL are the provider's endpoints.
	AuthURL  string
	TokenURL string
	// Verify validates an ID token (signature, issuer, audience = ClientID,
	// expiry) and returns the principal it names, resolved like the MCP
	// endpoint's callers (same tenant claim): an auth.Validator built with
	// Audiences []string{ClientID} does exactly this with its Validate.
	Verify func(ctx context.Context, idToken string) (mcp.Principal, error)
}

// loginPath is where the identity provider sends the browser back; "."
// cannot start an API name, so it never shadows an API's page.
const loginPath = "/connect/.login"

const loginPrefix = "mcpgate-login-"

// login is the sealed content of a login cookie.
type login struct {
	API      string `json:"api"`
	Link     string `json:"s"`
	Nonce    string `json:"nonce"`
	Verifier string `json:"ver"`
	Expires  int64  `json:"exp"`
}

func (l *Login) check() error {
	var errs []error
	if l.ClientID == "" {
		errs = append(errs, errors.New("no client id"))
	}
	if l.Verify == nil {
		errs = append(errs, errors.New("no ID token verifier"))
	}
	for _, e := range []struct{ name, v string }{{"issuer", l.Issuer}, {"authorization URL", l.AuthURL}, {"token URL", l.TokenURL}} {
		if err := checkEndpoint(e.v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e.name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("connect: login: %w", errors.Join(errs...))
	}
	return nil
}

// LoginRedirectURL is the redirect URI of the login client, to register at
// the identity provider ("" without Login).
func (c *Connector) LoginRedirectURL() string {
	if c.opts.Login == nil {
		return ""
	}
	return c.base.String() + loginPath
}

func (c *Connector) loginConfig() *oauth2.Config {
	l := c.opts.Login
	return &oauth2.Config{ClientID: l.ClientID, ClientSecret: l.ClientSecret, RedirectURL: c.LoginRedirectURL(),
		Scopes: []string{"openid"}, Endpoint: oauth2.Endpoint{AuthURL: l.AuthURL, TokenURL: l.TokenURL}}
}

// startLogin sends the browser that opened link s of api to the identity
// provider.
func (c *Connector) startLogin(w http.ResponseWriter, r *http.Request, p *provider, s string) {
	state := b64.EncodeToString(randomBytes(16))
	nonce := b64.EncodeToString(randomBytes(16))
	verifier := oauth2.GenerateVerifier()
	plain, err := json.Marshal(login{API: p.API, Link: s, Nonce: nonce, Verifier: verifier, Expires: c.opts.Now().Add(c.opts.LinkTTL).UnixMilli()})
	var sealed []byte
	if err == nil {
		sealed, err = c.flows.Seal(plain, secretbox.AAD("login", state))
	}
	if err != nil {
		c.refuse(w, p, http.StatusInternalServerError, "The gateway could not start the sign-in.")
		return
	}
	http.SetCookie(w, c.stateCookie(loginPrefix, state, b64.EncodeToString(sealed), int(c.opts.LinkTTL/time.Second)))
	secureHeaders(w)
	http.Redirect(w, r, c.loginConfig().AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", nonce)), http.StatusSeeOther)
}

// serveLogin takes the identity provider's answer: the signed-in user must
// be the link's caller; then the API's authorization starts.
func (c *Connector) serveLogin(w http.ResponseWriter, r *http.Request) {
	refuse := func(status int, msg string) { c.refuse(w, nil, status, msg) }
	if c.opts.Login == nil {
		refuse(http.StatusNotFound, "This gateway does not sign users in.")
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	var lg login
	plain, err := c.openCookie(r, c.flows, loginPrefix, state, secretbox.AAD("login", state))
	if err == nil {
		err = json.Unmarshal(plain, &lg)
	}
	p := c.providers[lg.API]
	if err != nil || p == nil || !c.opts.Now().Before(time.UnixMilli(lg.Expires)) {
		refuse(http.StatusBadRequest, "This sign-in was not started in this browser, or it expired. Call the tool again from your client to start over.")
		return
	}
	http.SetCookie(w, c.stateCookie(loginPrefix, state, "", -1))
	if iss := q.Get("iss"); iss != "" && iss != c.opts.Login.Issuer {
		refuse(http.StatusBadRequest, "The answer came from another identity provider than the gateway's.")
		return
	}
	if !c.spend(w, r, p, "connect-login:"+state, lg.Expires, "This sign-in was already used. Call the tool again from your client to start over.") {
		return
	}
	if e := q.Get("error"); e != "" {
		refuse(http.StatusForbidden, "The sign-in did not succeed ("+e+"). Nothing was connected.")
		return
	}
	who, err := c.signedIn(r.Context(), q.Get("code"), lg)
	if err != nil {
		c.opts.Logger.Warn("connect: sign-in refused", "api", p.API, "error", err)
		refuse(http.StatusForbidden, "The sign-in could not be verified. Nothing was connected.")
		return
	}
	l, err := c.openLink(p.API, lg.Link)
	if err != nil {
		refuse(http.StatusBadRequest, "The link is invalid or has expired. Call the tool again from your client to get a new one.")
		return
	}
	// The link is spent whoever signed in: one attempt per link.
	if !c.spend(w, r, p, "connect-link:"+l.Flow, l.Expires, linkUsed) {
		return
	}
	if who.Subject != l.Subject || who.Tenant != l.Tenant {
		c.opts.Logger.Warn("connect: a link was opened by another user than its caller", "api", p.API, "caller", l.Subject, "signed_in", who.Subject)
		refuse(http.StatusForbidden, "You are signed in as another user than the one whose client asked to connect "+p.title()+". Nothing was connected. If someone sent you this link, do not use it.")
		return
	}
	c.startFlow(w, r, p, l)
}

// signedIn redeems the login code and returns who the verified ID token
// names, after checking its nonce.
func (c *Connector) signedIn(ctx context.Context, code string, lg login) (mcp.Principal, error) {
	if code == "" {
		return mcp.Principal{}, errors.New("no code")
	}
	tok, err := c.loginConfig().Exchange(c.clientContext(ctx), code, oauth2.VerifierOption(lg.Verifier))
	if err != nil {
		return mcp.Principal{}, fmt.Errorf("code exchange: %s", tokenError(err))
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return mcp.Principal{}, errors.New("no ID token in the token response")
	}
	who, err := c.opts.Login.Verify(ctx, raw)
	if err != nil {
		return mcp.Principal{}, fmt.Errorf("ID token: %w", err)
	}
	// Verify checked the signature; the nonce binds the token to this login.
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(raw, claims); err != nil {
		return mcp.Principal{}, fmt.Errorf("ID token: %w", err)
	}
	nonce, _ := claims["nonce"].(string)
	if subtle.ConstantTimeCompare([]byte(nonce), []byte(lg.Nonce)) != 1 {
		return mcp.Principal{}, errors.New("ID token: the nonce does not match")
	}
	if strings.TrimSpace(who.Subject) == "" {
		return mcp.Principal{}, errors.New("ID token: no subject")
	}
	return who, nil
}
