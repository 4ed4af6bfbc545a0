package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/mcp"
)

// oauth is the resource-server side of the gateway (auth mode oauth).
type oauth struct {
	validator  *auth.Validator
	meta       *auth.ResourceMetadata
	toolScopes map[string][][]string // tool name (as served) → alternative scope sets
}

// setupOAuth builds the validator, the RFC 9728 metadata and the per-tool
// scopes of auth mode oauth. (Which credential each API gets is the APIs'
// own decision: credentials.go.)
func (g *Gateway) setupOAuth(ctx context.Context) (*oauth, error) {
	a := g.cfg.Auth
	if a.Mode != "oauth" {
		return nil, nil
	}
	vc := auth.Config{
		Issuer: a.Issuer, Resource: a.Resource, Audiences: a.Audiences, JWKSURL: a.JWKSURL,
		RequiredScopes: a.RequiredScopes, TenantClaim: a.TenantClaim, Logger: g.logger,
	}
	if in := a.Introspection; in.Endpoint != "" {
		secret, err := secretValue(in.ClientSecret)
		if err != nil {
			return nil, fmt.Errorf("auth introspection: %w", err)
		}
		vc.Introspection = &auth.IntrospectionConfig{Endpoint: in.Endpoint, ClientID: in.ClientID, ClientSecret: secret}
	}
	var v *auth.Validator
	err := retryUnreachable(ctx, g.logger, "issuer "+a.Issuer, a.StartupTimeout, func() (err error) {
		v, err = auth.NewValidator(ctx, vc)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	o := &oauth{validator: v, toolScopes: map[string][][]string{}}
	scopes := map[string]bool{}
	for _, api := range g.apis {
		for _, t := range api.tools {
			req := auth.RequiredScopes(t.Route, api.result.SecuritySchemes)
			if api.cfg.Credentials.Mode == "oauth" {
				// The document's scopes are those of the user's own grant
				// at the API (package connect), not of the MCP token.
				req = nil
			}
			if override, ok := a.ToolScopes[t.Name]; ok {
				req = [][]string{override}
			}
			req = withScopes(req, api.cfg.Scopes)
			o.toolScopes[t.Name] = req
			for _, alt := range req {
				for _, s := range alt {
					scopes[s] = true
				}
			}
		}
	}
	o.meta = &auth.ResourceMetadata{Resource: v.Resource(), AuthorizationServers: []string{a.Issuer}, ScopesSupported: sortedKeys(scopes)}
	return o, nil
}

// withScopes adds the scopes every alternative needs (an API's own).
func withScopes(alts [][]string, need []string) [][]string {
	if len(need) == 0 {
		return alts
	}
	if len(alts) == 0 {
		return [][]string{slices.Clone(need)}
	}
	out := make([][]string, len(alts))
	for i, alt := range alts {
		out[i] = append(slices.Clone(alt), need...)
	}
	return out
}

// allows reports whether a caller's scopes allow a tool.
func (o *oauth) allows(p mcp.Principal, tool string) bool {
	return auth.Allowed(p.Scopes, o.toolScopes[tool])
}

// wrap puts the token validation in front of the MCP handler and serves
// the protected resource metadata.
func (o *oauth) wrap(mux *http.ServeMux, path string, h http.Handler) (http.Handler, error) {
	if err := o.meta.Register(mux); err != nil {
		return nil, err
	}
	return auth.Middleware(o.validator, o.meta)(h), nil
}

// retryUnreachable runs fn until it succeeds, fails for a reason other than
// an unreachable peer, or timeout has passed, waiting longer between tries
// (200 ms doubling to 5 s). Identity providers often start beside the
// gateway; a negative timeout tries once.
func retryUnreachable(ctx context.Context, logger *slog.Logger, what string, timeout time.Duration, fn func() error) error {
	deadline := time.Now().Add(timeout)
	wait := 200 * time.Millisecond
	for {
		err := fn()
		var ne net.Error
		left := time.Until(deadline)
		if err == nil || !errors.As(err, &ne) || left <= 0 {
			return err
		}
		wait = min(wait, left)
		logger.Warn("unreachable at start; retrying", "what", what, "in", wait, "err", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up: %w)", err, context.Cause(ctx))
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// secretValue resolves "env:NAME".
func secretValue(v string) (string, error) {
	if name, ok := strings.CutPrefix(v, "env:"); ok {
		s, found := os.LookupEnv(name)
		if !found {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		return s, nil
	}
	return v, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
