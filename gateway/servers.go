package gateway

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/mcpgate/mcpgate/openapi"
	"github.com/mcpgate/mcpgate/proxy"
)

// An operation may name servers of its own, which replace the document's
// for it: GitHub uploads release assets to https://uploads.github.com,
// Stripe takes files at https://files.stripe.com. A call carries the
// caller's credentials, so it goes to such a server only when the
// operator allowed its origin (operation_servers), or when it is on the
// upstream's own origin with another path; every other operation is called
// on the upstream, as if it named no server, and the load says so once.
// Each allowed server gets a proxy of its own, so that each proxy keeps
// its invariant: its credentials reach its one origin and no other.

// originSetting parses an operation_servers entry: an origin,
// scheme://host[:port], http or https.
func originSetting(s string) (string, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", err
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return "", errors.New("want an http(s) origin, scheme://host[:port]")
	case u.User != nil || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "":
		return "", errors.New("want an origin only, scheme://host[:port], without user, path or query")
	}
	return proxy.Origin(u), nil
}

// operationServer is the server a tool's calls go to instead of the
// upstream, if any: the first of its operation's servers that is an
// absolute URL without variables on an allowed origin. listed reports
// whether the operation named any server.
func operationServer(t *openapi.Tool, upstream *url.URL, allowed map[string]bool) (server *url.URL, listed bool) {
	for _, s := range t.Route.Servers {
		if strings.ContainsAny(s, "{}") {
			continue
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			continue
		}
		u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
		o := proxy.Origin(u)
		if o == proxy.Origin(upstream) {
			if strings.TrimSuffix(u.EscapedPath(), "/") == strings.TrimSuffix(upstream.EscapedPath(), "/") {
				return nil, true // the upstream itself
			}
			return u, true
		}
		if allowed[o] {
			return u, true
		}
	}
	return nil, len(t.Route.Servers) > 0
}

// buildServerProxies gives each tool whose operation names an allowed
// server a proxy for that server (one per server URL, configured as the
// API's own proxy but for its base URL), and warns once about the
// operations whose servers are not allowed.
func (g *Gateway) buildServerProxies(a *api, pc proxy.Config) error {
	allowed := map[string]bool{}
	for i, s := range a.cfg.OperationServers {
		o, err := originSetting(s)
		if err != nil {
			return fmt.Errorf("operation_servers[%d] %q: %w", i, s, err)
		}
		allowed[o] = true
	}
	a.servers = nil
	byURL := map[string]*proxy.Proxy{}
	ignored, first := 0, ""
	for i := range a.tools {
		t := &a.tools[i]
		u, listed := operationServer(t, a.base, allowed)
		if u == nil {
			if listed && !sameOriginServers(t, a.base) {
				if ignored++; first == "" {
					first = t.Name + " (" + strings.Join(t.Route.Servers, " ") + ")"
				}
			}
			continue
		}
		p := byURL[u.String()]
		if p == nil {
			c := pc
			c.BaseURL = u
			var err error
			if p, err = proxy.New(c); err != nil {
				return fmt.Errorf("the server %s of %s: %w", u.Redacted(), t.Name, err)
			}
			byURL[u.String()] = p
		}
		if a.servers == nil {
			a.servers = map[string]*proxy.Proxy{}
		}
		a.servers[t.Name] = p
	}
	if ignored > 0 {
		g.logger.Warn("operations name servers of their own on origins operation_servers does not allow: they are called on the upstream",
			"api", a.cfg.label(), "operations", ignored, "first", first)
	}
	return nil
}

// sameOriginServers reports whether every server t's operation names is
// unusable or on the upstream's origin (nothing the operator could allow).
func sameOriginServers(t *openapi.Tool, upstream *url.URL) bool {
	for _, s := range t.Route.Servers {
		u, err := url.Parse(s)
		if err == nil && u.Host != "" && !strings.ContainsAny(s, "{}") && proxy.Origin(u) != proxy.Origin(upstream) {
			return false
		}
	}
	return true
}

// proxyFor is the proxy that calls t: its server's, or the API's.
func (a *api) proxyFor(t *openapi.Tool) *proxy.Proxy {
	if p := a.servers[t.Name]; p != nil {
		return p
	}
	return a.proxy
}
