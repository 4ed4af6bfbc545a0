package openapi

import (
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// This file decides which document parameters are plumbing rather than
// arguments (issue 15 item 6). An agent must never be asked for a
// credential: the gateway's credential mode supplies it (the caller's
// bearer, a static secret per security scheme, an exchanged token) or the
// request goes without. Nor should it see the knobs of an API's wire format
// that only make the response unusable (JSONP callbacks, non-JSON alt,
// pretty-printing) or misattribute quota.
//
// The rules, narrow on purpose so that no real argument disappears:
//   - the apiKey parameter of a security scheme (same location and name;
//     header names case-insensitive) is a credential, whatever it is called;
//   - AWS Signature V4 parameters (X-Amz-Signature, X-Amz-Credential,
//     X-Amz-Date, X-Amz-Algorithm, X-Amz-SignedHeaders,
//     X-Amz-Security-Token, X-Amz-Content-Sha256) are credentials by name:
//     SigV4 reserves them;
//   - Google's access_token, oauth_token and key are credentials only when
//     their description says so (an OAuth token, an API key): elsewhere
//     such names can be real arguments (a token endpoint's subject);
//   - Google's transport knobs ($.xgafv, alt, callback, prettyPrint,
//     quotaUser, userIp) in the query are hidden when their description
//     matches Google's; GenerateOptions.KeepParameters offers them again.
//     fields (partial responses, a way to make results smaller) and
//     uploadType/upload_protocol (needed by media uploads) stay arguments.

// awsSigV4 are the SigV4 parameter names, lower-cased.
var awsSigV4 = []string{
	"x-amz-signature", "x-amz-credential", "x-amz-date", "x-amz-algorithm",
	"x-amz-signedheaders", "x-amz-security-token", "x-amz-content-sha256",
}

// describedParam is a parameter name that counts only when its description
// matches.
type describedParam struct {
	name string
	desc *regexp.Regexp
}

var googleCredentials = []describedParam{
	{"access_token", regexp.MustCompile(`(?i)\boauth\b|access token`)},
	{"oauth_token", regexp.MustCompile(`(?i)\boauth\b|token for the current user`)},
	{"key", regexp.MustCompile(`(?i)\bapi key\b`)},
}

var googleTransport = []describedParam{
	{"$.xgafv", regexp.MustCompile(`(?i)error format`)},
	{"alt", regexp.MustCompile(`(?i)data format|response format`)},
	{"callback", regexp.MustCompile(`(?i)\bjsonp\b`)},
	{"prettyPrint", regexp.MustCompile(`(?i)pretty|indentations?\b|line breaks`)},
	{"quotaUser", regexp.MustCompile(`(?i)\bquota\b`)},
	{"userIp", regexp.MustCompile(`(?i)\bquota\b|ip address`)},
}

// apiKeyParam locates a security scheme's apiKey parameter.
type apiKeyParam struct{ in, name string }

func apiKeyKey(in, name string) apiKeyParam {
	if in == "header" {
		name = strings.ToLower(name)
	}
	return apiKeyParam{in, name}
}

// apiKeyParams maps the document's apiKey parameters to their scheme.
func apiKeyParams(t *openapi3.T) map[apiKeyParam]string {
	out := map[apiKeyParam]string{}
	if t.Components == nil {
		return out
	}
	for _, name := range sortedKeys(t.Components.SecuritySchemes) {
		r := t.Components.SecuritySchemes[name]
		if r == nil || r.Value == nil || r.Value.Type != "apiKey" || r.Value.Name == "" {
			continue
		}
		k := apiKeyKey(r.Value.In, r.Value.Name)
		if _, ok := out[k]; !ok {
			out[k] = name
		}
	}
	return out
}

// hiddenParameter returns why p is not an argument, or ok false.
func (g *generator) hiddenParameter(p *openapi3.Parameter) (HiddenParameter, bool) {
	h := HiddenParameter{Name: p.Name, In: p.In, Required: p.Required}
	if scheme, ok := g.apiKeys[apiKeyKey(p.In, p.Name)]; ok {
		h.Reason, h.Scheme = "security-scheme", scheme
		return h, true
	}
	lower := strings.ToLower(p.Name)
	if (p.In == "header" || p.In == "query") && slices.Contains(awsSigV4, lower) {
		h.Reason = "credential"
		return h, true
	}
	if p.In != "query" {
		return h, false
	}
	if matchDescribed(googleCredentials, p) {
		h.Reason = "credential"
		return h, true
	}
	if matchDescribed(googleTransport, p) && !g.keepParameter(p.Name) {
		h.Reason = "transport"
		return h, true
	}
	return h, false
}

func matchDescribed(list []describedParam, p *openapi3.Parameter) bool {
	for _, d := range list {
		if p.Name == d.name && d.desc.MatchString(p.Description) {
			return true
		}
	}
	return false
}

// keepParameter reports whether GenerateOptions.KeepParameters offers a
// transport parameter after all.
func (g *generator) keepParameter(name string) bool {
	for _, k := range g.opts.KeepParameters {
		if k == "*" || strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}
