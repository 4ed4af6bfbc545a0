package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// ServerMetadata is the part of an authorization server's metadata (RFC
// 8414, or OpenID Connect Discovery) that this package uses.
type ServerMetadata struct {
	Issuer                string   `json:"issuer"`
	JWKSURI               string   `json:"jwks_uri,omitempty"`
	AuthorizationEndpoint string   `json:"authorization_endpoint,omitempty"`
	TokenEndpoint         string   `json:"token_endpoint,omitempty"`
	IntrospectionEndpoint string   `json:"introspection_endpoint,omitempty"`
	GrantTypesSupported   []string `json:"grant_types_supported,omitempty"`
}

// maxMetadataBytes bounds every JSON document read from an authorization
// server.
const maxMetadataBytes = 1 << 20

// DiscoveryURLs returns the metadata URLs tried for issuer, in order: the
// RFC 8414 well-known URL (path inserted after the host), the OpenID
// Connect URL with the path inserted, and (for issuers with a path) the
// OpenID Connect URL appended to the issuer.
func DiscoveryURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Scheme == "" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("auth: issuer %q is not an absolute URL without query or fragment", issuer)
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	origin := u.Scheme + "://" + u.Host
	urls := []string{
		origin + "/.well-known/oauth-authorization-server" + path,
		origin + "/.well-known/openid-configuration" + path,
	}
	if path != "" {
		urls = append(urls, origin+path+"/.well-known/openid-configuration")
	}
	return urls, nil
}

// Discover fetches the authorization server metadata of issuer, trying
// [DiscoveryURLs] in order. The document's issuer must equal issuer
// exactly (RFC 8414 §3.3).
func Discover(ctx context.Context, client *http.Client, issuer string) (*ServerMetadata, error) {
	urls, err := DiscoveryURLs(issuer)
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = defaultClient()
	}
	var errs []error
	for _, u := range urls {
		var m ServerMetadata
		if err := getJSON(ctx, client, u, &m); err != nil {
			errs = append(errs, err)
			continue
		}
		if m.Issuer != issuer {
			return nil, fmt.Errorf("auth: metadata at %s names issuer %q, want %q", u, m.Issuer, issuer)
		}
		return &m, nil
	}
	return nil, fmt.Errorf("auth: discovering metadata of %s: %w", issuer, errors.Join(errs...))
}

// getJSON GETs u and decodes a 200 JSON answer into v.
func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("auth: GET %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("auth: GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadataBytes))
		return fmt.Errorf("auth: GET %s: status %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMetadataBytes)).Decode(v); err != nil {
		return fmt.Errorf("auth: GET %s: decoding: %w", u, err)
	}
	return nil
}
