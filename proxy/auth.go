package proxy

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
)

// AuthResolver puts credentials on an upstream request. Apply is called
// once per tool call, after every argument has been placed and just before
// the request is sent; req.URL is already the final upstream URL (same
// origin as Config.BaseURL). It may set headers, cookies or query
// parameters. It is called again on each followed (same-origin) redirect,
// whose request already carries the headers net/http copied, so it must be
// idempotent (set, not append, or check first). An error becomes a tool error "Authentication failed: …", so
// it must not contain the secret.
//
// The OAuth resource-server mode (validating the incoming token's audience,
// RFC 8693 exchange) lives in front of the MCP transport or in another
// resolver implementing this interface; this package only forwards.
type AuthResolver interface {
	Apply(ctx context.Context, req *http.Request, route *openapi.Route) error
}

// AuthFunc adapts a function to [AuthResolver].
type AuthFunc func(ctx context.Context, req *http.Request, route *openapi.Route) error

// Apply calls f.
func (f AuthFunc) Apply(ctx context.Context, req *http.Request, route *openapi.Route) error {
	return f(ctx, req, route)
}

// None sends no credentials.
func None() AuthResolver { return noneResolver{} }

type noneResolver struct{}

func (noneResolver) Apply(context.Context, *http.Request, *openapi.Route) error { return nil }

// Passthrough forwards the caller's own credential: the Credential of
// [mcp.PrincipalFrom](ctx) (the incoming bearer token) is sent verbatim as
// "Authorization: Bearer <credential>" on every call (whatever the route's
// declared security; the upstream decides), and only ever to the configured
// upstream origin. An anonymous caller sends nothing. It is the default
// resolver. Checking that the token's audience covers the upstream (or
// exchanging it, RFC 8693) belongs to the transport's auth layer or to
// another resolver.
func Passthrough() AuthResolver { return passthrough{} }

type passthrough struct{}

func (passthrough) Apply(ctx context.Context, req *http.Request, _ *openapi.Route) error {
	cred := mcp.PrincipalFrom(ctx).Credential.Reveal()
	if cred == "" {
		return nil
	}
	if !validHeaderValue(cred) {
		return errors.New("the caller's credential is not a valid header value")
	}
	req.Header.Set("Authorization", "Bearer "+cred)
	return nil
}

// Chain applies resolvers in order; a later one overrides what an earlier
// one set under the same header name. The first error stops the chain.
func Chain(rs ...AuthResolver) AuthResolver {
	rs = slices.DeleteFunc(slices.Clone(rs), func(r AuthResolver) bool { return r == nil })
	return chain(rs)
}

type chain []AuthResolver

func (c chain) Apply(ctx context.Context, req *http.Request, route *openapi.Route) error {
	for _, r := range c {
		if err := r.Apply(ctx, req, route); err != nil {
			return err
		}
	}
	return nil
}

// StaticResolver fills OpenAPI security schemes from configured secrets. It
// implements [AuthResolver] and [slog.LogValuer] (logging it shows scheme
// names only, never a secret).
type StaticResolver struct {
	schemes map[string]staticScheme
}

type staticScheme struct {
	kind   string // "header", "query", "cookie"
	name   string // header, query or cookie name
	value  string // header value or raw query/cookie value
	scheme string // for logs: apiKey, basic, bearer, ...
}

