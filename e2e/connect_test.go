package e2e

import (
	"strings"
	"testing"
	"time"
)

// The users' own accounts at an API (credentials mode oauth, package
// connect) through the real binary, against a real authorization server
// (oidc-provider, package internal/oidctest). The world is in
// connect_env_test.go.

// TestConnectFlow is the whole life of a user's grant: the first call
// asks with a URL-mode elicitation of the gateway's own connect page; the
// user completes it (the code, oidc-provider's login and consent) in a
// browser; the retried call reaches the upstream with the user's access
// token; once that token is due the next call refreshes it silently;
// disconnect_api deletes the grant and revokes it at the authorization
// server, and the next call asks again; `mcpgate grants revoke` does the
// same from the command line.
func TestConnectFlow(t *testing.T) {
	const ttl = 6 * time.Second // the access token's lifetime; connect.refresh_margin is 1s
	api, g, cfg := startConnectGateway(t, ttl, "")
	alice := newUser(t, "alice")
	cs := alice.client(t, g.URL, "alice-mcp-token", urlMode)

	res := call(t, cs, "listPets", nil)
	wantOK(t, "listPets", res)
	q := alice.questions()
	if len(q) != 1 || q[0].Mode != "url" || !strings.HasPrefix(q[0].URL, g.Base+"/connect/api?s=") || !connectCode.MatchString(q[0].Message) {
		t.Fatalf("want one URL elicitation of %s/connect/api with a code in its message, got %+v", g.Base, q)
	}
	if !connected(alice.lastPage()) {
		t.Fatalf("the browser did not end on the gateway's connected page: HTTP %d: %s", alice.lastPage().Status, alice.lastPage().Body)
	}
	if !strings.Contains(text(res), `"owner":"alice"`) {
		t.Fatalf("listPets after connecting: %s", text(res))
	}
	pets := api.Up.requests("/pets")
	if len(pets) != 1 || !pets[0].Active || pets[0].Sub != "alice" {
		t.Fatalf("the upstream saw %+v, want one call with alice's active token", pets)
	}
	first := pets[0].Token
	if strings.Contains(q[0].URL, first) || strings.Contains(q[0].URL, "alice") {
		t.Errorf("the connect link %q carries the caller or a token", q[0].URL)
	}

	rows := listGrants(t, api.Env, cfg)
	if len(rows) != 1 || rows[0].API != "api" || !strings.HasPrefix(rows[0].Subject, "bearer:") || !rows[0].Refreshable ||
		!strings.Contains(rows[0].Scopes, "pets:read") || rows[0].Expiry.IsZero() || rows[0].KeyID != "k1" {
		t.Fatalf("mcpgate grants list: %+v, want one refreshable grant of the caller to api", rows)
	}
	table := grantsCLI(t, api.Env, "list", "--config", cfg)
	for _, secret := range []string{first, "alice-mcp-token", "gateway-secret"} {
		if strings.Contains(table, secret) || strings.Contains(g.Log.String(), secret) {
			t.Errorf("a token or secret is in the grants list or the gateway's log:\n%s\n%s", table, g.Log.String())
		}
	}

	// The access token is due (it expires within the refresh margin): the
	// call refreshes it without asking, and goes out with the new one.
	time.Sleep(time.Until(rows[0].Expiry.Add(-time.Second + 50*time.Millisecond)))
	res = call(t, cs, "listPets", nil)
	wantOK(t, "listPets after expiry", res)
	renewed := api.Up.last(t, "/pets")
	if renewed.Token == first || !renewed.Active || renewed.Sub != "alice" || len(alice.questions()) != 1 {
		t.Fatalf("after expiry the upstream saw %+v (the first token %t) and the user was asked %d times; want a refreshed token of alice, asked once",
			renewed, renewed.Token == first, len(alice.questions()))
	}
	if after := listGrants(t, api.Env, cfg); len(after) != 1 || !after[0].Expiry.After(rows[0].Expiry) {
		t.Fatalf("after the refresh: %+v, want one grant expiring after %v", after, rows[0].Expiry)
	}

	// Disconnect: the grant is gone here and revoked there; the next call
	// asks again (and the user says no: nothing reaches the upstream).
	res = call(t, cs, "disconnect_api", nil)
	wantOK(t, "disconnect_api", res)
	if !strings.Contains(text(res), "disconnected") {
		t.Fatalf("disconnect_api: %s", text(res))
	}
	if rows := listGrants(t, api.Env, cfg); len(rows) != 0 {
		t.Fatalf("grants after disconnect: %+v", rows)
	}
	if api.active(t, renewed.Token) {
		t.Error("the access token is still active at the authorization server after disconnect")
	}
	alice.setDecline(true)
	wantError(t, "listPets after disconnect", call(t, cs, "listPets", nil), "did not connect")
	if n, calls := len(alice.questions()), len(api.Up.requests("/pets")); n != 2 || calls != 2 {
		t.Fatalf("after disconnect: asked %d times (want 2), the upstream called %d times (want 2)", n, calls)
	}

	// Connected again, then revoked by the operator.
	alice.setDecline(false)
	wantOK(t, "listPets connected again", call(t, cs, "listPets", nil))
	again := api.Up.last(t, "/pets")
	rows = listGrants(t, api.Env, cfg)
	if len(alice.questions()) != 3 || len(rows) != 1 || again.Sub != "alice" {
		t.Fatalf("connecting again: asked %d times, grants %+v, upstream %+v", len(alice.questions()), rows, again)
	}
	out := grantsCLI(t, api.Env, "revoke", "--config", cfg, "--api", "api", "--subject", rows[0].Subject)
	if !strings.Contains(out, "revoked the grant of subject") {
		t.Fatalf("mcpgate grants revoke: %s", out)
	}
	if api.active(t, again.Token) {
		t.Error("the access token is still active at the authorization server after mcpgate grants revoke")
	}
	alice.setDecline(true)
	wantError(t, "listPets after grants revoke", call(t, cs, "listPets", nil), "did not connect")
	if n := len(alice.questions()); n != 4 {
		t.Fatalf("after grants revoke the user was asked %d times in all, want 4", n)
	}
	for _, s := range api.Up.requests("") {
		if s.Token == "alice-mcp-token" {
			t.Fatal("the caller's MCP bearer reached the upstream")
		}
	}
}
