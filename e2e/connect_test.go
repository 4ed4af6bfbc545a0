package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/mcpgate/mcpgate/internal/oidctest"
)

// The users' own accounts at an API (credentials mode oauth, package
// connect) through the real binary, against a real authorization server
// (oidc-provider, package internal/oidctest). The world is in
// connect_env_test.go. The only waits on the clock are for an access token
// to become due (connect.refresh_margin before the expiry that `mcpgate
// grants list` shows): nothing but time signals that.

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
	api, g, cfg := startConnectGateway(t, worldOptions{accessTTL: ttl}, "")
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

// urlCaps are the capabilities of a raw client that opens links.
var urlCaps = map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}

// askLink calls listPets as bearer from a client with URL-mode elicitation
// and returns the connect link and code it is asked to complete (no code
// with connect.login).
func askLink(t *testing.T, url, bearer string) (link, code string) {
	t.Helper()
	res, e := rpcAs(t, url, bearer, urlCaps, "tools/call", "listPets", map[string]any{"name": "listPets", "arguments": map[string]any{}})
	in, _ := res["inputRequests"].(map[string]any)
	connect, _ := in["connect"].(map[string]any)
	params, _ := connect["params"].(map[string]any)
	link, _ = params["url"].(string)
	msg, _ := params["message"].(string)
	if e != nil || res["resultType"] != "input_required" || params["mode"] != "url" || link == "" {
		t.Fatalf("listPets: want a URL elicitation, got %v %v", res, e)
	}
	return link, connectCode.FindString(msg)
}

