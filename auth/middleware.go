package auth

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/mcpgate/mcpgate/mcp"
)

// Middleware authenticates every request with v: a request without a valid
// bearer token (or lacking a Config.RequiredScopes scope) is answered by
// [WriteError] with meta's challenge and does not reach next; otherwise next
// runs with the principal in the context ([mcp.WithPrincipal]; Credential
// is the presented token, to be replaced by [Forwarding.Bind] before it
// leaves for an upstream) and the validated token ([TokenFrom]).
//
// Rejections are logged at debug level with the reason, never the token.
// Mount the metadata routes ([ResourceMetadata.Register]) outside it.
func Middleware(v *Validator, meta *ResourceMetadata) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			raw, err := bearerToken(r)
			var t *Token
			if err == nil {
				t, err = v.ValidateToken(ctx, raw)
			}
			if err != nil {
				v.logger.DebugContext(ctx, "auth: request rejected",
					"reason", err.Error(), "method", r.Method, "path", r.URL.Path)
				WriteError(w, meta, err)
				return
			}
			ctx = WithToken(mcp.WithPrincipal(ctx, t.Principal()), t)
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// bearerToken extracts the token of an "Authorization: Bearer" header
// (RFC 6750 §2.1). A token in the query string (§2.3) or several
// Authorization headers are an invalid request; no header, or another
// scheme, is ErrNoToken.
func bearerToken(r *http.Request) (string, error) {
	if strings.Contains(r.URL.RawQuery, "access_token") && r.URL.Query().Has("access_token") {
		return "", fmt.Errorf("%w: access token in the query string", ErrInvalidRequest)
	}
	vals := r.Header.Values("Authorization")
	switch len(vals) {
	case 0:
		return "", ErrNoToken
	case 1:
	default:
		return "", fmt.Errorf("%w: several Authorization headers", ErrInvalidRequest)
	}
	scheme, rest, _ := strings.Cut(vals[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", ErrNoToken
	}
	tok := strings.TrimLeft(rest, " ")
	if !isB64Token(tok) {
		return "", fmt.Errorf("%w: malformed bearer token", ErrInvalidToken)
	}
	return tok, nil
}

// isB64Token checks RFC 6750's b64token: 1*( ALPHA / DIGIT / "-" / "." /
// "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	if s == "" {
		return false
	}
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' {
			continue
		}
		break
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// RequireScopes answers 403 insufficient_scope, naming every missing scope,
// when the principal that [Middleware] put in the request's context lacks
// what required(r) returns (alternatives, as from [RequiredScopes]; nil
// means nothing is required). Mount it inside [Middleware]. A gateway can
// use it for step-up on tools/call: required reads the tool name from the
// Mcp-Name header (which the MCP server checks against the body) and
// returns that tool's scopes.
func RequireScopes(meta *ResourceMetadata, required func(*http.Request) [][]string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			req := required(r)
			if len(req) > 0 {
				granted := mcp.PrincipalFrom(r.Context()).Scopes
				if missing := MissingScopes(granted, req); missing != nil {
					WriteError(w, meta, &InsufficientScopeError{Missing: missing})
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}
