package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/mcpgate/mcpgate/mcp"
)

// Defaults of [Config].
const (
	DefaultLeeway                    = 60 * time.Second
	DefaultFetchTimeout              = 10 * time.Second
	DefaultJWKSRefreshInterval       = time.Hour
	DefaultUnknownKIDRefreshInterval = time.Minute
)

// Config configures a [Validator].
type Config struct {
	// Issuer is the authorization server's issuer identifier (required).
	// JWTs must carry exactly this iss; its metadata is discovered from it
	// unless JWKSURL (and, for introspection, the endpoint) are set.
	Issuer string
	// Resource is this server's canonical resource URL (required), e.g.
	// "https://mcp.example.com/mcp". Tokens must name it (or one of
	// Audiences) in aud. Scheme and host case, a default port and a
	// trailing slash are ignored when comparing.
	Resource string
	// Audiences are further accepted audience values.
	Audiences []string
	// JWKSURL is the issuer's JWK Set; empty means the metadata's jwks_uri.
	// The metadata is discovered only when JWKSURL is empty and no
	// introspection endpoint is configured; with an introspection endpoint
	// and no JWKSURL every token is introspected.
	JWKSURL string
	// Leeway is the clock skew allowed for exp, nbf and iat: zero means
	// DefaultLeeway, negative means none.
	Leeway time.Duration
	// RequiredScopes must all be granted for any request.
	RequiredScopes []string
	// ImpliedScopes maps a scope to the narrower scopes it grants too
	// (scope hierarchies), applied transitively to every grant.
	ImpliedScopes map[string][]string
	// TenantClaim names the claim (a string) that becomes Principal.Tenant,
	// e.g. "tid". Empty: no tenant.
	TenantClaim string
	// ScopeClaims are the claims that carry scopes, each either a
	// space-separated string or an array of strings. Default "scope", "scp".
	ScopeClaims []string
	// Introspection, when set, validates tokens that are not JWTs (or all
	// tokens, when no JWK Set is configured or discovered) by RFC 7662
	// introspection.
	Introspection *IntrospectionConfig
	// HTTPClient talks to the authorization server. Default: a client with
	// FetchTimeout.
	HTTPClient *http.Client
	// FetchTimeout bounds each metadata, JWKS and introspection request.
	// Default DefaultFetchTimeout.
	FetchTimeout time.Duration
	// JWKSRefreshInterval is how often the JWK Set is refreshed in the
	// background. Default DefaultJWKSRefreshInterval.
	JWKSRefreshInterval time.Duration
	// UnknownKIDRefreshInterval is the least time between two refreshes
	// caused by tokens with an unknown key id; it must exceed FetchTimeout.
	// Default DefaultUnknownKIDRefreshInterval.
	UnknownKIDRefreshInterval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives JWKS refresh failures (default slog.Default()).
	// Tokens are never logged.
	Logger *slog.Logger
}

// Validator validates access tokens for one resource. It is safe for
// concurrent use.
type Validator struct {
	issuer         string
	resource       string
	audiences      []string // canonical forms
	leeway         time.Duration
	requiredScopes []string
	impliedScopes  map[string][]string
	tenantClaim    string
	scopeClaims    []string
	now            func() time.Time
	logger         *slog.Logger

	parser       *jwt.Parser
	keys         keyfunc.Keyfunc // nil: no JWK Set
	kidLimiter   *rate.Limiter
	introspector *Introspector // nil: no introspection
	metadata     *ServerMetadata
}

