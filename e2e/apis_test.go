package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSeveralAPIs: two APIs behind one endpoint of the real binary, each
// with a recording upstream. Every call, and every credential, lands on the
// API it is meant for: the caller's bearer on the passthrough API only, the
// static secrets (MCPGATE_SECRET_<API>_<SCHEME>) on the other only; and
// neither a redirect nor an argument moves a request from one origin to the
// other.
func TestSeveralAPIs(t *testing.T) {
	one, two := newRecorder(t), newRecorder(t)
	spec := writeSpec(t)
	config := filepath.Join(t.TempDir(), "mcpgate.yaml")
	body := "store: memory\napis:\n" +
		"  - {name: one, spec: " + spec + ", upstream: " + one.srv.URL + "}\n" +
		"  - {name: two, spec: " + spec + ", upstream: " + two.srv.URL + ", credentials: {mode: static}}\n"
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, []string{"MCPGATE_SECRET_TWO_BEARERAUTH=two-secret", "MCPGATE_SECRET_TWO_APIKEYQUERY=two-query-key",
		"MCPGATE_SECRET_TWO_APIKEYHEADER=two-header-key"}, "--config", config)
	cs := connectHTTP(t, g.URL, connectOptions{Bearer: "caller-token"})

	names := toolNames(t, cs)
	for _, want := range []string{"one_getItem", "two_getItem", "one_keyedQuery", "two_keyedQuery"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools lack %s: %v", want, names)
		}
	}
	wantOK(t, "one_getItem", call(t, cs, "one_getItem", map[string]any{"id": "a"}))
	wantOK(t, "two_getItem", call(t, cs, "two_getItem", map[string]any{"id": "b"}))
	wantOK(t, "two_keyedQuery", call(t, cs, "two_keyedQuery", map[string]any{}))
	// One's upstream redirects to two's: not followed (another origin).
	one.redirect("/items/away", 302, two.srv.URL+"/items/stolen")
	call(t, cs, "one_getItem", map[string]any{"id": "away"})
	// An argument cannot name another origin either.
	call(t, cs, "one_getItem", map[string]any{"id": two.srv.URL + "/items/x"})

	for _, r := range one.requests() {
		if got := r.Header.Get("Authorization"); got != "Bearer caller-token" {
			t.Errorf("one received %s %s with Authorization %q", r.Method, r.RequestURI, got)
		}
		if strings.Contains(r.RequestURI, "two-") || r.Header.Get("X-API-Key") != "" {
			t.Errorf("one received two's secret: %s %v", r.RequestURI, r.Header)
		}
	}
	if n := len(one.requests()); n != 3 {
		t.Errorf("one received %d requests, want 3", n)
	}
	reqs := two.requests()
	if len(reqs) != 2 {
		t.Fatalf("two received %d requests, want 2 (no redirect or argument may reach it): %+v", len(reqs), reqs)
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer two-secret" || reqs[0].Path != "/items/b" {
		t.Errorf("two_getItem reached two as %s with Authorization %q", reqs[0].RequestURI, got)
	}
	if !strings.Contains(reqs[1].RawQuery, "api_key=two-query-key") || strings.Contains(reqs[1].Header.Get("Authorization"), "caller-token") {
		t.Errorf("two_keyedQuery reached two as %s %v", reqs[1].RequestURI, reqs[1].Header)
	}
	for _, r := range reqs {
		if strings.Contains(r.Header.Get("Authorization"), "caller-token") {
			t.Errorf("the caller's bearer reached two: %s", r.RequestURI)
		}
	}
	if strings.Contains(g.Log.String(), "caller-token") || strings.Contains(g.Log.String(), "two-secret") {
		t.Error("a credential was logged")
	}
}
