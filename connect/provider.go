package connect

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"

	"golang.org/x/oauth2"

	"github.com/mcpgate/mcpgate/openapi"
)

// Provider is the gateway's OAuth client registration at one API's
// authorization server (credentials.mode oauth for that API).
type Provider struct {
	// API names the API: the path segment of its pages (/connect/<API>)
	// and part of every grant's key. 1 to 64 characters of A-Z a-z 0-9 _ -.
	API string
	// Title is how pages and messages name the API ("GitHub"); API when
	// empty.
	Title string
	// ClientID and ClientSecret are the gateway's registration. An empty
	// secret makes a public client (PKCE only).
	ClientID     string
	ClientSecret string
	// AuthURL and TokenURL are the authorization server's endpoints;
	// [Provider.FromDocument] fills them from the OpenAPI document.
	AuthURL  string
	TokenURL string
	// RevocationURL, when set, is told (RFC 7009) when a grant is revoked.
	RevocationURL string
	// Issuer, when set, is the authorization server's issuer identifier: a
	// callback carrying an iss parameter (RFC 9207) must name it, which
	// defends against mix-up attacks between authorization servers.
	Issuer string
	// Scopes are requested on authorization; [Provider.FromDocument] fills
	// them with the scopes the document's operations require.
	Scopes []string
	// AuthParams are extra parameters of the authorization request (for
	// example access_type=offline for Google, audience=… for Auth0).
	AuthParams map[string]string
	// AuthStyle is how the client authenticates at the token endpoint
	// (oauth2.AuthStyleAutoDetect by default).
	AuthStyle oauth2.AuthStyle
}

// title is the name shown to the user.
func (p *Provider) title() string { return cmp.Or(p.Title, p.API) }

// FromDocument returns p with AuthURL, TokenURL and Scopes filled, where
// empty, from the document: the authorizationCode flow of the oauth2
// security scheme named scheme (with "", the document's only oauth2 scheme
// that has one), and as scopes the union of those the tools' security
// requirements name for that scheme. A document without such a scheme is
// fine when p names both endpoints.
func (p Provider) FromDocument(schemes map[string]openapi.SecurityScheme, scheme string, tools []openapi.Tool) (Provider, error) {
	if scheme == "" {
		var found []string
		for name, s := range schemes {
			if strings.EqualFold(s.Type, "oauth2") && s.Flows["authorizationCode"].AuthorizationURL != "" {
				found = append(found, name)
			}
		}
		sort.Strings(found)
		switch len(found) {
		case 0:
			if p.AuthURL != "" && p.TokenURL != "" {
				// Configured endpoints need no scheme (GitHub's own
				// document declares none); the scopes are as configured.
				return p, nil
			}
			return p, fmt.Errorf("connect: API %s: the document has no oauth2 security scheme with an authorizationCode flow; configure the endpoints (auth_url and token_url)", p.API)
		case 1:
			scheme = found[0]
		default:
			return p, fmt.Errorf("connect: API %s: the document has several oauth2 authorizationCode schemes (%s); name one", p.API, strings.Join(found, ", "))
		}
	}
	s, ok := schemes[scheme]
	if !ok || !strings.EqualFold(s.Type, "oauth2") {
		return p, fmt.Errorf("connect: API %s: the document has no oauth2 security scheme %q", p.API, scheme)
	}
	flow, ok := s.Flows["authorizationCode"]
	if !ok {
		return p, fmt.Errorf("connect: API %s: security scheme %q has no authorizationCode flow", p.API, scheme)
	}
	p.AuthURL = cmp.Or(p.AuthURL, flow.AuthorizationURL)
	p.TokenURL = cmp.Or(p.TokenURL, flow.TokenURL)
	if p.Scopes == nil {
		seen := map[string]bool{}
		for _, t := range tools {
			for _, alt := range t.Route.Security {
				for _, sc := range alt[scheme] {
					if !seen[sc] {
						seen[sc] = true
						p.Scopes = append(p.Scopes, sc)
					}
				}
			}
		}
		slices.Sort(p.Scopes)
	}
	return p, nil
}

// check validates a provider's configuration.
func (p *Provider) check() error {
	if !validName(p.API) {
		return fmt.Errorf("connect: API name %q: want 1 to 64 characters of A-Z a-z 0-9 _ -", p.API)
	}
	var errs []error
	if p.ClientID == "" {
		errs = append(errs, errors.New("no client id"))
	}
	for _, e := range []struct{ name, v string }{{"authorization URL", p.AuthURL}, {"token URL", p.TokenURL}, {"revocation URL", p.RevocationURL}} {
		if e.v == "" && e.name == "revocation URL" {
			continue
		}
		if err := checkEndpoint(e.v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e.name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("connect: API %s: %w", p.API, errors.Join(errs...))
	}
	return nil
}

// oauth2Config is the x/oauth2 view of p, with its callback URL.
func (p *Provider) oauth2Config(redirect string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: p.ClientID, ClientSecret: p.ClientSecret, RedirectURL: redirect, Scopes: p.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: p.AuthURL, TokenURL: p.TokenURL, AuthStyle: p.AuthStyle},
	}
}

// checkEndpoint accepts an absolute https URL, or http on a loopback host
// (development and tests), without credentials or a fragment.
func checkEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || !u.IsAbs() {
		return fmt.Errorf("%q is not an absolute URL", raw)
	}
	if u.User != nil || u.Fragment != "" {
		return fmt.Errorf("%q must not carry user info or a fragment", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
	}
	return fmt.Errorf("%q must be https (http only on a loopback host)", raw)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
