package connect

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpgate/mcpgate/secretbox"
)

// The authorization of one caller, step by step (see the package doc for
// the threat model):
//
//  1. The tool decorator makes a link: /connect/<api>?s=<sealed link> with
//     the caller's subject and tenant, a flow id, a confirmation code and an
//     expiry sealed inside (nothing readable in the URL). The code is shown
//     to the user in the elicitation's message only.
//  2. GET of the link shows a confirmation page (GET never consumes it:
//     link previews fetch URLs). The user types the code and POSTs.
//  3. The POST consumes the link (once, across replicas: the replay cache),
//     checks the code, sets a flow cookie (sealed: subject, tenant, PKCE
//     verifier, expiry; bound to a fresh random state) and redirects to the
//     authorization server with that state and the S256 challenge.
//  4. The callback needs the flow cookie of its state, in the same browser;
//     it consumes the state (once), exchanges the code with the verifier and
//     stores the grant under the subject sealed in the cookie.

// link is the sealed content of a connect link.
type link struct {
	Subject string `json:"sub"`
	Tenant  string `json:"ten,omitempty"`
	Flow    string `json:"fid"`
	Code    string `json:"code"`
	Expires int64  `json:"exp"` // unix milliseconds
}

// flow is the sealed content of a flow cookie.
type flow struct {
	Subject  string `json:"sub"`
	Tenant   string `json:"ten,omitempty"`
	Verifier string `json:"ver"`
	Expires  int64  `json:"exp"`
}

const (
	linkParam    = "s"
	codeParam    = "code"
	cookiePrefix = "mcpgate-connect-"
	maxForm      = 8 << 10
	stateLen     = 22 // base64url of 16 random bytes
)

var b64 = base64.RawURLEncoding.Strict()

// newLink makes the connect link of k and its confirmation code.
func (c *Connector) newLink(p *provider, k Key) (href, code string, err error) {
	code = rand.Text()[:8]
	l := link{Subject: k.Subject, Tenant: k.Tenant, Flow: rand.Text(), Code: code, Expires: c.opts.Now().Add(c.opts.LinkTTL).UnixMilli()}
	plain, err := json.Marshal(l)
	if err != nil {
		return "", "", err
	}
	sealed, err := c.links.Seal(plain, secretbox.AAD("link", p.API))
	if err != nil {
		return "", "", err
	}
	return p.page + "?" + linkParam + "=" + b64.EncodeToString(sealed), code[:4] + "-" + code[4:], nil
}

// openLink returns the link in s if it is authentic for api and unexpired.
func (c *Connector) openLink(api, s string) (link, error) {
	var l link
	raw, err := b64.DecodeString(s)
	if err != nil || len(s) > 4096 {
		return l, errors.New("malformed link")
	}
	plain, err := c.links.Open(raw, secretbox.AAD("link", api))
	if err != nil {
		return l, err
	}
	if err := json.Unmarshal(plain, &l); err != nil || l.Subject == "" {
		return l, errors.New("malformed link content")
	}
	if !c.opts.Now().Before(time.UnixMilli(l.Expires)) {
		return l, errors.New("expired link")
	}
	return l, nil
}

// servePage shows the confirmation page of a link.
func (c *Connector) servePage(w http.ResponseWriter, r *http.Request) {
	p := c.provider(w, r)
	if p == nil {
		return
	}
	s := r.URL.Query().Get(linkParam)
	if _, err := c.openLink(p.API, s); err != nil {
		c.page(w, http.StatusBadRequest, pageData{API: p.title(), Title: "This link cannot be used",
			Message: "The link is invalid or has expired. Call the tool again from your client to get a new one."})
		return
	}
	if c.opts.Login != nil {
		c.startLogin(w, r, p, s)
		return
	}
	c.page(w, http.StatusOK, pageData{API: p.title(), Title: "Connect " + p.title(), Form: true, Link: s, Action: p.page,
		Message: "Your client asked to use your " + p.title() + " account through this gateway. Enter the code your client showed with this link, then sign in at " + p.title() + "."})
}

