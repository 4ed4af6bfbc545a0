package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/mcp"
)

// credentials decides which credential of the caller's goes to one API:
// the one place that decides it, for every kind of tool (ordinary and task
// tools, direct calls and calls through discovery).
//
//   - passthrough without auth mode oauth: the caller's bearer as it came;
//   - passthrough with auth mode oauth: the caller's validated token, only
//     when its audience covers this API;
//   - exchange: a token issued to this API for the caller (RFC 8693);
//   - static and none: nothing of the caller's (the proxy puts the API's own
//     secrets on, or nothing).
type credentials struct {
	mode    string
	forward *auth.Forwarding // auth mode oauth, passthrough or exchange
}

// errCredential is a credential that cannot be had: it becomes a tool error
// whose text is the message (the same for every kind of call).
type errCredential struct{ msg string }

func (e *errCredential) Error() string { return e.msg }

// bind returns ctx carrying the principal whose credential the proxy sends
// to this API. The caller's own credential, unchanged, when nothing has to
// be checked or exchanged.
func (c *credentials) bind(ctx context.Context) (context.Context, error) {
	if c == nil || c.forward == nil {
		return ctx, nil
	}
	bound, err := c.forward.Bind(ctx)
	switch {
	case errors.Is(err, auth.ErrAudienceMismatch):
		return ctx, &errCredential{"Your token was not issued for this API, so it cannot be forwarded (its audience does not cover the upstream). " +
			"Ask for a token whose audience includes the API, or configure token exchange."}
	case err != nil:
		return ctx, &errCredential{"Could not obtain a credential for the API: " + err.Error()}
	}
	return bound, nil
}

// needsCallerCredential reports whether calls need the caller's own
// credential (so a task must keep it for its worker).
func (c *credentials) needsCallerCredential() bool {
	return c.mode == "passthrough" || c.mode == "exchange"
}

// toolError turns an errCredential into the tool result that tells the
// agent; any other error stays an error.
func toolError(err error) (*mcp.CallToolResult, error) {
	var ce *errCredential
	if errors.As(err, &ce) {
		return mcp.ToolError(ce.msg), nil
	}
	return nil, err
}

// bindTool wraps a tool handler so that its calls carry the credential c
// decides.
func (c *credentials) bindTool(next mcp.ToolHandler) mcp.ToolHandler {
	if c == nil || c.forward == nil {
		return next
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, err := c.bind(ctx)
		if err != nil {
			return toolError(err)
		}
		return next(ctx, req)
	}
}

// newCredentials builds an API's credential decision; with auth mode oauth
// it needs the validator's setup (issuer, exchange).
func (g *Gateway) newCredentials(ctx context.Context, a *api) (*credentials, error) {
	c := &credentials{mode: a.cfg.Credentials.Mode}
	if g.cfg.Auth.Mode != "oauth" {
		return c, nil
	}
	upstream := a.base
	switch c.mode {
	case "passthrough":
		c.forward = &auth.Forwarding{Mode: auth.ModePassthrough, Upstream: upstream, UpstreamAudiences: a.cfg.Credentials.UpstreamAudiences}
	case "exchange":
		ex := a.cfg.Credentials.Exchange
		secret, err := secretValue(ex.ClientSecret)
		if err != nil {
			return nil, fmt.Errorf("credentials exchange of %s: %w", a.cfg.label(), err)
		}
		var exchanger *auth.Exchanger
		err = retryUnreachable(ctx, g.logger, "token exchange at "+g.cfg.Auth.Issuer, g.cfg.Auth.StartupTimeout, func() (err error) {
			exchanger, err = auth.NewExchanger(ctx, auth.ExchangeConfig{
				TokenEndpoint: ex.TokenEndpoint, Issuer: g.cfg.Auth.Issuer, ClientID: ex.ClientID, ClientSecret: secret, Scope: ex.Scope,
			})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("credentials exchange of %s: %w", a.cfg.label(), err)
		}
		c.forward = &auth.Forwarding{Mode: auth.ModeExchange, Upstream: upstream, Exchanger: exchanger, Audience: ex.Audience}
	}
	return c, nil
}