// NewValidator builds a validator: it discovers the issuer's metadata when
// needed and fetches the JWK Set. ctx bounds the validator's life: when it
// is done the background JWKS refresh stops. A JWK Set that cannot be
// fetched now is fetched again when a token needs it.
func NewValidator(ctx context.Context, cfg Config) (*Validator, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("auth: Config.Issuer is required")
	}
	res, err := CanonicalResource(cfg.Resource)
	if err != nil {
		return nil, err
	}
	v := &Validator{
		issuer:         cfg.Issuer,
		resource:       res,
		leeway:         cfg.Leeway,
		requiredScopes: normalizeScopes(slices.Clone(cfg.RequiredScopes)),
		impliedScopes:  cfg.ImpliedScopes,
		tenantClaim:    cfg.TenantClaim,
		scopeClaims:    cfg.ScopeClaims,
		now:            cfg.Now,
		logger:         cfg.Logger,
	}
	v.audiences = append(v.audiences, canonicalAudience(res))
	for _, a := range cfg.Audiences {
		v.audiences = append(v.audiences, canonicalAudience(a))
	}
	switch {
	case v.leeway == 0:
		v.leeway = DefaultLeeway
	case v.leeway < 0:
		v.leeway = 0
	}
	if v.scopeClaims == nil {
		v.scopeClaims = []string{"scope", "scp"}
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.logger == nil {
		v.logger = slog.Default()
	}
	timeout := orDefault(cfg.FetchTimeout, DefaultFetchTimeout)
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: timeout}
	}
	kidInterval := orDefault(cfg.UnknownKIDRefreshInterval, DefaultUnknownKIDRefreshInterval)
	if kidInterval <= timeout {
		return nil, fmt.Errorf("auth: UnknownKIDRefreshInterval (%s) must exceed FetchTimeout (%s)", kidInterval, timeout)
	}

	jwksURL := cfg.JWKSURL
	var introEndpoint string
	if cfg.Introspection != nil {
		introEndpoint = cfg.Introspection.Endpoint
	}
	if jwksURL == "" && (cfg.Introspection == nil || introEndpoint == "") {
		dctx, cancel := context.WithTimeout(ctx, timeout)
		md, err := Discover(dctx, client, cfg.Issuer)
		cancel()
		if err != nil {
			return nil, err
		}
		v.metadata = md
		jwksURL = md.JWKSURI
		if introEndpoint == "" {
			introEndpoint = md.IntrospectionEndpoint
		}
	}
	if jwksURL == "" && cfg.Introspection == nil {
		return nil, fmt.Errorf("auth: issuer %s publishes no jwks_uri and no introspection is configured", cfg.Issuer)
	}

	v.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{"RS256", "ES256", "EdDSA"}), // never HS* or none
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithLeeway(v.leeway),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(v.now),
	)
	if jwksURL != "" {
		v.kidLimiter = rate.NewLimiter(rate.Every(kidInterval), 1)
		if err := v.openJWKS(ctx, jwksURL, client, timeout, orDefault(cfg.JWKSRefreshInterval, DefaultJWKSRefreshInterval)); err != nil {
			return nil, err
		}
	}
	if cfg.Introspection != nil {
		ic := *cfg.Introspection
		ic.Endpoint = introEndpoint
		in, err := NewIntrospector(ic, client, v.now)
		if err != nil {
			return nil, err
		}
		v.introspector = in
	}
	return v, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// openJWKS sets up the JWK Set storage: refreshed every refreshInterval in
// the background and, on a token with an unknown kid, at once but at most
// once per v.kidLimiter interval. A refresh that would have to wait for the
// limiter longer than timeout is not made (the token is rejected at once):
// jwkset waits on the limiter with a context whose deadline is timeout.
func (v *Validator) openJWKS(ctx context.Context, jwksURL string, client *http.Client, timeout, refreshInterval time.Duration) error {
	logErr := func(ctx context.Context, err error) {
		v.logger.WarnContext(ctx, "auth: JWKS refresh failed", "url", jwksURL, "error", err)
	}
	store, err := jwkset.NewStorageFromHTTP(jwksURL, jwkset.HTTPClientStorageOptions{
		Client:                    client,
		Ctx:                       ctx,
		HTTPTimeout:               timeout,
		NoErrorReturnFirstHTTPReq: true,
		RefreshErrorHandler:       logErr,
		RefreshInterval:           refreshInterval,
	})
	if err != nil {
		return fmt.Errorf("auth: JWKS %s: %w", jwksURL, err)
	}
	storage, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs:          map[string]jwkset.Storage{jwksURL: store},
		PrioritizeHTTP:    true, // the (empty) given storage is read last
		RateLimitWaitMax:  timeout,
		RefreshUnknownKID: v.kidLimiter,
	})
	if err != nil {
		return fmt.Errorf("auth: JWKS %s: %w", jwksURL, err)
	}
	v.keys, err = keyfunc.New(keyfunc.Options{
		Ctx:          ctx,
		Storage:      storage,
		UseWhitelist: []jwkset.USE{jwkset.UseSig, ""},
	})
	if err != nil {
		return fmt.Errorf("auth: JWKS %s: %w", jwksURL, err)
	}
	return nil
}