// serveConfirm checks the code of a link and starts the authorization.
func (c *Connector) serveConfirm(w http.ResponseWriter, r *http.Request) {
	p := c.provider(w, r)
	if p == nil {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		c.refuse(w, p, http.StatusBadRequest, "The form could not be read.")
		return
	}
	refuse := func(status int, msg string) { c.refuse(w, p, status, msg) }
	if c.opts.Login != nil { // the sign-in, not a code, proves who this is
		refuse(http.StatusForbidden, "This gateway checks who you are by signing you in, not by a code. Open the link again.")
		return
	}
	l, err := c.openLink(p.API, r.PostForm.Get(linkParam))
	if err != nil {
		refuse(http.StatusBadRequest, "The link is invalid or has expired. Call the tool again from your client to get a new one.")
		return
	}
	// Consume the link before looking at the code: one guess per link.
	if !c.spend(w, r, p, "connect-link:"+l.Flow, l.Expires, linkUsed) {
		return
	}
	if !sameCode(r.PostForm.Get(codeParam), l.Code) {
		refuse(http.StatusForbidden, "The code does not match the one your client showed, and the link can no longer be used. Call the tool again from your client to get a new link and code.")
		return
	}
	c.startFlow(w, r, p, l)
}

// startFlow sends the browser to the API's authorization server for the
// caller of l (whose link was just consumed): a fresh state, and the flow
// cookie holding the caller and the PKCE verifier for it.
func (c *Connector) startFlow(w http.ResponseWriter, r *http.Request, p *provider, l link) {
	state := b64.EncodeToString(randomBytes(16))
	verifier := oauth2.GenerateVerifier()
	expires := c.opts.Now().Add(c.opts.LinkTTL)
	plain, err := json.Marshal(flow{Subject: l.Subject, Tenant: l.Tenant, Verifier: verifier, Expires: expires.UnixMilli()})
	var sealed []byte
	if err == nil {
		sealed, err = c.flows.Seal(plain, secretbox.AAD("flow", p.API, state))
	}
	if err != nil {
		c.refuse(w, p, http.StatusInternalServerError, "The gateway could not start the authorization.")
		return
	}
	http.SetCookie(w, c.flowCookie(state, b64.EncodeToString(sealed), int(c.opts.LinkTTL/time.Second)))
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	for k, v := range p.AuthParams {
		opts = append(opts, oauth2.SetAuthURLParam(k, v))
	}
	secureHeaders(w)
	http.Redirect(w, r, p.oauth.AuthCodeURL(state, opts...), http.StatusSeeOther)
}

// serveCallback completes the authorization and stores the grant.
func (c *Connector) serveCallback(w http.ResponseWriter, r *http.Request) {
	p := c.provider(w, r)
	if p == nil {
		return
	}
	refuse := func(status int, msg string) { c.refuse(w, p, status, msg) }
	q := r.URL.Query()
	state := q.Get("state")
	f, err := c.openFlow(r, p.API, state)
	if err != nil {
		refuse(http.StatusBadRequest, "This authorization was not started in this browser, or it expired. Call the tool again from your client to start over.")
		return
	}
	http.SetCookie(w, c.flowCookie(state, "", -1))
	if iss := q.Get("iss"); iss != "" && p.Issuer != "" && iss != p.Issuer {
		refuse(http.StatusBadRequest, "The answer came from another authorization server than "+p.title()+"'s.")
		return
	}
	if !c.spend(w, r, p, "connect-callback:"+state, f.Expires, "This authorization was already completed. Call the tool again from your client if it still asks you to connect.") {
		return
	}
	if e := q.Get("error"); e != "" {
		refuse(http.StatusForbidden, p.title()+" did not grant access ("+e+"). Nothing was stored.")
		return
	}
	code := q.Get("code")
	if code == "" {
		refuse(http.StatusBadRequest, "The answer carries no authorization code.")
		return
	}
	tok, err := p.oauth.Exchange(c.clientContext(r.Context()), code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		c.opts.Logger.Warn("connect: code exchange refused", "api", p.API, "error", tokenError(err))
		refuse(http.StatusBadGateway, p.title()+" did not accept the authorization ("+tokenError(err)+"). Nothing was stored; call the tool again to start over.")
		return
	}
	k := keyFor(p.API, f.Tenant, f.Subject)
	scope, _ := tok.Extra("scope").(string)
	rec, err := c.grants.seal(k, fromOAuth(tok, c.opts.Now()), scope)
	if err == nil {
		_, err = c.grants.store.Put(r.Context(), rec)
	}
	if err != nil {
		c.opts.Logger.Error("connect: storing a grant failed", "api", p.API, "error", err)
		refuse(http.StatusInternalServerError, "The gateway could not store the authorization. Call the tool again to start over.")
		return
	}
	c.opts.Logger.Info("connect: grant stored", "api", p.API, "subject", k.Subject, "tenant", k.Tenant, "scope", scope)
	c.page(w, http.StatusOK, pageData{API: p.title(), Title: "Connected", Done: true,
		Message: "Your " + p.title() + " account is connected. Go back to your client and continue."})
}

