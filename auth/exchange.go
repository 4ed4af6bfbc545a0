package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
)

// RFC 8693 identifiers.
const (
	GrantTypeTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	TokenTypeAccessToken   = "urn:ietf:params:oauth:token-type:access_token"
)

// DefaultExchangeRefreshBefore is how long before its expiry an exchanged
// token stops being reused.
const DefaultExchangeRefreshBefore = 30 * time.Second

// ErrExchange is wrapped by every token exchange failure.
var ErrExchange = errors.New("auth: token exchange failed")

// ExchangeConfig configures an [Exchanger].
type ExchangeConfig struct {
	// TokenEndpoint is the authorization server's token endpoint; empty
	// means the token_endpoint of Issuer's metadata.
	TokenEndpoint string
	// Issuer is used to discover the token endpoint when TokenEndpoint is
	// empty.
	Issuer string
	// ClientID and ClientSecret authenticate this server (HTTP Basic).
	ClientID     string
	ClientSecret string
	// Scope, when set, is sent as the requested scope.
	Scope string
	// RefreshBefore: an exchanged token is reused until this long before
	// its expires_in runs out. Default DefaultExchangeRefreshBefore.
	RefreshBefore time.Duration
	// MaxEntries bounds the cache (default 10000).
	MaxEntries int
	// HTTPClient talks to the token endpoint (default: a client with
	// DefaultFetchTimeout).
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Exchanger trades a caller's access token for a token whose audience is
// an upstream API (RFC 8693). Results are cached by (hash of the subject
// token, audience) until shortly before they expire; concurrent exchanges
// of the same pair share one request. It is safe for concurrent use.
type Exchanger struct {
	endpoint      string
	id, secret    string
	scope         string
	refreshBefore time.Duration
	client        *http.Client
	now           func() time.Time
	cache         *ttlCache[exchangeKey, string]
	group         singleflight.Group
	joined        func() // test hook: a caller waits on a shared exchange
}

type exchangeKey struct {
	subject  tokenHash
	audience string
}

// NewExchanger returns an exchanger, discovering the token endpoint from
// cfg.Issuer when cfg.TokenEndpoint is empty.
func NewExchanger(ctx context.Context, cfg ExchangeConfig) (*Exchanger, error) {
	client := cfg.HTTPClient
	if client == nil {
		client = defaultClient()
	}
	endpoint := cfg.TokenEndpoint
	if endpoint == "" {
		if cfg.Issuer == "" {
			return nil, errors.New("auth: exchange needs a TokenEndpoint or an Issuer")
		}
		md, err := Discover(ctx, client, cfg.Issuer)
		if err != nil {
			return nil, err
		}
		if md.TokenEndpoint == "" {
			return nil, fmt.Errorf("auth: issuer %s publishes no token_endpoint", cfg.Issuer)
		}
		endpoint = md.TokenEndpoint
	}
	if u, err := url.Parse(endpoint); err != nil || u.Host == "" {
		return nil, fmt.Errorf("auth: token endpoint %q is not an absolute URL", endpoint)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Exchanger{
		endpoint:      endpoint,
		id:            cfg.ClientID,
		secret:        cfg.ClientSecret,
		scope:         cfg.Scope,
		refreshBefore: orDefault(cfg.RefreshBefore, DefaultExchangeRefreshBefore),
		client:        client,
		now:           now,
		cache:         newTTLCache[exchangeKey, string](cfg.MaxEntries, now),
	}, nil
}

// Exchange returns an access token for audience in place of subjectToken:
// from the cache, from an exchange already in flight for the same pair, or
// from a new exchange. audience is sent as "audience" and, when it is an
// absolute URL, also as "resource" (RFC 8707). A caller whose ctx ends
// stops waiting; the shared exchange goes on for the others.
func (e *Exchanger) Exchange(ctx context.Context, subjectToken, audience string) (string, error) {
	if subjectToken == "" {
		return "", fmt.Errorf("%w: no subject token", ErrExchange)
	}
	key := exchangeKey{hashToken(subjectToken), audience}
	if tok, ok := e.cache.get(key); ok {
		return tok, nil
	}
	ch := e.group.DoChan(string(key.subject[:])+"\x00"+audience, func() (any, error) {
		if tok, ok := e.cache.get(key); ok { // filled while we queued
			return tok, nil
		}
		// Shared by every waiter: not cancelled with the first caller's
		// context, but bounded in time.
		xctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultFetchTimeout)
		defer cancel()
		tok, exp, err := e.exchange(xctx, subjectToken, audience)
		if err != nil {
			return "", err
		}
		if !exp.IsZero() {
			e.cache.put(key, tok, exp)
		}
		return tok, nil
	})
	if e.joined != nil {
		e.joined()
	}
	select {
	case <-ctx.Done():
		return "", fmt.Errorf("%w: %w", ErrExchange, ctx.Err())
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	}
}

// exchange performs one RFC 8693 request. exp is when the cached result
// must stop being used (zero: do not cache).
func (e *Exchanger) exchange(ctx context.Context, subjectToken, audience string) (tok string, exp time.Time, err error) {
	form := url.Values{
		"grant_type":           {GrantTypeTokenExchange},
		"subject_token":        {subjectToken},
		"subject_token_type":   {TokenTypeAccessToken},
		"requested_token_type": {TokenTypeAccessToken},
		"audience":             {audience},
	}
	if u, err := url.Parse(audience); err == nil && u.Scheme != "" && u.Host != "" {
		form.Set("resource", audience)
	}
	if e.scope != "" {
		form.Set("scope", e.scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %w", ErrExchange, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if e.id != "" {
		req.SetBasicAuth(url.QueryEscape(e.id), url.QueryEscape(e.secret))
	}
	start := e.now()
	resp, err := e.client.Do(req)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %s: %w", ErrExchange, e.endpoint, redactURLError(err))
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken      string   `json:"access_token"`
		IssuedTokenType  string   `json:"issued_token_type"`
		TokenType        string   `json:"token_type"`
		ExpiresIn        *float64 `json:"expires_in"`
		Error            string   `json:"error"`
		ErrorDescription string   `json:"error_description"`
	}
	decErr := json.NewDecoder(io.LimitReader(resp.Body, maxMetadataBytes)).Decode(&body)
	if resp.StatusCode != http.StatusOK {
		if decErr == nil && body.Error != "" {
			return "", time.Time{}, fmt.Errorf("%w: %s: status %d: %s", ErrExchange, e.endpoint, resp.StatusCode, oauthErrorText(body.Error, body.ErrorDescription))
		}
		return "", time.Time{}, fmt.Errorf("%w: %s: status %d", ErrExchange, e.endpoint, resp.StatusCode)
	}
	switch {
	case decErr != nil:
		return "", time.Time{}, fmt.Errorf("%w: %s: decoding: %w", ErrExchange, e.endpoint, decErr)
	case body.AccessToken == "":
		return "", time.Time{}, fmt.Errorf("%w: %s: no access_token in the answer", ErrExchange, e.endpoint)
	case body.IssuedTokenType != "" && body.IssuedTokenType != TokenTypeAccessToken:
		return "", time.Time{}, fmt.Errorf("%w: %s: issued_token_type %q is not an access token", ErrExchange, e.endpoint, body.IssuedTokenType)
	case body.TokenType != "" && !strings.EqualFold(body.TokenType, "bearer") && !strings.EqualFold(body.TokenType, "N_A"):
		return "", time.Time{}, fmt.Errorf("%w: %s: token_type %q is not Bearer", ErrExchange, e.endpoint, body.TokenType)
	}
	if body.ExpiresIn != nil {
		until := time.Duration(*body.ExpiresIn*float64(time.Second)) - e.refreshBefore
		if until > 0 {
			exp = start.Add(until)
		}
	}
	return body.AccessToken, exp, nil
}

// oauthErrorText renders an OAuth error answer, bounded and restricted to
// printable ASCII (it ends up in tool errors).
func oauthErrorText(code, desc string) string {
	s := code
	if desc != "" {
		s += ": " + desc
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}