// Static returns a resolver that, for each call, picks the first of the
// route's security requirement alternatives whose every scheme has a secret
// and applies those schemes:
//   - apiKey in header, query or cookie: the secret is the key;
//   - http basic: the secret is "user:password";
//   - http bearer (and any other http scheme): the secret is the token, sent
//     as "Authorization: <Scheme> <token>";
//   - oauth2 and openIdConnect: the secret is an access token, sent as a
//     bearer token.
//
// A route that declares no security (nil) or whose requirements cannot be
// met gets no credentials (the upstream answers 401, which the caller sees
// as an authentication error). A secret for a scheme the document does not
// define, an unsupported scheme (mutualTLS), or a secret that is not a valid
// header value is a configuration error (reported without the secret).
func Static(schemes map[string]openapi.SecurityScheme, secrets map[string]string) (*StaticResolver, error) {
	r := &StaticResolver{schemes: make(map[string]staticScheme, len(secrets))}
	var errs []error
	for _, name := range sortedKeys(secrets) {
		secret := secrets[name]
		sc, ok := schemes[name]
		if !ok {
			errs = append(errs, fmt.Errorf("proxy: static secret for unknown security scheme %q", name))
			continue
		}
		if secret == "" {
			continue
		}
		var s staticScheme
		switch strings.ToLower(sc.Type) {
		case "apikey":
			if sc.Name == "" {
				errs = append(errs, fmt.Errorf("proxy: security scheme %q: apiKey without a name", name))
				continue
			}
			s = staticScheme{kind: strings.ToLower(sc.In), name: sc.Name, value: secret, scheme: "apiKey"}
			switch s.kind {
			case "header":
				if !validHeaderName(sc.Name) || forbiddenHeader(sc.Name) && !strings.EqualFold(sc.Name, "Authorization") {
					errs = append(errs, fmt.Errorf("proxy: security scheme %q: header %q cannot carry an API key", name, sc.Name))
					continue
				}
			case "query":
				s.value = url.QueryEscape(sc.Name) + "=" + url.QueryEscape(secret)
			case "cookie":
				if !validCookieName(sc.Name) {
					errs = append(errs, fmt.Errorf("proxy: security scheme %q: invalid cookie name %q", name, sc.Name))
					continue
				}
				s.value = sc.Name + "=" + cookieEscape(secret)
			default:
				errs = append(errs, fmt.Errorf("proxy: security scheme %q: apiKey in %q is not supported", name, sc.In))
				continue
			}
		case "http":
			s = staticScheme{kind: "header", name: "Authorization", scheme: strings.ToLower(sc.Scheme)}
			switch s.scheme {
			case "basic":
				if !strings.Contains(secret, ":") {
					errs = append(errs, fmt.Errorf("proxy: security scheme %q: a basic secret must be user:password", name))
					continue
				}
				s.value = "Basic " + base64.StdEncoding.EncodeToString([]byte(secret))
			case "", "bearer":
				s.scheme = "bearer"
				s.value = "Bearer " + secret
			default:
				s.value = canonicalScheme(sc.Scheme) + " " + secret
			}
		case "oauth2", "openidconnect":
			s = staticScheme{kind: "header", name: "Authorization", value: "Bearer " + secret, scheme: strings.ToLower(sc.Type)}
		default:
			errs = append(errs, fmt.Errorf("proxy: security scheme %q: type %q is not supported by the static resolver", name, sc.Type))
			continue
		}
		if s.kind == "header" && !validHeaderValue(s.value) {
			errs = append(errs, fmt.Errorf("proxy: security scheme %q: the secret is not a valid header value", name))
			continue
		}
		r.schemes[name] = s
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// StaticFromEnv is [Static] with secrets read by lookup (os.LookupEnv in
// production): the secret of scheme S is the variable prefix+S upper-cased
// with every character outside [A-Z0-9] replaced by "_" (scheme
// "bearerAuth" with prefix "MCPGATE_SECRET_" reads
// MCPGATE_SECRET_BEARERAUTH).
func StaticFromEnv(schemes map[string]openapi.SecurityScheme, prefix string, lookup func(string) (string, bool)) (*StaticResolver, error) {
	secrets := map[string]string{}
	for name := range schemes {
		if v, ok := lookup(EnvName(prefix, name)); ok && v != "" {
			secrets[name] = v
		}
	}
	return Static(schemes, secrets)
}

// EnvName is the environment variable [StaticFromEnv] reads for a scheme.
func EnvName(prefix, scheme string) string {
	b := []byte(strings.ToUpper(prefix + scheme))
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

func canonicalScheme(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + strings.ToLower(s[1:])
}

// Schemes returns the names of the schemes the resolver has secrets for.
func (r *StaticResolver) Schemes() []string { return sortedKeys(r.schemes) }

// LogValue shows the configured scheme names and kinds, never a secret.
func (r *StaticResolver) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, len(r.schemes))
	for _, name := range sortedKeys(r.schemes) {
		s := r.schemes[name]
		attrs = append(attrs, slog.String(name, s.scheme+" in "+s.kind+" (redacted)"))
	}
	return slog.GroupValue(attrs...)
}

// String is the redacted form, for fmt.
func (r *StaticResolver) String() string {
	return "static(" + strings.Join(r.Schemes(), ",") + "; secrets redacted)"
}

// Apply implements [AuthResolver].
func (r *StaticResolver) Apply(_ context.Context, req *http.Request, route *openapi.Route) error {
	if route == nil {
		return nil
	}
	for _, alt := range route.Security {
		if len(alt) == 0 {
			continue // anonymous alternative: prefer a credentialed one if any
		}
		ok := true
		for name := range alt {
			if _, have := r.schemes[name]; !have {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		for _, name := range sortedKeys(alt) {
			r.schemes[name].apply(req)
		}
		return nil
	}
	return nil
}

// apply replaces any same-named header, query parameter or cookie (an
// argument cannot shadow the credential) and is idempotent: applying twice,
// as for a followed redirect whose headers net/http copied, adds nothing
// twice.
func (s staticScheme) apply(req *http.Request) {
	switch s.kind {
	case "header":
		req.Header.Set(s.name, s.value)
	case "query":
		req.URL.RawQuery = replacePart(req.URL.RawQuery, "&", url.QueryEscape(s.name)+"=", s.value)
	case "cookie":
		if c := replacePart(req.Header.Get("Cookie"), "; ", s.name+"=", s.value); c != "" {
			req.Header.Set("Cookie", c)
		}
	}
}

// replacePart drops every sep-separated part of list that starts with
// prefix and appends part.
func replacePart(list, sep, prefix, part string) string {
	if list == "" {
		return part
	}
	var b strings.Builder
	for p := range strings.SplitSeq(list, sep) {
		if p == "" || strings.HasPrefix(p, prefix) {
			continue
		}
		b.WriteString(p)
		b.WriteString(sep)
	}
	b.WriteString(part)
	return b.String()
}
