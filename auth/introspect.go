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
)

// DefaultIntrospectionCacheTTL is how long a positive introspection answer
// is reused at most.
const DefaultIntrospectionCacheTTL = 30 * time.Second

// IntrospectionConfig configures RFC 7662 token introspection.
type IntrospectionConfig struct {
	// Endpoint is the introspection endpoint; empty means the issuer
	// metadata's introspection_endpoint.
	Endpoint string
	// ClientID and ClientSecret authenticate this server to the endpoint
	// (HTTP Basic, RFC 6749 §2.3.1).
	ClientID     string
	ClientSecret string
	// CacheTTL is how long an active answer is reused (never beyond the
	// token's exp). Zero means DefaultIntrospectionCacheTTL, negative
	// disables the cache. Inactive answers are never cached.
	CacheTTL time.Duration
	// MaxEntries bounds the cache (default 10000).
	MaxEntries int
}

// Introspection is an introspection answer (RFC 7662 §2.2).
type Introspection struct {
	Active    bool
	Subject   string
	Issuer    string
	ClientID  string
	Scopes    []string
	Audiences []string
	ExpiresAt time.Time // zero when absent
	NotBefore time.Time // zero when absent
	// Claims is the whole answer, for claims such as a tenant.
	Claims map[string]any
}

// Introspector asks an authorization server whether tokens are active. It
// is safe for concurrent use.
type Introspector struct {
	endpoint string
	id       string
	secret   string
	ttl      time.Duration
	client   *http.Client
	now      func() time.Time
	cache    *ttlCache[tokenHash, *Introspection]
}

// NewIntrospector returns an introspector; client and now default to a
// client with DefaultFetchTimeout and time.Now.
func NewIntrospector(cfg IntrospectionConfig, client *http.Client, now func() time.Time) (*Introspector, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("auth: no introspection endpoint configured or discovered")
	}
	if u, err := url.Parse(cfg.Endpoint); err != nil || u.Host == "" {
		return nil, fmt.Errorf("auth: introspection endpoint %q is not an absolute URL", cfg.Endpoint)
	}
	if client == nil {
		client = defaultClient()
	}
	if now == nil {
		now = time.Now
	}
	in := &Introspector{endpoint: cfg.Endpoint, id: cfg.ClientID, secret: cfg.ClientSecret, ttl: cfg.CacheTTL, client: client, now: now}
	if in.ttl == 0 {
		in.ttl = DefaultIntrospectionCacheTTL
	}
	if in.ttl > 0 {
		in.cache = newTTLCache[tokenHash, *Introspection](cfg.MaxEntries, now)
	}
	return in, nil
}

// Introspect asks whether token is active. An inactive token is not an
// error: the answer has Active false. A failed request, a non-200 answer or
// an answer without "active" is an error wrapping [ErrUnavailable]. The
// token is sent with token_type_hint access_token and never appears in an
// error.
func (in *Introspector) Introspect(ctx context.Context, token string) (*Introspection, error) {
	var key tokenHash
	if in.cache != nil {
		key = hashToken(token)
		if r, ok := in.cache.get(key); ok {
			return r, nil
		}
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: introspection request: %w", ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if in.id != "" {
		req.SetBasicAuth(url.QueryEscape(in.id), url.QueryEscape(in.secret))
	}
	resp, err := in.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: introspection at %s: %w", ErrUnavailable, in.endpoint, redactURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadataBytes))
		return nil, fmt.Errorf("%w: introspection at %s: status %d", ErrUnavailable, in.endpoint, resp.StatusCode)
	}
	var claims map[string]any
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMetadataBytes)).Decode(&claims); err != nil {
		return nil, fmt.Errorf("%w: introspection at %s: decoding: %w", ErrUnavailable, in.endpoint, err)
	}
	r, err := parseIntrospection(claims)
	if err != nil {
		return nil, fmt.Errorf("%w: introspection at %s: %w", ErrUnavailable, in.endpoint, err)
	}
	if r.Active && in.cache != nil {
		exp := in.now().Add(in.ttl)
		if !r.ExpiresAt.IsZero() && r.ExpiresAt.Before(exp) {
			exp = r.ExpiresAt
		}
		in.cache.put(key, r, exp)
	}
	return r, nil
}

// redactURLError drops the request details a *url.Error carries; the
// request body is never part of it, but be strict anyway.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func parseIntrospection(c map[string]any) (*Introspection, error) {
	active, ok := c["active"].(bool)
	if !ok {
		return nil, errors.New(`answer has no boolean "active"`)
	}
	r := &Introspection{Active: active, Claims: c}
	if !active {
		return r, nil
	}
	r.Subject, _ = c["sub"].(string)
	r.Issuer, _ = c["iss"].(string)
	r.ClientID, _ = c["client_id"].(string)
	if s, ok := c["scope"].(string); ok {
		r.Scopes = strings.Fields(s)
	} else if c["scope"] != nil {
		return nil, errors.New(`"scope" is not a string`)
	}
	switch aud := c["aud"].(type) {
	case nil:
	case string:
		r.Audiences = []string{aud}
	case []any:
		for _, a := range aud {
			s, ok := a.(string)
			if !ok {
				return nil, errors.New(`"aud" is not a string or an array of strings`)
			}
			r.Audiences = append(r.Audiences, s)
		}
	default:
		return nil, errors.New(`"aud" is not a string or an array of strings`)
	}
	var err error
	if r.ExpiresAt, err = numericDate(c, "exp"); err != nil {
		return nil, err
	}
	if r.NotBefore, err = numericDate(c, "nbf"); err != nil {
		return nil, err
	}
	return r, nil
}

func numericDate(c map[string]any, name string) (time.Time, error) {
	switch v := c[name].(type) {
	case nil:
		return time.Time{}, nil
	case float64:
		sec := int64(v)
		return time.Unix(sec, int64((v-float64(sec))*1e9)), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a number", name)
}

// validateIntrospected turns an introspection answer into a token, with
// the same checks as for a JWT: active, issuer (when given), audience,
// validity period with leeway, subject.
func (v *Validator) validateIntrospected(ctx context.Context, raw string) (*Token, error) {
	r, err := v.introspector.Introspect(ctx, raw)
	if err != nil {
		return nil, err
	}
	if !r.Active {
		return nil, fmt.Errorf("%w: inactive", ErrInvalidToken)
	}
	if r.Issuer != "" && r.Issuer != v.issuer {
		return nil, fmt.Errorf("%w: issued by another issuer", ErrInvalidToken)
	}
	now := v.now()
	if !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt.Add(v.leeway)) {
		return nil, ErrTokenExpired
	}
	if !r.NotBefore.IsZero() && now.Add(v.leeway).Before(r.NotBefore) {
		return nil, fmt.Errorf("%w: not valid yet", ErrInvalidToken)
	}
	t := &Token{Issuer: v.issuer, Audiences: r.Audiences, ExpiresAt: r.ExpiresAt, raw: raw}
	if err := v.fill(t, r.Claims); err != nil {
		return nil, err
	}
	return t, nil
}
