package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
)

// oauth is the resource-server side of the gateway (auth mode oauth).
type oauth struct {
	validator  *auth.Validator
	meta       *auth.ResourceMetadata
	toolScopes map[string][][]string // tool name → alternative scope sets
	forwarding *auth.Forwarding      // nil in static and none modes
}

// setupOAuth builds the validator, the RFC 9728 metadata, the per-tool
// scopes and the credential forwarding of auth mode oauth.
func (g *Gateway) setupOAuth(ctx context.Context, res *openapi.Result, upstream *url.URL) (*oauth, error) {
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
	for _, t := range res.Tools {
		req := auth.RequiredScopes(t.Route, res.SecuritySchemes)
		if override, ok := a.ToolScopes[t.Name]; ok {
			req = [][]string{override}
		}
		o.toolScopes[t.Name] = req
		for _, alt := range req {
			for _, s := range alt {
				scopes[s] = true
			}
		}
	}
	o.meta = &auth.ResourceMetadata{Resource: v.Resource(), AuthorizationServers: []string{a.Issuer}, ScopesSupported: sortedKeys(scopes)}
	switch g.cfg.Credentials.Mode {
	case "passthrough":
		o.forwarding = &auth.Forwarding{Mode: auth.ModePassthrough, Upstream: upstream, UpstreamAudiences: g.cfg.Credentials.UpstreamAudiences}
	case "exchange":
		ex := g.cfg.Credentials.Exchange
		secret, err := secretValue(ex.ClientSecret)
		if err != nil {
			return nil, fmt.Errorf("credentials exchange: %w", err)
		}
		var exchanger *auth.Exchanger
		err = retryUnreachable(ctx, g.logger, "token exchange at "+a.Issuer, a.StartupTimeout, func() (err error) {
			exchanger, err = auth.NewExchanger(ctx, auth.ExchangeConfig{
				TokenEndpoint: ex.TokenEndpoint, Issuer: a.Issuer, ClientID: ex.ClientID, ClientSecret: secret, Scope: ex.Scope,
			})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("credentials exchange: %w", err)
		}
		o.forwarding = &auth.Forwarding{Mode: auth.ModeExchange, Upstream: upstream, Exchanger: exchanger, Audience: ex.Audience}
	}
	return o, nil
}

// allows reports whether a caller's scopes allow a tool.
func (o *oauth) allows(p mcp.Principal, tool string) bool {
	return auth.Allowed(p.Scopes, o.toolScopes[tool])
}

// bind puts the credential for the upstream into the tool call's context:
// the caller's token only when its audience covers the upstream, or one
// exchanged for the upstream.
func (o *oauth) bind(next mcp.ToolHandler) mcp.ToolHandler {
	if o == nil || o.forwarding == nil {
		return next
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, err := o.forwarding.Bind(ctx)
		if errors.Is(err, auth.ErrAudienceMismatch) {
			return mcp.ToolError("Your token was not issued for this API, so it cannot be forwarded (its audience does not cover the upstream). Ask for a token whose audience includes the API, or configure token exchange."), nil
		}
		if err != nil {
			return mcp.ToolError("Could not obtain a credential for the API: " + err.Error()), nil
		}
		return next(ctx, req)
	}
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