// Metadata returns the discovered authorization server metadata, or nil
// when nothing was discovered (JWKSURL and introspection were configured).
func (v *Validator) Metadata() *ServerMetadata { return v.metadata }

// Resource returns the canonical resource URL tokens must be issued for.
func (v *Validator) Resource() string { return v.resource }

// RequiredScopes returns the scopes every request needs.
func (v *Validator) RequiredScopes() []string { return slices.Clone(v.requiredScopes) }

// Validate validates token and returns its principal, with the token as
// Credential. See [Validator.ValidateToken].
func (v *Validator) Validate(ctx context.Context, token string) (mcp.Principal, error) {
	t, err := v.ValidateToken(ctx, token)
	if err != nil {
		return mcp.Principal{}, err
	}
	return t.Principal(), nil
}

// ValidateToken validates a bearer token: a JWT against the JWK Set when
// one is configured, otherwise (or for a token that is not a JWT) by
// introspection when configured. Errors: [ErrNoToken], errors wrapping
// [ErrInvalidToken] (401), [*InsufficientScopeError] when a
// Config.RequiredScopes scope is missing (403), [ErrUnavailable] when
// introspection could not be done (503). Errors never contain the token.
func (v *Validator) ValidateToken(ctx context.Context, token string) (*Token, error) {
	if token == "" {
		return nil, ErrNoToken
	}
	var (
		t   *Token
		err error
	)
	switch {
	case v.keys != nil && looksLikeJWT(token):
		t, err = v.validateJWT(ctx, token)
	case v.introspector != nil:
		t, err = v.validateIntrospected(ctx, token)
	default:
		err = fmt.Errorf("%w: not a JWT", ErrInvalidToken)
	}
	if err != nil {
		return nil, err
	}
	if missing := MissingScopes(t.Scopes, [][]string{v.requiredScopes}); missing != nil {
		return nil, &InsufficientScopeError{Missing: missing}
	}
	return t, nil
}

// looksLikeJWT reports whether s has the three dot-separated parts of a JWS
// compact serialization.
func looksLikeJWT(s string) bool {
	return strings.Count(s, ".") == 2
}