// provider returns the provider the request's path names, or writes a 404
// and returns nil.
func (c *Connector) provider(w http.ResponseWriter, r *http.Request) *provider {
	p := c.providers[r.PathValue("api")]
	if p == nil {
		c.page(w, http.StatusNotFound, pageData{Title: "Unknown API", Message: "No API of this gateway is called that."})
	}
	return p
}

const linkUsed = "This link was already used. Call the tool again from your client to get a new one."

// refuse writes the page of a refusal; p may be nil.
func (c *Connector) refuse(w http.ResponseWriter, p *provider, status int, msg string) {
	d := pageData{Title: "Not connected", Message: msg}
	if p != nil {
		d.API = p.title()
	}
	c.page(w, status, d)
}

// spend marks id used, once across every replica sharing the replay cache.
// It reports false, having written the refusal (used, or a failure to
// check), when id was used before or the cache cannot tell.
func (c *Connector) spend(w http.ResponseWriter, r *http.Request, p *provider, id string, expires int64, used string) bool {
	first, err := c.opts.Replay.Use(r.Context(), id, time.UnixMilli(expires))
	if err != nil {
		c.opts.Logger.Error("connect: replay cache", "error", err)
		c.refuse(w, p, http.StatusServiceUnavailable, "The gateway could not check this link. Call the tool again from your client in a moment.")
		return false
	}
	if !first {
		c.refuse(w, p, http.StatusForbidden, used)
	}
	return first
}

// openFlow returns the flow of state from its cookie.
func (c *Connector) openFlow(r *http.Request, api, state string) (flow, error) {
	var f flow
	plain, err := c.openCookie(r, c.flows, cookiePrefix, state, secretbox.AAD("flow", api, state))
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(plain, &f); err != nil || f.Subject == "" || f.Verifier == "" {
		return f, errors.New("malformed flow")
	}
	if !c.opts.Now().Before(time.UnixMilli(f.Expires)) {
		return f, errors.New("expired flow")
	}
	return f, nil
}

// openCookie opens the sealed value of the state cookie of state.
func (c *Connector) openCookie(r *http.Request, box *secretbox.Box, prefix, state string, aad []byte) ([]byte, error) {
	if len(state) != stateLen {
		return nil, errors.New("malformed state")
	}
	if _, err := b64.DecodeString(state); err != nil {
		return nil, errors.New("malformed state")
	}
	ck, err := r.Cookie(c.cookieName(prefix, state))
	if err != nil {
		return nil, err
	}
	raw, err := b64.DecodeString(ck.Value)
	if err != nil {
		return nil, err
	}
	return box.Open(raw, aad)
}

// secureCookies: on https the flow cookie is a __Host- cookie (Secure,
// Path=/, no Domain: only this origin ever sees it).
func (c *Connector) secureCookies() bool { return c.base.Scheme == "https" }

func (c *Connector) cookieName(prefix, state string) string {
	if c.secureCookies() {
		return "__Host-" + prefix + state
	}
	return prefix + state
}

// flowCookie is the cookie of one flow; maxAge < 0 deletes it.
func (c *Connector) flowCookie(state, value string, maxAge int) *http.Cookie {
	return c.stateCookie(cookiePrefix, state, value, maxAge)
}

// stateCookie is a cookie that carries the sealed state of one redirect
// round trip (a flow, a login) in the browser that started it.
func (c *Connector) stateCookie(prefix, state, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: c.cookieName(prefix, state), Value: value, Path: "/", MaxAge: maxAge,
		Secure: c.secureCookies(), HttpOnly: true, SameSite: http.SameSiteLaxMode,
	}
}

// sameCode compares a typed code with the link's, ignoring case, spaces and
// dashes, in constant time.
func sameCode(typed, want string) bool {
	norm := strings.NewReplacer("-", "", " ", "").Replace(strings.ToUpper(strings.TrimSpace(typed)))
	return len(norm) == len(want) && subtle.ConstantTimeCompare([]byte(norm), []byte(want)) == 1
}

// tokenError is what a token endpoint said, without its body (which the
// x/oauth2 error quotes in full).
func tokenError(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return re.ErrorCode
		}
		if re.Response != nil {
			return fmt.Sprintf("HTTP %d", re.Response.StatusCode)
		}
	}
	return "the token endpoint could not be reached"
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}