// TestConnectRefused: the callbacks and browsers that must not get a grant
// through the binary: a forged or replayed state, a link completed by
// someone without its code, a callback taken in another caller's browser,
// a code issued to another client. Each is refused and nothing is stored,
// as `mcpgate grants list` shows.
func TestConnectRefused(t *testing.T) {
	api, g, cfg := startConnectGateway(t, worldOptions{}, "")
	callback := g.Base + "/connect/api/callback"
	noGrants := func(t *testing.T) {
		t.Helper()
		if rows := listGrants(t, api.Env, cfg); len(rows) != 0 {
			t.Fatalf("grants stored: %+v", rows)
		}
	}
	// untilCallback completes link in b as login and stops at the redirect
	// into the gateway's callback, which it returns.
	untilCallback := func(t *testing.T, b *oidctest.Browser, link, code, login string) string {
		t.Helper()
		b.StopAt = atCallback
		defer func() { b.StopAt = nil }()
		stop := completeConnect(t, b, link, code, login)
		if stop.Status != http.StatusSeeOther || !strings.HasPrefix(stop.Location, callback+"?") {
			t.Fatalf("want the redirect to the callback, got HTTP %d %q: %s", stop.Status, stop.Location, stop.Body)
		}
		return stop.Location
	}

	t.Run("forged state", func(t *testing.T) {
		b := oidctest.NewBrowser()
		forged := callback + "?code=abc&state=AAAAAAAAAAAAAAAAAAAAAA"
		if p := b.Get(t, forged); p.Status != http.StatusBadRequest {
			t.Errorf("forged state: HTTP %d: %s", p.Status, p.Body)
		}
		// A flow cookie the gateway did not seal does not open either.
		b.SetCookies(g.Base, []*http.Cookie{{Name: "mcpgate-connect-AAAAAAAAAAAAAAAAAAAAAA", Value: "AQJrMQ" + strings.Repeat("A", 60), Path: "/"}})
		if p := b.Get(t, forged); p.Status != http.StatusBadRequest {
			t.Errorf("forged cookie: HTTP %d: %s", p.Status, p.Body)
		}
		noGrants(t)
	})

	t.Run("replayed state", func(t *testing.T) {
		link, code := askLink(t, g.URL, "dave-token")
		b := oidctest.NewBrowser()
		cb := untilCallback(t, b, link, code, "dave")
		cookies := b.Cookies(g.Base)
		if p := b.Get(t, cb); !connected(p) {
			t.Fatalf("first callback: HTTP %d: %s", p.Status, p.Body)
		}
		rows := listGrants(t, api.Env, cfg)
		if len(rows) != 1 {
			t.Fatalf("grants after dave's callback: %+v", rows)
		}
		grantsCLI(t, api.Env, "revoke", "--config", cfg, "--api", "api", "--subject", rows[0].Subject)
		// The same callback again, its flow cookie put back.
		b.SetCookies(g.Base, cookies)
		if p := b.Get(t, cb); p.Status == http.StatusOK || !strings.Contains(p.Body, "already completed") {
			t.Fatalf("replayed callback: HTTP %d: %s", p.Status, p.Body)
		}
		// And the link itself is spent.
		if p := connectPage(t, oidctest.NewBrowser(), link, code); p.Status != http.StatusForbidden || !strings.Contains(p.Body, "already used") {
			t.Errorf("reused link: HTTP %d: %s", p.Status, p.Body)
		}
		noGrants(t)
	})

	t.Run("link completed by someone else", func(t *testing.T) {
		link, code := askLink(t, g.URL, "erin-token")
		// Mallory got the link, not the code the client showed erin.
		if p := connectPage(t, oidctest.NewBrowser(), link, "AAAA-AAAA"); p.Status != http.StatusForbidden {
			t.Fatalf("wrong code: HTTP %d: %s", p.Status, p.Body)
		}
		// One attempt per link: now even erin's right code is refused.
		if p := connectPage(t, oidctest.NewBrowser(), link, code); p.Status != http.StatusForbidden {
			t.Fatalf("the right code after a wrong one: HTTP %d: %s", p.Status, p.Body)
		}
		noGrants(t)
	})

	t.Run("callback in another caller's browser", func(t *testing.T) {
		link, code := askLink(t, g.URL, "erin-token")
		erin := oidctest.NewBrowser()
		erinCallback := untilCallback(t, erin, link, code, "erin")
		// Mallory's browser, with a flow of her own under way, gets erin's callback.
		mlink, mcode := askLink(t, g.URL, "mallory-token")
		mallory := oidctest.NewBrowser()
		untilCallback(t, mallory, mlink, mcode, "mallory")
		if p := mallory.Get(t, erinCallback); p.Status != http.StatusBadRequest {
			t.Fatalf("erin's callback in mallory's browser: HTTP %d: %s", p.Status, p.Body)
		}
		noGrants(t)
		// Erin's own browser still completes it, for erin alone.
		if p := erin.Get(t, erinCallback); !connected(p) {
			t.Fatalf("erin's callback in erin's browser: HTTP %d: %s", p.Status, p.Body)
		}
		res, e := rpcAs(t, g.URL, "erin-token", urlCaps, "tools/call", "listPets", map[string]any{"name": "listPets", "arguments": map[string]any{}})
		if e != nil || res["resultType"] != "complete" || res["isError"] == true || !strings.Contains(fmt.Sprint(res["content"]), `"owner":"erin"`) {
			t.Fatalf("erin's call after connecting: %v %v", res, e)
		}
		askLink(t, g.URL, "mallory-token") // mallory still has nothing
		rows := listGrants(t, api.Env, cfg)
		if len(rows) != 1 {
			t.Fatalf("grants %+v, want erin's alone", rows)
		}
		grantsCLI(t, api.Env, "revoke", "--config", cfg, "--api", "api", "--subject", rows[0].Subject)
	})

	t.Run("code for another client", func(t *testing.T) {
		link, code := askLink(t, g.URL, "frank-token")
		b := oidctest.NewBrowser()
		cb, _ := url.Parse(untilCallback(t, b, link, code, "frank"))
		// The same user authorizes another client of the same server, whose
		// redirect URI is the gateway's too; its code replaces the gateway's.
		b.StopAt = atCallback
		verifier := strings.Repeat("v", 43)
		other := b.Authorize(t, b.Get(t, api.AS.AuthURL()+"?"+url.Values{
			"client_id": {api.Other.ID}, "response_type": {"code"}, "scope": {"openid"}, "state": {"x"},
			"redirect_uri": {api.Other.RedirectURIs[0]}, "code_challenge_method": {"S256"}, "code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)},
		}.Encode()), "frank")
		b.StopAt = nil
		oc, _ := url.Parse(other.Location)
		if oc.Query().Get("code") == "" {
			t.Fatalf("no code for the other client: HTTP %d %q %s", other.Status, other.Location, other.Body)
		}
		q := cb.Query()
		q.Set("code", oc.Query().Get("code"))
		cb.RawQuery = q.Encode()
		if p := b.Get(t, cb.String()); p.Status == http.StatusOK || !strings.Contains(p.Body, "did not accept the authorization") {
			t.Fatalf("another client's code: HTTP %d: %s", p.Status, p.Body)
		}
		noGrants(t)
	})

	noGrants(t)
	if calls := api.Up.requests(""); len(calls) != 1 || calls[0].Sub != "erin" {
		t.Errorf("the upstream saw %+v, want erin's one call", calls)
	}
}

