package auth

import (
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/openapi"
)

// offlineAccess is never advertised nor challenged for (MCP authorization:
// it is an authorization server concern).
const offlineAccess = "offline_access"

// RequiredScopes computes what a tool requires from its operation's OpenAPI
// security requirements: a list of alternatives, any one of which suffices;
// each alternative is the set of scopes that must all be granted.
//
// Only oauth2 and openIdConnect schemes contribute scopes; other schemes
// (apiKey, http, mutualTLS) are upstream credentials, not grants of the
// caller's token, so they contribute none. A requirement naming a scheme
// that is not in schemes keeps its scopes (fail closed).
//
// The result is nil when nothing is required: the route declares no
// security, or one alternative needs no scope. Each alternative is sorted
// and deduplicated; duplicate alternatives are dropped.
func RequiredScopes(route openapi.Route, schemes map[string]openapi.SecurityScheme) [][]string {
	var out [][]string
	for _, req := range route.Security {
		var alt []string
		for name, scopes := range req {
			if s, ok := schemes[name]; ok && s.Type != "oauth2" && s.Type != "openIdConnect" {
				continue
			}
			alt = append(alt, scopes...)
		}
		alt = normalizeScopes(alt)
		if len(alt) == 0 {
			return nil // this alternative needs no scope
		}
		if !slices.ContainsFunc(out, func(o []string) bool { return slices.Equal(o, alt) }) {
			out = append(out, alt)
		}
	}
	return out
}

// Allowed reports whether granted satisfies required: required is empty, or
// every scope of at least one alternative is granted.
func Allowed(granted []string, required [][]string) bool {
	if len(required) == 0 {
		return true
	}
	for _, alt := range required {
		if containsAll(granted, alt) {
			return true
		}
	}
	return false
}

// MissingScopes returns nil when [Allowed](granted, required), else the
// scopes still missing from the alternative that lacks the fewest (on a
// tie, the one with more scopes already granted, then the first): what a
// 403 insufficient_scope challenge should name, all at once.
func MissingScopes(granted []string, required [][]string) []string {
	if Allowed(granted, required) {
		return nil
	}
	var (
		best     []string
		bestHave int
	)
	for _, alt := range required {
		var missing []string
		for _, s := range alt {
			if !slices.Contains(granted, s) {
				missing = append(missing, s)
			}
		}
		have := len(alt) - len(missing)
		if best == nil || len(missing) < len(best) || (len(missing) == len(best) && have > bestHave) {
			best, bestHave = missing, have
		}
	}
	return best
}

func containsAll(granted, want []string) bool {
	for _, s := range want {
		if !slices.Contains(granted, s) {
			return false
		}
	}
	return true
}

// normalizeScopes sorts, drops empties and duplicates.
func normalizeScopes(s []string) []string {
	s = slices.DeleteFunc(s, func(x string) bool { return x == "" })
	if len(s) == 0 {
		return nil
	}
	slices.Sort(s)
	return slices.Compact(s)
}

// expandScopes adds every scope implied (transitively) by a granted one.
func expandScopes(granted []string, implied map[string][]string) []string {
	if len(implied) == 0 {
		return normalizeScopes(granted)
	}
	out := slices.Clone(granted)
	for i := 0; i < len(out); i++ { // out grows while we walk it
		for _, s := range implied[out[i]] {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return normalizeScopes(out)
}

// parseScopeClaim reads a scope claim: a space-separated string ("scope",
// RFC 8693 / RFC 9068) or an array of strings ("scp"). ok is false for any
// other shape.
func parseScopeClaim(v any) (scopes []string, ok bool) {
	switch v := v.(type) {
	case nil:
		return nil, true
	case string:
		return strings.Fields(v), true
	case []any:
		for _, e := range v {
			s, isStr := e.(string)
			if !isStr {
				return nil, false
			}
			scopes = append(scopes, strings.Fields(s)...)
		}
		return scopes, true
	case []string:
		for _, s := range v {
			scopes = append(scopes, strings.Fields(s)...)
		}
		return scopes, true
	}
	return nil, false
}

// advertisable returns scopes in their order without offline_access,
// empty strings and repeats.
func advertisable(scopes []string) []string {
	var out []string
	for _, s := range scopes {
		if s != "" && s != offlineAccess && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
