package auth

import (
	"reflect"
	"testing"

	"github.com/mcpgate/mcpgate/openapi"
)

func TestRequiredScopes(t *testing.T) {
	schemes := map[string]openapi.SecurityScheme{
		"oauth":  {Type: "oauth2", Flows: map[string]openapi.OAuthFlow{"authorizationCode": {Scopes: map[string]string{"pets:read": "", "pets:write": ""}}}},
		"oidc":   {Type: "openIdConnect", OpenIDConnectURL: "https://as.example.com/.well-known/openid-configuration"},
		"apiKey": {Type: "apiKey", In: "header", Name: "X-Key"},
		"basic":  {Type: "http", Scheme: "basic"},
	}
	cases := []struct {
		name     string
		security []openapi.SecurityRequirement
		want     [][]string
	}{
		{"no security declared", nil, nil},
		{"one oauth2 requirement", []openapi.SecurityRequirement{{"oauth": {"pets:write", "pets:read"}}}, [][]string{{"pets:read", "pets:write"}}},
		{"alternatives", []openapi.SecurityRequirement{{"oauth": {"pets:write"}}, {"oidc": {"openid", "pets"}}}, [][]string{{"pets:write"}, {"openid", "pets"}}},
		{"schemes combined in one requirement", []openapi.SecurityRequirement{{"oauth": {"a"}, "oidc": {"b", "a"}, "apiKey": {}}}, [][]string{{"a", "b"}}},
		{"apiKey and http schemes need no scope", []openapi.SecurityRequirement{{"apiKey": {"role"}}, {"basic": {}}}, nil},
		{"an anonymous alternative needs nothing", []openapi.SecurityRequirement{{"oauth": {"a"}}, {}}, nil},
		{"oauth2 without scopes needs none", []openapi.SecurityRequirement{{"oauth": {}}}, nil},
		{"unknown scheme keeps its scopes", []openapi.SecurityRequirement{{"mystery": {"x"}}}, [][]string{{"x"}}},
		{"duplicate alternatives dropped", []openapi.SecurityRequirement{{"oauth": {"a", "b"}}, {"oidc": {"b", "a", "a"}}}, [][]string{{"a", "b"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := RequiredScopes(openapi.Route{Method: "GET", Path: "/pets", Security: tc.security}, schemes)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("RequiredScopes = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAllowedAndMissing(t *testing.T) {
	cases := []struct {
		granted  []string
		required [][]string
		allowed  bool
		missing  []string
	}{
		{nil, nil, true, nil},
		{[]string{"a"}, [][]string{{"a"}}, true, nil},
		{[]string{"a"}, [][]string{{"a", "b"}}, false, []string{"b"}},
		{[]string{"c"}, [][]string{{"a", "b"}, {"c", "d"}}, false, []string{"d"}},
		{[]string{"c", "d"}, [][]string{{"a", "b"}, {"c", "d"}}, true, nil},
		{nil, [][]string{{"a", "b"}, {"c"}}, false, []string{"c"}},
		{nil, [][]string{{"x"}, {"y"}}, false, []string{"x"}},                             // tie: the first
		{[]string{"w"}, [][]string{{"admin"}, {"w", "d"}}, false, []string{"d"}},          // tie: the one partly granted
		{[]string{"w"}, [][]string{{"w", "d", "e"}, {"admin"}}, false, []string{"admin"}}, // fewest missing wins
	}
	for _, tc := range cases {
		if got := Allowed(tc.granted, tc.required); got != tc.allowed {
			t.Errorf("Allowed(%q, %q) = %v, want %v", tc.granted, tc.required, got, tc.allowed)
		}
		if got := MissingScopes(tc.granted, tc.required); !reflect.DeepEqual(got, tc.missing) {
			t.Errorf("MissingScopes(%q, %q) = %q, want %q", tc.granted, tc.required, got, tc.missing)
		}
	}
}

func TestChallengeNamesAllMissingScopes(t *testing.T) {
	meta := testMetadata("https://auth.example.com")
	status, h := meta.Challenge(&InsufficientScopeError{Missing: MissingScopes([]string{"a"}, [][]string{{"a", "files:read", "files:write"}})})
	want := `Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="` + wantMetadataURL + `"`
	if status != 403 || h != want {
		t.Fatalf("Challenge = %d %q\nwant 403 %q", status, h, want)
	}
}

func TestChallengeWithoutMetadata(t *testing.T) {
	var meta *ResourceMetadata
	for err, want := range map[error]string{
		ErrNoToken:      "Bearer",
		ErrInvalidToken: `Bearer error="invalid_token", error_description="the access token is invalid"`,
		&InsufficientScopeError{Missing: []string{"a"}}: `Bearer error="insufficient_scope", scope="a"`,
	} {
		if _, got := meta.Challenge(err); got != want {
			t.Errorf("Challenge(%v) = %q, want %q", err, got, want)
		}
	}
}