// connectLink is a connect link in a tool error's text.
var connectLink = regexp.MustCompile(`http://127\.0\.0\.1:\d+/connect/api\?s=[A-Za-z0-9_-]+`)

// TestConnectWithoutURLElicitation: a client that cannot open links (form
// elicitation only, or none) gets a tool error naming the gateway's connect
// link and code; completing that link in a browser connects the account,
// and the next call goes through.
func TestConnectWithoutURLElicitation(t *testing.T) {
	api, g, _ := startConnectGateway(t, worldOptions{}, "")
	hank := newUser(t, "hank")
	for _, tc := range []struct {
		name string
		caps *sdk.ElicitationCapabilities
	}{
		{"form elicitation only", &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}}},
		{"no elicitation", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := hank.client(t, g.URL, "hank-token-"+strings.ReplaceAll(tc.name, " ", "-"), tc.caps)
			res := call(t, cs, "listPets", nil)
			wantError(t, "listPets", res, "Pet Store", "no URL-mode elicitation", "Open "+g.Base+"/connect/api?s=")
			link, code := connectLink.FindString(text(res)), connectCode.FindString(text(res))
			if link == "" || code == "" || len(hank.questions()) != 0 {
				t.Fatalf("want a link and a code in the error, and no elicitation; got %q %q, %d elicitations", link, code, len(hank.questions()))
			}
			if p := completeConnect(t, oidctest.NewBrowser(), link, code, "hank"); !connected(p) {
				t.Fatalf("the link of the error: HTTP %d: %s", p.Status, p.Body)
			}
			res = call(t, cs, "listPets", nil)
			wantOK(t, "listPets after connecting", res)
			if !strings.Contains(text(res), `"owner":"hank"`) {
				t.Fatalf("listPets after connecting: %s", text(res))
			}
		})
	}
	if n := len(api.Up.requests("/pets")); n != 2 {
		t.Errorf("the upstream was called %d times, want 2 (once per client, after connecting)", n)
	}
}

// onEachStore runs test on a new SQLite file and on a new PostgreSQL
// schema (skipped without MCPGATE_TEST_POSTGRES, failed in CI).
func onEachStore(t *testing.T, test func(t *testing.T, store string)) {
	t.Run("SQLite", func(t *testing.T) { test(t, "sqlite:"+filepath.Join(t.TempDir(), "mcpgate.db")) })
	t.Run("PostgreSQL", func(t *testing.T) {
		dsn, _, _ := clusterDSN(t)
		test(t, dsn)
	})
}

// TestConnectAcrossReplicas: two gateway processes on one store (SQLite,
// PostgreSQL) behind a balancer (connect.base_url is the balancer's). The
// flow starts on one (the call, the connect page), the callback lands on
// the other, and the caller calls on either; once the token is due, one
// replica refreshes it and the other uses the refreshed token it finds in
// the store.
func TestConnectAcrossReplicas(t *testing.T) { onEachStore(t, testConnectAcrossReplicas) }

