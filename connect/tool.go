package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
)

// inputKey is the key of the connect elicitation in inputRequests.
const inputKey = "connect"

// pause is the continuation of a round that asked the user to connect.
type pause struct {
	Connect string `json:"connect"` // the API
}

// call is what the decorator puts in a tool call's context: the token of
// one API and whether the upstream refused it.
type call struct {
	token   string
	refused atomic.Bool
}

type callKey struct{ api string }

// anyCallKey finds the call of whatever API a request belongs to (for the
// Transport, which serves every API).
type anyCallKey struct{}

// Decorator returns the tool decorator of api: wrap every tool of that API
// with it (outermost, before any confirmation step). A call by a caller
// with a grant runs the tool with the access token in its context (sent by
// [Connector.AuthResolver]); a caller without one is asked to connect with
// a URL-mode elicitation of the API's connect link, and the retry runs the
// tool once the grant is stored. The wrapped tool never sees the connect
// round: on the retry after it, its request has Round 0 and no input
// responses, so an answer the client slipped in cannot pass for an answer
// to a question the tool asks later.
func (c *Connector) Decorator(api string) (func(next mcp.ToolHandler) mcp.ToolHandler, error) {
	p := c.providers[api]
	if p == nil {
		return nil, fmt.Errorf("connect: API %s is not configured", api)
	}
	return func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			who := req.Principal
			if who.Subject == "" {
				return mcp.ToolError("This tool acts with your own " + p.title() + " account, and this call has no authenticated caller to keep that account for. Sign in to the gateway (send your token) and call it again."), nil
			}
			k := keyFor(api, who.Tenant, who.Subject)
			resumed := false
			if req.Round > 0 {
				st, err := mcp.ContinuationAs[pause](req.Request)
				resumed = err == nil && st.Connect == api
			}
			token, err := c.accessToken(ctx, p, k)
			if errors.Is(err, ErrNoGrant) {
				return c.ask(p, k, req, resumed)
			}
			if err != nil {
				c.opts.Logger.Error("connect: reading a grant failed", "api", api, "subject", k.Subject, "error", err)
				return mcp.ToolError("The gateway could not use your " + p.title() + " authorization right now; try again later."), nil
			}
			if resumed {
				req = fresh(req)
			}
			cl := &call{token: token}
			res, err := next(withCall(ctx, api, cl), req)
			if cl.refused.Load() {
				return c.refused(ctx, p, k, req, token, res, err)
			}
			return res, err
		}
	}, nil
}

// refused follows up a call whose upstream answered 401 to the user's
// token: renewed, the call's result says to call again; not renewable, the
// grant is dropped and the user asked to connect again (the upstream did
// not act on a request it refused).
func (c *Connector) refused(ctx context.Context, p *provider, k Key, req *mcp.CallToolRequest, token string, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	_, rerr := c.renew(ctx, p, k, token)
	switch {
	case errors.Is(rerr, ErrNoGrant):
		return c.ask(p, k, req, false)
	case rerr != nil:
		c.opts.Logger.Warn("connect: renewing a refused token failed", "api", p.API, "subject", k.Subject, "error", rerr)
	case res != nil:
		res.Content = append(res.Content, mcp.TextContent("The "+p.title()+" authorization was refused by the API and has been renewed: call the tool again."))
	}
	return res, err
}

// ask answers a call without a grant: a URL elicitation of a new connect
// link, or, for a client without URL mode, a tool error telling where to
// connect.
func (c *Connector) ask(p *provider, k Key, req *mcp.CallToolRequest, resumed bool) (*mcp.CallToolResult, error) {
	if resumed {
		if ans, ok := req.Elicitation(inputKey); ok && ans.Action != "accept" {
			return mcp.ToolError("You did not connect your " + p.title() + " account, so the call was not made."), nil
		}
	}
	href, code, err := c.newLink(p, k)
	if err != nil {
		return nil, fmt.Errorf("connect: make a link: %w", err)
	}
	minutes := int(c.opts.LinkTTL.Minutes())
	steps := fmt.Sprintf("enter the code %s and sign in at %s (within %d minutes)", code, p.title(), minutes)
	if c.opts.Login != nil {
		steps = fmt.Sprintf("sign in to the gateway and then at %s (within %d minutes)", p.title(), minutes)
	}
	if e := req.Capabilities.Elicitation; e == nil || e.URL == nil {
		return mcp.ToolError(fmt.Sprintf("This tool needs access to your %s account, and this client cannot open a link for the gateway (it has no URL-mode elicitation). "+
			"Open %s in your browser, %s, then call the tool again.", p.title(), href, steps)), nil
	}
	msg := fmt.Sprintf("Connect your %s account to continue: open the link, %s.", p.title(), steps)
	return nil, mcp.RequireInput(map[string]mcp.InputRequest{inputKey: mcp.ElicitURL(msg, href)}, pause{Connect: p.API})
}

