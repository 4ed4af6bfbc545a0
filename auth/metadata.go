package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// WellKnownPath is the RFC 9728 well-known path of protected resource
// metadata.
const WellKnownPath = "/.well-known/oauth-protected-resource"

// ResourceMetadata is the RFC 9728 protected resource metadata of this
// server.
type ResourceMetadata struct {
	// Resource is this server's canonical resource URL (required); it is
	// normalized like [CanonicalResource].
	Resource string `json:"resource"`
	// AuthorizationServers are issuer identifiers (at least one).
	AuthorizationServers []string `json:"authorization_servers"`
	// ScopesSupported is the minimal set of scopes for basic use; it is also
	// the scope of the challenge on a request without a token.
	// offline_access is never advertised.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// BearerMethodsSupported defaults to ["header"].
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	ResourceName           string   `json:"resource_name,omitempty"`
	ResourceDocumentation  string   `json:"resource_documentation,omitempty"`
}

// normalized returns a checked copy with defaults filled in.
func (m *ResourceMetadata) normalized() (ResourceMetadata, error) {
	if m == nil {
		return ResourceMetadata{}, errors.New("auth: no resource metadata")
	}
	n := *m
	res, err := CanonicalResource(m.Resource)
	if err != nil {
		return n, err
	}
	n.Resource = res
	if len(m.AuthorizationServers) == 0 {
		return n, errors.New("auth: resource metadata needs at least one authorization server")
	}
	for _, as := range m.AuthorizationServers {
		if u, err := url.Parse(as); err != nil || u.Scheme == "" || u.Host == "" {
			return n, fmt.Errorf("auth: authorization server %q is not an absolute URL", as)
		}
	}
	n.AuthorizationServers = slices.Clone(m.AuthorizationServers)
	n.ScopesSupported = advertisable(m.ScopesSupported)
	if len(m.BearerMethodsSupported) == 0 {
		n.BearerMethodsSupported = []string{"header"}
	} else {
		n.BearerMethodsSupported = slices.Clone(m.BearerMethodsSupported)
	}
	return n, nil
}

// Paths returns where the document is served: the path-inserted form for
// a resource with a path (RFC 9728 §3.1, e.g.
// "/.well-known/oauth-protected-resource/mcp"), then the root form.
func (m *ResourceMetadata) Paths() []string {
	if m == nil {
		return []string{WellKnownPath}
	}
	res, err := CanonicalResource(m.Resource)
	if err != nil {
		return []string{WellKnownPath}
	}
	u, _ := url.Parse(res)
	if p := u.EscapedPath(); p != "" && p != "/" {
		return []string{WellKnownPath + p, WellKnownPath}
	}
	return []string{WellKnownPath}
}

// URL returns the metadata URL named in challenges (resource_metadata):
// the resource's origin plus the first of [ResourceMetadata.Paths].
func (m *ResourceMetadata) URL() string {
	if m == nil {
		return ""
	}
	res, err := CanonicalResource(m.Resource)
	if err != nil {
		return ""
	}
	u, _ := url.Parse(res)
	return u.Scheme + "://" + u.Host + m.Paths()[0]
}

// Handler returns the handler serving the document (GET and HEAD; JSON,
// cacheable, readable cross-origin) on [ResourceMetadata.Paths]. It must be
// mounted outside [Middleware]: the document is public. Later changes to m
// do not affect the handler.
func (m *ResourceMetadata) Handler() (http.Handler, error) {
	n, err := m.normalized()
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("auth: resource metadata: %w", err)
	}
	paths := m.Paths()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(paths, r.URL.Path) {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "public, max-age=3600")
		h.Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	}), nil
}

// Register mounts [ResourceMetadata.Handler] on mux at every path of
// [ResourceMetadata.Paths].
func (m *ResourceMetadata) Register(mux *http.ServeMux) error {
	h, err := m.Handler()
	if err != nil {
		return err
	}
	for _, p := range m.Paths() {
		mux.Handle(p, h)
	}
	return nil
}

// Challenge returns the HTTP status and WWW-Authenticate value answering
// err (an error from [Validator.ValidateToken]):
//
//   - [ErrNoToken]: 401, Bearer resource_metadata="…"[, scope="…"] (the
//     scopes_supported);
//   - [ErrInvalidToken]: 401, Bearer error="invalid_token",
//     error_description="…", resource_metadata="…";
//   - [ErrInvalidRequest]: 400, Bearer error="invalid_request", …;
//   - [*InsufficientScopeError]: 403, Bearer error="insufficient_scope",
//     scope="<missing scopes>", resource_metadata="…";
//   - [ErrUnavailable]: 503 and no challenge.
//
// Anything else is treated as an invalid token. With a nil m the
// resource_metadata parameter is left out.
func (m *ResourceMetadata) Challenge(err error) (status int, wwwAuthenticate string) {
	var (
		ise    *InsufficientScopeError
		params []string
	)
	switch {
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable, ""
	case errors.As(err, &ise):
		status = http.StatusForbidden
		params = append(params, `error="insufficient_scope"`, "scope="+quote(strings.Join(ise.Missing, " ")))
	case errors.Is(err, ErrNoToken):
		status = http.StatusUnauthorized
	case errors.Is(err, ErrInvalidRequest):
		status = http.StatusBadRequest
		params = append(params, `error="invalid_request"`, "error_description="+quote(description(err)))
	default:
		status = http.StatusUnauthorized
		params = append(params, `error="invalid_token"`, "error_description="+quote(description(err)))
	}
	if u := m.URL(); u != "" {
		params = append(params, "resource_metadata="+quote(u))
	}
	if errors.Is(err, ErrNoToken) && m != nil {
		if s := advertisable(m.ScopesSupported); len(s) > 0 {
			params = append(params, "scope="+quote(strings.Join(s, " ")))
		}
	}
	if len(params) == 0 {
		return status, "Bearer"
	}
	return status, "Bearer " + strings.Join(params, ", ")
}

// description is the fixed, token-free text for an error.
func description(err error) string {
	var ise *InsufficientScopeError
	switch {
	case errors.As(err, &ise):
		return "the access token lacks a required scope"
	case errors.Is(err, ErrNoToken):
		return "a bearer access token is required"
	case errors.Is(err, ErrInvalidRequest):
		return "the access token must be sent once, in the Authorization header"
	case errors.Is(err, ErrTokenExpired):
		return "the access token expired"
	case errors.Is(err, ErrUnavailable):
		return "the authorization server is unavailable"
	}
	return "the access token is invalid"
}

// errorCode is the OAuth error code of the JSON body.
func errorCode(err error) string {
	var ise *InsufficientScopeError
	switch {
	case errors.As(err, &ise):
		return "insufficient_scope"
	case errors.Is(err, ErrNoToken):
		return "unauthorized"
	case errors.Is(err, ErrInvalidRequest):
		return "invalid_request"
	case errors.Is(err, ErrUnavailable):
		return "temporarily_unavailable"
	}
	return "invalid_token"
}

// WriteError answers a request that err (from [Validator.ValidateToken],
// or an [*InsufficientScopeError] for a tool) rejects: the status and
// challenge of [ResourceMetadata.Challenge] and a small JSON body
// {"error": …, "error_description": …}. The body never holds the token.
func WriteError(w http.ResponseWriter, meta *ResourceMetadata, err error) {
	status, challenge := meta.Challenge(err)
	h := w.Header()
	if challenge != "" {
		h.Set("WWW-Authenticate", challenge)
	}
	if status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "5")
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	body, _ := json.Marshal(struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}{errorCode(err), description(err)})
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// quote renders s as an RFC 9110 quoted-string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}