func testConnectAcrossReplicas(t *testing.T, store string) {
	lb := newBalancer(t)
	api := newConnectAPI(t, lb.URL, worldOptions{accessTTL: 6 * time.Second})
	cfg := api.config(t, lb.URL, store, "")
	a := startGateway(t, api.Env, "--config", cfg)
	b := startGateway(t, api.Env, "--config", cfg)
	lb.to("A", a)
	alice := newUser(t, "alice")
	alice.beforeCallback = func() { lb.to("B", b) }

	onA := alice.client(t, a.URL, "alice-mcp-token", urlMode)
	wantOK(t, "listPets on A", call(t, onA, "listPets", nil))
	if !connected(alice.lastPage()) {
		t.Fatalf("the browser did not end on the connected page: HTTP %d: %s", alice.lastPage().Status, alice.lastPage().Body)
	}
	page, confirm, cb := lb.servedBy("GET", "/connect/api"), lb.servedBy("POST", "/connect/api"), lb.servedBy("GET", "/connect/api/callback")
	if !slices.Equal(page, []string{"A"}) || !slices.Equal(confirm, []string{"A"}) || !slices.Equal(cb, []string{"B"}) {
		t.Fatalf("connect page on %v, confirmed on %v, callback on %v; want A, A, B", page, confirm, cb)
	}
	onB := alice.client(t, b.URL, "alice-mcp-token", urlMode)
	wantOK(t, "listPets on B", call(t, onB, "listPets", nil))
	calls := api.Up.requests("/pets")
	if len(calls) != 2 || calls[0].Token != calls[1].Token || calls[1].Sub != "alice" || len(alice.questions()) != 1 {
		t.Fatalf("the upstream saw %+v and the user was asked %d times; want alice's one token twice, asked once", calls, len(alice.questions()))
	}

	rows := listGrants(t, api.Env, cfg)
	if len(rows) != 1 {
		t.Fatalf("grants: %+v", rows)
	}
	time.Sleep(time.Until(rows[0].Expiry.Add(-time.Second + 50*time.Millisecond)))
	wantOK(t, "listPets on B once due", call(t, onB, "listPets", nil))
	wantOK(t, "listPets on A after B's refresh", call(t, onA, "listPets", nil))
	calls = api.Up.requests("/pets")
	if len(calls) != 4 || calls[2].Token == calls[0].Token || calls[3].Token != calls[2].Token || !calls[3].Active || calls[3].Sub != "alice" {
		t.Fatalf("after expiry the upstream saw %+v; want one refreshed token of alice on both replicas", calls[2:])
	}
	if len(alice.questions()) != 1 {
		t.Fatalf("the user was asked %d times, want once", len(alice.questions()))
	}
}

// TestConnectTaskFailover (on SQLite and PostgreSQL): task tools of an
// oauth API. The task tool itself asks the caller to connect
// before any task exists; the worker calls with the user's grant. Replica
// A (one worker) runs a report the API accepted (polling its Location)
// while a second waits in its queue; A is killed with SIGKILL and replica
// B takes both over: every request after the kill is the user's too, and
// both reports complete, each started once.
func TestConnectTaskFailover(t *testing.T) { onEachStore(t, testConnectTaskFailover) }

