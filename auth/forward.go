package auth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"

	"github.com/mcpgate/mcpgate/mcp"
)

// CredentialMode says how the caller's credential reaches one upstream.
type CredentialMode string

// Credential modes.
const (
	// ModePassthrough forwards the caller's token as it is, only when its
	// audience covers the upstream.
	ModePassthrough CredentialMode = "passthrough"
	// ModeExchange forwards a token obtained by RFC 8693 exchange for the
	// upstream's audience.
	ModeExchange CredentialMode = "exchange"
	// ModeStatic forwards none of the caller's credentials; package proxy
	// applies configured secrets.
	ModeStatic CredentialMode = "static"
)

// ErrAudienceMismatch: passthrough refused because the token was not
// issued for the upstream.
var ErrAudienceMismatch = errors.New("auth: the token's audience does not cover the upstream")

// PassthroughAllowed reports (nil) whether a token with audiences aud may
// be forwarded as it is to upstream: some audience must equal upstream's
// URL or its origin, or one of upstreamAudiences (configured names of the
// upstream, such as "api://billing"). URLs compare with scheme and host
// case, a default port and a trailing slash ignored.
func PassthroughAllowed(aud []string, upstream *url.URL, upstreamAudiences ...string) error {
	if upstream == nil || upstream.Host == "" {
		return fmt.Errorf("%w: no upstream URL", ErrAudienceMismatch)
	}
	accept := []string{
		canonicalAudience(upstream.String()),
		canonicalAudience(upstream.Scheme + "://" + upstream.Host),
	}
	for _, a := range upstreamAudiences {
		accept = append(accept, canonicalAudience(a))
	}
	for _, a := range aud {
		if slices.Contains(accept, canonicalAudience(a)) {
			return nil
		}
	}
	return fmt.Errorf("%w %s", ErrAudienceMismatch, upstream.Scheme+"://"+upstream.Host)
}

// Forwarding is the credential policy for one upstream.
type Forwarding struct {
	Mode CredentialMode
	// Upstream is the upstream's base URL.
	Upstream *url.URL
	// UpstreamAudiences (passthrough) are further audience values that
	// identify the upstream.
	UpstreamAudiences []string
	// Exchanger and Audience (exchange): the audience to request, default
	// the upstream's base URL.
	Exchanger *Exchanger
	Audience  string
}

// Credential returns what to forward to the upstream for token t: t's own
// credential (passthrough, audience checked), an exchanged token
// (exchange), or "" (static, or no token).
func (f *Forwarding) Credential(ctx context.Context, t *Token) (string, error) {
	switch f.Mode {
	case ModeStatic:
		return "", nil
	case ModePassthrough, ModeExchange:
	default:
		return "", fmt.Errorf("auth: unknown credential mode %q", f.Mode)
	}
	if t == nil {
		return "", nil
	}
	if f.Mode == ModePassthrough {
		if err := PassthroughAllowed(t.Audiences, f.Upstream, f.UpstreamAudiences...); err != nil {
			return "", err
		}
		return t.raw, nil
	}
	if f.Exchanger == nil {
		return "", fmt.Errorf("%w: no exchanger configured", ErrExchange)
	}
	aud := f.Audience
	if aud == "" {
		if f.Upstream == nil {
			return "", fmt.Errorf("%w: no upstream URL", ErrExchange)
		}
		aud = canonicalAudience(f.Upstream.String())
	}
	return f.Exchanger.Exchange(ctx, t.raw, aud)
}

// Bind returns ctx with the principal's Credential replaced by what
// [Forwarding.Credential] yields for the validated token in ctx
// ([TokenFrom]); call it in the tool-call path just before dispatching to
// the upstream. Without a validated token the Credential is cleared, so a
// credential that was not validated here is never forwarded.
func (f *Forwarding) Bind(ctx context.Context) (context.Context, error) {
	p := mcp.PrincipalFrom(ctx)
	t, _ := TokenFrom(ctx)
	cred, err := f.Credential(ctx, t)
	if err != nil {
		return ctx, err
	}
	p.Credential = mcp.NewSecret(cred)
	return mcp.WithPrincipal(ctx, p), nil
}