// fresh is req as the wrapped tool sees it after the connect round: a
// first round with no input responses.
func fresh(req *mcp.CallToolRequest) *mcp.CallToolRequest {
	r := *req.Request
	r.Round, r.InputResponses = 0, nil
	return &mcp.CallToolRequest{Request: &r, Name: req.Name, Arguments: req.Arguments}
}

// TokenFrom returns the access token the decorator of api put in ctx.
func TokenFrom(ctx context.Context, api string) (string, bool) {
	cl, ok := ctx.Value(callKey{api}).(*call)
	if !ok || cl.token == "" {
		return "", false
	}
	return cl.token, true
}

// Transport wraps the transport of the upstream HTTP client (nil:
// http.DefaultTransport). When an upstream answers 401 to a request that
// carried a connected user's token, the decorator of that call renews the
// grant, or drops it and asks the user to connect again: a token the user
// revoked at the API is noticed at its first refusal, not at its expiry
// (some APIs' tokens never expire).
func (c *Connector) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return transport{base}
}

type transport struct{ base http.RoundTripper }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		if cl, ok := req.Context().Value(anyCallKey{}).(*call); ok && req.Header.Get("Authorization") == "Bearer "+cl.token {
			cl.refused.Store(true)
		}
	}
	return resp, err
}

// AuthResolver puts the caller's access token for one API on upstream
// requests; it implements proxy.AuthResolver.
type AuthResolver struct{ api string }

// AuthResolver returns the resolver of api for the proxy: it sends the
// token the decorator found as "Authorization: Bearer …". A call that did
// not pass through the decorator fails rather than go out without it.
func (c *Connector) AuthResolver(api string) AuthResolver { return AuthResolver{api: api} }

// Apply implements proxy.AuthResolver.
func (a AuthResolver) Apply(ctx context.Context, req *http.Request, _ *openapi.Route) error {
	tok, ok := TokenFrom(ctx, a.api)
	if !ok {
		return fmt.Errorf("no %s authorization in this call (the tool is not wrapped with the connect decorator)", a.api)
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < 0x20 || tok[i] > 0x7e {
			return fmt.Errorf("the %s access token is not a valid header value", a.api)
		}
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return nil
}

// DisconnectTool returns a tool for the user to disconnect their api
// account: it deletes the caller's grant and revokes it upstream when the
// API has a revocation endpoint. Register it next to the API's tools.
func (c *Connector) DisconnectTool(api string) (*mcp.Tool, mcp.ToolHandler, error) {
	p := c.providers[api]
	if p == nil {
		return nil, nil, fmt.Errorf("connect: API %s is not configured", api)
	}
	yes, no := true, false
	tool := &mcp.Tool{
		Name:        "disconnect_" + api,
		Title:       "Disconnect " + p.title(),
		Description: "Disconnect your " + p.title() + " account from this gateway: its stored authorization is deleted (and revoked at " + p.title() + " when possible). The next " + p.title() + " tool call asks you to connect again.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: &no, DestructiveHint: &yes, IdempotentHint: &yes, OpenWorldHint: &no},
	}
	handler := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		who := req.Principal
		if who.Subject == "" {
			return mcp.ToolError("This call has no authenticated caller, so there is no account to disconnect."), nil
		}
		had, err := c.Revoke(ctx, keyFor(api, who.Tenant, who.Subject))
		if err != nil {
			c.opts.Logger.Error("connect: revoking a grant failed", "api", api, "subject", who.Subject, "error", err)
			return mcp.ToolError("The gateway could not disconnect your " + p.title() + " account right now; try again later."), nil
		}
		if !had {
			return mcp.TextResult("No " + p.title() + " account was connected."), nil
		}
		return mcp.TextResult("Your " + p.title() + " account is disconnected."), nil
	}
	return tool, handler, nil
}

// WithToken returns ctx carrying p's access token for api (refreshed when
// due), for upstream calls made outside a tools/call handler, such as a
// task's worker (which may run on another replica, after the call
// returned): [Connector.AuthResolver] and [Connector.Transport] then work as
// in a decorated tool. It returns ErrNoGrant when p has no grant, or an
// anonymous p.
func (c *Connector) WithToken(ctx context.Context, api string, p mcp.Principal) (context.Context, error) {
	prov := c.providers[api]
	if prov == nil {
		return ctx, fmt.Errorf("connect: API %s is not configured", api)
	}
	if p.Subject == "" {
		return ctx, ErrNoGrant
	}
	token, err := c.accessToken(ctx, prov, keyFor(api, p.Tenant, p.Subject))
	if err != nil {
		return ctx, err
	}
	return withCall(ctx, api, &call{token: token}), nil
}

func withCall(ctx context.Context, api string, cl *call) context.Context {
	return context.WithValue(context.WithValue(ctx, callKey{api}, cl), anyCallKey{}, cl)
}
