package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/mcp"
)

// Errors returned by validation. Every rejection of a presented token wraps
// ErrInvalidToken (HTTP 401); a grant without a required scope is an
// [*InsufficientScopeError] (HTTP 403).
var (
	// ErrNoToken: the request carried no bearer token.
	ErrNoToken = errors.New("auth: no bearer token")
	// ErrInvalidToken: the token is malformed, unverifiable, revoked, for
	// another audience or issuer, or outside its validity period.
	ErrInvalidToken = errors.New("auth: invalid token")
	// ErrTokenExpired: the token expired (beyond the leeway). It wraps
	// ErrInvalidToken.
	ErrTokenExpired = fmt.Errorf("%w: expired", ErrInvalidToken)
	// ErrInvalidRequest: the request carried the token in a malformed way
	// (several Authorization headers, a token in the query string). HTTP 400.
	ErrInvalidRequest = errors.New("auth: invalid request")
	// ErrUnavailable: the authorization server could not be asked (for
	// example the introspection endpoint failed). HTTP 503; the token was
	// not judged.
	ErrUnavailable = errors.New("auth: authorization server unavailable")
)

// InsufficientScopeError reports that a valid token lacks scopes. Missing
// lists every scope still needed (one challenge names them all).
type InsufficientScopeError struct {
	Missing []string
}

func (e *InsufficientScopeError) Error() string {
	return "auth: insufficient scope: missing " + strings.Join(e.Missing, " ")
}

// Token is a validated access token. Its raw form is only reachable through
// [Token.Credential]; formatting or logging a Token never shows it.
type Token struct {
	// Subject is the sub claim (required).
	Subject string
	// Tenant is the configured tenant claim, if present.
	Tenant string
	// Issuer is the iss claim.
	Issuer string
	// ClientID is the client_id (or azp) claim, if present.
	ClientID string
	// Audiences is the aud claim.
	Audiences []string
	// Scopes are the granted scopes, including scopes implied by
	// [Config.ImpliedScopes], sorted and without duplicates.
	Scopes []string
	// ExpiresAt is the exp claim (zero when an introspection answer had
	// none).
	ExpiresAt time.Time
	// Claims are all the token's claims (a JWT's payload, an introspection
	// answer), for rules that read them; read-only.
	Claims map[string]any

	raw string
}

// Credential returns the token as presented: the credential to forward when
// passthrough is allowed. Never log it.
func (t *Token) Credential() string { return t.raw }

// Principal returns the caller as package mcp sees it, with the presented
// token as Credential.
func (t *Token) Principal() mcp.Principal {
	return mcp.Principal{
		Subject:    t.Subject,
		Tenant:     t.Tenant,
		Scopes:     slices.Clone(t.Scopes),
		Claims:     t.Claims,
		Credential: mcp.NewSecret(t.raw),
	}
}

// String describes the token without its raw form.
func (t Token) String() string {
	return fmt.Sprintf("token(sub=%q tenant=%q iss=%q aud=%q scopes=%q exp=%s; credential redacted)",
		t.Subject, t.Tenant, t.Issuer, t.Audiences, t.Scopes, t.ExpiresAt.UTC().Format(time.RFC3339))
}

// GoString is String, so %#v does not print the raw token either.
func (t Token) GoString() string { return t.String() }

// LogValue logs the token's identity, never its raw form.
func (t Token) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("sub", t.Subject),
		slog.String("tenant", t.Tenant),
		slog.String("iss", t.Issuer),
		slog.Any("aud", t.Audiences),
		slog.Any("scopes", t.Scopes),
	)
}

type tokenKey struct{}

// WithToken returns a context carrying the validated token; [Middleware]
// sets it next to the principal.
func WithToken(ctx context.Context, t *Token) context.Context {
	return context.WithValue(ctx, tokenKey{}, t)
}

// TokenFrom returns the validated token in ctx, if any.
func TokenFrom(ctx context.Context) (*Token, bool) {
	t, ok := ctx.Value(tokenKey{}).(*Token)
	return t, ok && t != nil
}