func (v *Validator) validateJWT(ctx context.Context, raw string) (*Token, error) {
	claims := jwt.MapClaims{}
	if _, err := v.parser.ParseWithClaims(raw, claims, v.keyfunc(ctx)); err != nil {
		if errors.Is(err, jwt.ErrTokenExpired) {
			return nil, fmt.Errorf("%w (%w)", ErrTokenExpired, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	aud, err := claims.GetAudience()
	if err != nil {
		return nil, fmt.Errorf("%w: aud: %w", ErrInvalidToken, err)
	}
	exp, err := claims.GetExpirationTime() // required and checked by the parser
	if err != nil || exp == nil {
		return nil, fmt.Errorf("%w: exp", ErrInvalidToken)
	}
	t := &Token{Issuer: v.issuer, Audiences: aud, ExpiresAt: exp.Time, raw: raw}
	if err := v.fill(t, claims); err != nil {
		return nil, err
	}
	return t, nil
}

// fill checks the audience and subject and reads scopes, tenant and client
// id from claims (a JWT payload or an introspection answer).
func (v *Validator) fill(t *Token, claims map[string]any) error {
	if !v.audienceOK(t.Audiences) {
		return fmt.Errorf("%w: audience does not name this resource", ErrInvalidToken)
	}
	sub, _ := claims["sub"].(string)
	if sub == "" {
		return fmt.Errorf("%w: no subject", ErrInvalidToken)
	}
	t.Subject, t.Claims = sub, claims
	var scopes []string
	for _, name := range v.scopeClaims {
		s, ok := parseScopeClaim(claims[name])
		if !ok {
			return fmt.Errorf("%w: claim %q is neither a string nor an array of strings", ErrInvalidToken, name)
		}
		scopes = append(scopes, s...)
	}
	t.Scopes = expandScopes(scopes, v.impliedScopes)
	if v.tenantClaim != "" {
		switch tenant := claims[v.tenantClaim].(type) {
		case nil:
		case string:
			t.Tenant = tenant
		default:
			return fmt.Errorf("%w: tenant claim %q is not a string", ErrInvalidToken, v.tenantClaim)
		}
	}
	if id, ok := claims["client_id"].(string); ok {
		t.ClientID = id
	} else if id, ok := claims["azp"].(string); ok {
		t.ClientID = id
	}
	return nil
}

// keyfunc wraps the JWK Set lookup with a check that the key's type fits
// the token's algorithm (an RSA key of at least 2048 bits for RS256, a
// P-256 key for ES256, an Ed25519 key for EdDSA).
func (v *Validator) keyfunc(ctx context.Context) jwt.Keyfunc {
	inner := v.keys.KeyfuncCtx(ctx)
	return func(t *jwt.Token) (any, error) {
		k, err := inner(t)
		if err != nil {
			return nil, err
		}
		alg := t.Method.Alg()
		if set, ok := k.(jwt.VerificationKeySet); ok {
			set.Keys = slices.DeleteFunc(set.Keys, func(k jwt.VerificationKey) bool { return !keyFits(alg, k) })
			return set, nil
		}
		if !keyFits(alg, k) {
			return nil, fmt.Errorf("a %T key does not fit alg %s", k, alg)
		}
		return k, nil
	}
}

func keyFits(alg string, k any) bool {
	switch alg {
	case "RS256":
		rk, ok := k.(*rsa.PublicKey)
		return ok && rk.N.BitLen() >= 2048
	case "ES256":
		ek, ok := k.(*ecdsa.PublicKey)
		return ok && ek.Curve == elliptic.P256()
	case "EdDSA":
		_, ok := k.(ed25519.PublicKey)
		return ok
	}
	return false
}

func (v *Validator) audienceOK(aud []string) bool {
	for _, a := range aud {
		if slices.Contains(v.audiences, a) || slices.Contains(v.audiences, canonicalAudience(a)) {
			return true
		}
	}
	return false
}

// canonicalAudience normalizes an absolute URL for comparison: lower-case
// scheme and host, no default port, no trailing slash. Other strings are
// compared as they are.
func canonicalAudience(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return s
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	if port := u.Port(); (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		u.Host = u.Hostname()
		if strings.Contains(u.Host, ":") {
			u.Host = "[" + u.Host + "]"
		}
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	return u.String()
}

// CanonicalResource checks and normalizes a canonical resource URL (MCP
// authorization §5): an absolute https URL (http only for loopback hosts),
// without fragment, user info or query; scheme and host lower-cased, no
// default port and no trailing slash.
func CanonicalResource(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("auth: resource %q: %w", s, err)
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case u.Host == "" || u.Opaque != "":
		return "", fmt.Errorf("auth: resource %q is not an absolute URL", s)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return "", fmt.Errorf("auth: resource %q has a fragment", s)
	case u.User != nil || u.RawQuery != "":
		return "", fmt.Errorf("auth: resource %q has user info or a query", s)
	case scheme == "https":
	case scheme == "http" && isLoopback(u.Hostname()):
	default:
		return "", fmt.Errorf("auth: resource %q must be an https URL", s)
	}
	return canonicalAudience(s), nil
}

func isLoopback(host string) bool {
	switch strings.ToLower(host) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return strings.HasPrefix(host, "127.")
}

func defaultClient() *http.Client { return &http.Client{Timeout: DefaultFetchTimeout} }
