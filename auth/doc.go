// Package auth makes mcpgate an OAuth 2.1 resource server and decides which
// credential reaches an upstream API.
//
// It owns:
//
//   - [Validator]: validates the bearer access token of every request, either
//     a JWT (RS256, ES256 or EdDSA; keys from the issuer's JWKS, found through
//     its RFC 8414 / OpenID metadata or a configured URL) or an opaque token
//     through RFC 7662 introspection ([Introspector]), and turns it into a
//     [Token] and an [mcp.Principal].
//   - [Middleware]: the HTTP layer in front of the MCP transport: 401 with
//     an RFC 6750 / RFC 9728 challenge when the token is missing or invalid,
//     403 insufficient_scope when it lacks a scope, otherwise the request
//     continues with the principal in its context ([mcp.WithPrincipal]) and
//     the validated token ([TokenFrom]).
//   - [ResourceMetadata]: the RFC 9728 protected resource metadata document
//     and its well-known routes.
//   - Scope policy: [RequiredScopes] computes a tool's required scopes from
//     the operation's OpenAPI security requirements; [Allowed] and
//     [MissingScopes] check a grant against them; [RequireScopes] answers a
//     request (e.g. a tools/call) that lacks them with 403
//     insufficient_scope (step-up).
//   - Credential forwarding per upstream ([Forwarding]): passthrough
//     (allowed only when the token's audience covers the upstream,
//     [PassthroughAllowed]) or RFC 8693 token exchange ([Exchanger]). Static
//     upstream secrets live in package proxy.
//
// Invariants:
//
//   - No token reaches a log or an error message. [Token] redacts itself when
//     formatted or logged; errors name the reason, never the token.
//   - The audience is always checked: a token is accepted only when its aud
//     (or introspected aud) names this server's canonical resource URL or a
//     configured extra audience; a token without an audience is rejected.
//   - Only RS256, ES256 and EdDSA signatures are accepted, each only with a
//     key of the matching type; HS* and "none" are never accepted, so a
//     public key can never be used as an HMAC secret.
//   - Expiry is required; exp, nbf and iat are checked with a small leeway.
//   - A token with an unknown key id triggers at most one JWKS refresh per
//     refresh interval, however many such tokens arrive; the rest are
//     rejected at once instead of queueing.
//   - [Forwarding] yields the caller's token for an upstream only when the
//     token's audience covers that upstream; otherwise only a token obtained
//     by exchange for the upstream's audience, or nothing (static mode).
//     [Middleware] leaves the presented token in Principal.Credential, so
//     the gateway calls [Forwarding.Bind] before dispatching to an upstream.
//
// The package holds no package-level mutable state; every cache belongs to
// a value the caller constructs.
package auth