func testConnectTaskFailover(t *testing.T, store string) {
	lb := newBalancer(t)
	api := newConnectAPI(t, lb.URL, worldOptions{})
	cfg := api.config(t, lb.URL, store, "task_lease: 2s\ntask_concurrency: 1\n")
	a := startGateway(t, api.Env, "--config", cfg)
	b := startGateway(t, api.Env, "--config", cfg)
	lb.to("A", a)
	caps := map[string]any{"elicitation": map[string]any{"url": map[string]any{}}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
	args := map[string]any{"name": "createReport", "arguments": map[string]any{"kind": "r1"}}

	res, e := rpcAs(t, a.URL, "cluster-user", caps, "tools/call", "createReport", args)
	in, _ := res["inputRequests"].(map[string]any)
	params, _ := in["connect"].(map[string]any)["params"].(map[string]any)
	if e != nil || res["resultType"] != "input_required" || params == nil {
		t.Fatalf("createReport without a grant: want a connect round, got %v %v", res, e)
	}
	link, _ := params["url"].(string)
	msg, _ := params["message"].(string)
	if p := completeConnect(t, oidctest.NewBrowser(), link, connectCode.FindString(msg), "alice"); !connected(p) {
		t.Fatalf("connect: HTTP %d: %s", p.Status, p.Body)
	}
	args["requestState"] = res["requestState"]
	args["inputResponses"] = map[string]any{"connect": map[string]any{"action": "accept"}}
	res, e = rpcAs(t, a.URL, "cluster-user", caps, "tools/call", "createReport", args)
	if e != nil || res["resultType"] != "task" {
		t.Fatalf("createReport after connecting: want a task, got %v %v", res, e)
	}
	ids := []string{res["taskId"].(string), startTask(t, a.URL, "createReport", map[string]any{"kind": "r2"})}
	select {
	case <-api.Up.Reports.firstPoll(1):
	case <-time.After(20 * time.Second):
		t.Fatalf("report r1 was never polled\n%s", a.Log.String())
	}
	a.crash()
	killed := time.Now()

	api.Up.Reports.finishAll()
	for i, id := range ids {
		res := awaitTask(t, b.URL, id, 60*time.Second)
		if res["status"] != "completed" || !strings.Contains(fmt.Sprint(res["result"]), "status:done") {
			t.Errorf("task r%d ended %v: %v", i+1, res["status"], res)
		}
	}
	for _, kind := range []string{"r1", "r2"} {
		if n := api.Up.Reports.postsOf(kind); n != 1 {
			t.Errorf("report %s was started %d times, want once", kind, n)
		}
	}
	after := 0
	for _, s := range api.Up.requests("/reports") {
		if !s.Active || s.Sub != "alice" {
			t.Errorf("the upstream got %s %s with a token that is not alice's (active %t, sub %q)", s.Method, s.Path, s.Active, s.Sub)
		}
		if s.At.After(killed) {
			after++
		}
	}
	if after == 0 {
		t.Fatal("no request reached the upstream after the kill: B did not take the tasks over")
	}
	t.Logf("%d requests to /reports after the SIGKILL, all with alice's token", after)
}

// TestConnectLogin: with auth mode oauth and connect.login the callers are
// users of an identity provider (here the same oidc-provider, issuing JWTs
// for the gateway's /mcp), and the connect page signs the browser in there
// and goes on only for the caller the link was made for: the check MCP
// requires for URL mode. Alice connects without a code; a link made for
// mallory and completed by bob, signed in as bob, is refused, and nothing
// is stored for either.
func TestConnectLogin(t *testing.T) {
	api, g, cfg := startConnectGateway(t, worldOptions{login: true}, "")
	token := func(login string) string {
		return api.AS.UserToken(t, oidctest.NewBrowser(), api.MCPClient, login, g.Base+"/mcp", "openid mcp")
	}
	alice := newUser(t, "alice")
	cs := alice.client(t, g.URL, token("alice"), urlMode)
	res := call(t, cs, "listPets", nil)
	q := alice.questions()
	if len(q) != 1 || q[0].Mode != "url" || connectCode.MatchString(q[0].Message) || !strings.Contains(q[0].Message, "sign in to the gateway") {
		t.Fatalf("want one URL elicitation asking to sign in, without a code; got %+v", q)
	}
	if !connected(alice.lastPage()) {
		t.Fatalf("alice's browser: HTTP %d: %s", alice.lastPage().Status, alice.lastPage().Body)
	}
	wantOK(t, "listPets", res)
	if !strings.Contains(text(res), `"owner":"alice"`) {
		t.Fatalf("listPets: %s", text(res))
	}
	if rows := listGrants(t, api.Env, cfg); len(rows) != 1 || rows[0].Subject != "alice" {
		t.Fatalf("grants %+v, want alice's, under her token's subject", rows)
	}

	// Mallory's client gets a link bound to mallory and sends it to bob.
	link, _ := askLink(t, g.URL, token("mallory"))
	bob := oidctest.NewBrowser()
	if p := bob.Authorize(t, bob.Get(t, link), "bob"); p.Status != http.StatusForbidden || !strings.Contains(p.Body, "another user") {
		t.Fatalf("bob completing mallory's link: HTTP %d: %s", p.Status, p.Body)
	}
	// One attempt per link: mallory herself cannot use it afterwards.
	m := oidctest.NewBrowser()
	if p := m.Authorize(t, m.Get(t, link), "mallory"); p.Status != http.StatusForbidden {
		t.Fatalf("the link after a refused sign-in: HTTP %d: %s", p.Status, p.Body)
	}
	if rows := listGrants(t, api.Env, cfg); len(rows) != 1 || rows[0].Subject != "alice" {
		t.Fatalf("grants %+v, want alice's alone", rows)
	}
	if n := len(api.Up.requests("/pets")); n != 1 {
		t.Errorf("the upstream was called %d times, want once (alice's)", n)
	}
}
