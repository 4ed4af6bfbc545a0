package connect_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/internal/oidctest"
	"github.com/mcpgate/mcpgate/mcp"
)

// TestConnectFlow is the whole life of a grant against oidc-provider: first
// call → URL elicitation → login and consent in a browser → callback → the
// retried call reaches the upstream with alice's token → expiry → silent
// refresh → disconnect (revoked at the authorization server) → the next
// call asks again.
func TestConnectFlow(t *testing.T) {
	g := newGateway(t, setup{})
	ctx := context.Background()

	first := g.call(t, "alice", urlCaps, "listPets", nil)
	link, code := g.askedToConnect(t, first)
	if strings.Contains(link, "alice") || strings.Contains(link, strings.ReplaceAll(code, "-", "")) {
		t.Errorf("the link %q carries the caller or the code in the clear", link)
	}
	if n := len(g.upstreamCalls()); n != 0 {
		t.Fatalf("the upstream was called %d times before the user connected", n)
	}

	done := newBrowser().connect(t, link, code, "alice-at-petstore")
	if done.Status != http.StatusOK || !strings.Contains(done.Body, "is connected") {
		t.Fatalf("callback: HTTP %d: %s", done.Status, done.Body)
	}
	recs := g.grants(t)
	if len(recs) != 1 || recs[0].Key != (connect.Key{API: "pets", Subject: "alice"}) || !recs[0].Refreshable {
		t.Fatalf("stored grants %+v, want one refreshable grant of alice", recs)
	}
	access, refresh, err := g.Conn.TokensForTest(ctx, recs[0].Key)
	if err != nil || access == "" || refresh == "" {
		t.Fatalf("stored tokens: %v (access %t, refresh %t)", err, access != "", refresh != "")
	}
	if raw, _ := g.Store.Get(ctx, recs[0].Key); strings.Contains(string(raw.Sealed), access) || strings.Contains(string(raw.Sealed), refresh) {
		t.Fatal("the store holds a token in the clear")
	}

	retry := g.call(t, "alice", urlCaps, "listPets", map[string]any{
		"requestState": first.RequestState, "inputResponses": map[string]any{"connect": map[string]any{"action": "accept"}},
	})
	if retry.ResultType != "complete" || retry.IsError || !strings.Contains(retry.text(), `"owner":"alice-at-petstore"`) {
		t.Fatalf("retried call: %q isError=%t %s", retry.ResultType, retry.IsError, retry.text())
	}
	calls := g.upstreamCalls()
	if len(calls) != 1 || calls[0].Token != access || calls[0].Sub != "alice-at-petstore" {
		t.Fatalf("upstream saw %+v, want alice's access token once", calls)
	}
	// The wrapped tool saw a first round without the connect answer.
	if r := g.toolRounds(); len(r) != 1 || r[0] != 0 {
		t.Errorf("the wrapped tool saw round*100+responses %v, want [0]", r)
	}

	// An hour later the access token has expired: the call refreshes it
	// silently and goes out with the new one.
	g.Clock.advance(time.Hour)
	later := g.call(t, "alice", urlCaps, "listPets", nil)
	if later.ResultType != "complete" || later.IsError {
		t.Fatalf("call after expiry: %q %s", later.ResultType, later.text())
	}
	calls = g.upstreamCalls()
	renewed, rotated, _ := g.Conn.TokensForTest(ctx, recs[0].Key)
	if last := calls[len(calls)-1]; last.Token == access || last.Token != renewed || last.Sub != "alice-at-petstore" {
		t.Fatalf("after expiry the upstream saw %+v, want the refreshed token", last)
	}
	if rotated == refresh {
		t.Error("the refresh token did not rotate")
	}
	if rec, _ := g.Store.Get(ctx, recs[0].Key); rec.Version != 2 {
		t.Errorf("grant version %d after one refresh, want 2", rec.Version)
	}

	// Disconnect: the grant is gone here and revoked there.
	bye := g.call(t, "alice", urlCaps, "disconnect_pets", nil)
	if bye.IsError || !strings.Contains(bye.text(), "disconnected") {
		t.Fatalf("disconnect: %s", bye.text())
	}
	if g.hasGrant(t, "alice") {
		t.Fatal("the grant is still stored after disconnect")
	}
	if g.active(t, renewed) {
		t.Error("the access token is still active at the authorization server after disconnect")
	}
	again := g.call(t, "alice", urlCaps, "listPets", nil)
	g.askedToConnect(t, again)
	if n := len(g.upstreamCalls()); n != 2 {
		t.Errorf("the upstream was called %d times, want 2 (nothing after the disconnect)", n)
	}
	if again := g.call(t, "alice", urlCaps, "disconnect_pets", nil); !strings.Contains(again.text(), "No Pet Store account") {
		t.Errorf("second disconnect: %s", again.text())
	}
}

// TestConnectRefreshRefused: when the authorization server refuses the
// refresh (the user revoked the grant there), the call asks to connect
// again and the dead grant is dropped.
func TestConnectRefreshRefused(t *testing.T) {
	g := newGateway(t, setup{})
	ctx := context.Background()
	link, code := g.askedToConnect(t, g.call(t, "bob", urlCaps, "listPets", nil))
	if p := newBrowser().connect(t, link, code, "bob"); p.Status != http.StatusOK {
		t.Fatalf("connect: HTTP %d: %s", p.Status, p.Body)
	}
	_, refresh, err := g.Conn.TokensForTest(ctx, connect.Key{API: "pets", Subject: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	g.revoke(t, refresh, "refresh_token")
	g.Clock.advance(2 * time.Hour)
	r := g.call(t, "bob", urlCaps, "listPets", nil)
	g.askedToConnect(t, r)
	if g.hasGrant(t, "bob") {
		t.Error("the refused grant is still stored")
	}
	if n := len(g.upstreamCalls()); n != 0 {
		t.Errorf("the upstream was called %d times with a dead grant", n)
	}
}

// TestConnectRefused: the callers and browsers that must not get a grant.
func TestConnectRefused(t *testing.T) {
	g := newGateway(t, setup{})
	ctx := context.Background()
	noGrants := func(t *testing.T) {
		t.Helper()
		if recs := g.grants(t); len(recs) != 0 {
			t.Fatalf("grants stored: %+v", recs)
		}
	}

	t.Run("forged state", func(t *testing.T) {
		b := newBrowser()
		p := b.get(t, g.URL+"/connect/pets/callback?code=abc&state=AAAAAAAAAAAAAAAAAAAAAA")
		if p.Status != http.StatusBadRequest {
			t.Errorf("HTTP %d: %s", p.Status, p.Body)
		}
		// A cookie the gateway did not seal does not open either.
		b.SetCookies(g.URL, []*http.Cookie{{Name: "mcpgate-connect-AAAAAAAAAAAAAAAAAAAAAA", Value: "AQJrMQ" + strings.Repeat("A", 60), Path: "/"}})
		if p := b.get(t, g.URL+"/connect/pets/callback?code=abc&state=AAAAAAAAAAAAAAAAAAAAAA"); p.Status != http.StatusBadRequest {
			t.Errorf("forged cookie: HTTP %d: %s", p.Status, p.Body)
		}
		noGrants(t)
	})

	t.Run("replayed state", func(t *testing.T) {
		link, code := g.askedToConnect(t, g.call(t, "dave", urlCaps, "listPets", nil))
		b := newBrowser()
		stop := b.untilCallback(t, link, code, "dave")
		cookies := b.Cookies(g.URL)
		if p := b.get(t, stop.Location); p.Status != http.StatusOK {
			t.Fatalf("first callback: HTTP %d: %s", p.Status, p.Body)
		}
		if _, err := g.Conn.Revoke(ctx, connect.Key{API: "pets", Subject: "dave"}); err != nil {
			t.Fatal(err)
		}
		// Replay the callback with its flow cookie put back.
		b.SetCookies(g.URL, cookies)
		if p := b.get(t, stop.Location); p.Status == http.StatusOK {
			t.Fatalf("replayed callback accepted: %s", p.Body)
		}
		// And the link itself is spent.
		if p := b.confirm(t, link, code); p.Status != http.StatusForbidden || !strings.Contains(p.Body, "already used") {
			t.Errorf("reused link: HTTP %d: %s", p.Status, p.Body)
		}
		noGrants(t)
	})

	t.Run("link opened by another person", func(t *testing.T) {
		link, code := g.askedToConnect(t, g.call(t, "erin", urlCaps, "listPets", nil))
		mallory := newBrowser()
		if p := mallory.confirm(t, link, "AAAA-AAAA"); p.Status != http.StatusForbidden {
			t.Fatalf("wrong code: HTTP %d: %s", p.Status, p.Body)
		}
		// One guess per link: now even the right code is refused.
		if p := newBrowser().confirm(t, link, code); p.Status != http.StatusForbidden {
			t.Fatalf("right code after a wrong one: HTTP %d: %s", p.Status, p.Body)
		}
		noGrants(t)
	})

	t.Run("callback in another browser", func(t *testing.T) {
		link, code := g.askedToConnect(t, g.call(t, "erin", urlCaps, "listPets", nil))
		erin := newBrowser()
		stop := erin.untilCallback(t, link, code, "erin")
		// Mallory's browser, with a flow of its own under way, gets erin's callback.
		mlink, mcode := g.askedToConnect(t, g.call(t, "mallory", urlCaps, "listPets", nil))
		mallory := newBrowser()
		mallory.untilCallback(t, mlink, mcode, "mallory")
		if p := mallory.get(t, stop.Location); p.Status != http.StatusBadRequest {
			t.Fatalf("erin's callback in mallory's browser: HTTP %d: %s", p.Status, p.Body)
		}
		noGrants(t)
		// Erin's own browser still completes it, for erin.
		if p := erin.get(t, stop.Location); p.Status != http.StatusOK {
			t.Fatalf("erin's callback: HTTP %d: %s", p.Status, p.Body)
		}
		if !g.hasGrant(t, "erin") || g.hasGrant(t, "mallory") {
			t.Fatalf("grants %+v, want erin's only", g.grants(t))
		}
		if _, err := g.Conn.Revoke(ctx, connect.Key{API: "pets", Subject: "erin"}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("code for another client", func(t *testing.T) {
		link, code := g.askedToConnect(t, g.call(t, "frank", urlCaps, "listPets", nil))
		b := newBrowser()
		stop := b.untilCallback(t, link, code, "frank")
		cb, _ := url.Parse(stop.Location)
		// The same user authorizes another client of the same server, whose
		// redirect URI is the gateway's too; its code replaces ours.
		b.StopAt = atCallback
		verifier := strings.Repeat("v", 43)
		other := b.authorize(t, b.get(t, g.AS.AuthURL()+"?"+url.Values{
			"client_id": {g.Other.ID}, "response_type": {"code"}, "scope": {"openid"}, "state": {"x"},
			"redirect_uri": {g.Other.RedirectURIs[0]}, "code_challenge_method": {"S256"}, "code_challenge": {s256(verifier)},
		}.Encode()), "frank")
		oc, _ := url.Parse(other.Location)
		otherCode := oc.Query().Get("code")
		if otherCode == "" {
			t.Fatalf("no code for the other client: HTTP %d %q %s", other.Status, other.Location, other.Body)
		}
		q := cb.Query()
		q.Set("code", otherCode)
		cb.RawQuery = q.Encode()
		b.StopAt = nil
		if p := b.get(t, cb.String()); p.Status == http.StatusOK || !strings.Contains(p.Body, "did not accept the authorization") {
			t.Fatalf("another client's code: HTTP %d: %s", p.Status, p.Body)
		}
		noGrants(t)
	})

	t.Run("authorization denied", func(t *testing.T) {
		link, code := g.askedToConnect(t, g.call(t, "gina", urlCaps, "listPets", nil))
		b := newBrowser()
		b.StopAt = atCallback
		stop := b.confirm(t, link, code) // on the authorization server's login page
		if stop.Status != http.StatusOK {
			t.Fatalf("login page: HTTP %d", stop.Status)
		}
		if oidctest.FormAction(stop) == "" {
			t.Fatal("no login form")
		}
		// The user aborts: the server redirects back with error=access_denied.
		abort := stop.URL.String()
		abortURL, _ := stop.URL.Parse(strings.TrimSuffix(abort, "/") + "/abort")
		p := b.get(t, abortURL.String())
		if p.Status == http.StatusSeeOther {
			b.StopAt = nil
			p = b.get(t, p.Location)
		}
		if p.Status != http.StatusForbidden || !strings.Contains(p.Body, "did not grant access") {
			t.Fatalf("denied: HTTP %d: %s", p.Status, p.Body)
		}
		noGrants(t)
	})

	t.Run("client without URL elicitation", func(t *testing.T) {
		r := g.call(t, "hank", mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}, "listPets", nil)
		if r.ResultType != "complete" || !r.IsError || !strings.Contains(r.text(), g.URL+"/connect/pets?s=") {
			t.Fatalf("want a tool error naming the connect link, got %q %s", r.ResultType, r.text())
		}
		// The link and code in the message work like an elicitation's.
		link := r.text()[strings.Index(r.text(), g.URL):]
		link = link[:strings.IndexByte(link, ' ')]
		if p := newBrowser().connect(t, link, codeIn(t, r.text()), "hank"); p.Status != http.StatusOK {
			t.Fatalf("connect from the message: HTTP %d: %s", p.Status, p.Body)
		}
		if r := g.call(t, "hank", mcp.ClientCapabilities{}, "listPets", nil); r.IsError {
			t.Fatalf("call after connecting: %s", r.text())
		}
		if _, err := g.Conn.Revoke(ctx, connect.Key{API: "pets", Subject: "hank"}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("declined", func(t *testing.T) {
		first := g.call(t, "ivy", urlCaps, "listPets", nil)
		g.askedToConnect(t, first)
		r := g.call(t, "ivy", urlCaps, "listPets", map[string]any{
			"requestState": first.RequestState, "inputResponses": map[string]any{"connect": map[string]any{"action": "decline"}},
		})
		if !r.IsError || !strings.Contains(r.text(), "did not connect") {
			t.Fatalf("declined: %q %s", r.ResultType, r.text())
		}
	})

	t.Run("anonymous caller", func(t *testing.T) {
		r := g.call(t, "", urlCaps, "listPets", nil)
		if !r.IsError || !strings.Contains(r.text(), "no authenticated caller") {
			t.Fatalf("anonymous: %q %s", r.ResultType, r.text())
		}
	})

	t.Run("tampered link", func(t *testing.T) {
		link, _ := g.askedToConnect(t, g.call(t, "jack", urlCaps, "listPets", nil))
		bad := link[:len(link)-3] + "AAA"
		if p := newBrowser().get(t, bad); p.Status != http.StatusBadRequest {
			t.Fatalf("tampered link: HTTP %d", p.Status)
		}
		// A link is bound to its API's page.
		if p := newBrowser().get(t, strings.Replace(link, "/connect/pets?", "/connect/other?", 1)); p.Status != http.StatusNotFound {
			t.Fatalf("link on another API's page: HTTP %d", p.Status)
		}
	})
	t.Run("expired link", func(t *testing.T) {
		link, code := g.askedToConnect(t, g.call(t, "lena", urlCaps, "listPets", nil))
		g.Clock.advance(11 * time.Minute)
		if p := newBrowser().get(t, link); p.Status != http.StatusBadRequest || !strings.Contains(p.Body, "expired") {
			t.Fatalf("expired link: HTTP %d: %s", p.Status, p.Body)
		}
		u, _ := url.Parse(link)
		s := u.Query().Get("s")
		u.RawQuery = ""
		if p := newBrowser().post(t, u.String(), url.Values{"s": {s}, "code": {code}}); p.Status != http.StatusBadRequest {
			t.Fatalf("expired link posted: HTTP %d: %s", p.Status, p.Body)
		}
	})
	noGrants(t)
	if n := len(g.upstreamCalls()); n != 1 { // hank's call
		t.Errorf("the upstream was called %d times, want 1", n)
	}
}

// TestConnectTokenRefusedUpstream: the upstream refuses a token before its
// expiry: the grant is renewed at once (the call says to call again); when
// the tokens were revoked at the authorization server, the user is asked to
// connect again.
func TestConnectTokenRefusedUpstream(t *testing.T) {
	g := newGateway(t, setup{})
	ctx := context.Background()
	k := connect.Key{API: "pets", Subject: "kim"}
	link, code := g.askedToConnect(t, g.call(t, "kim", urlCaps, "listPets", nil))
	if p := newBrowser().connect(t, link, code, "kim"); p.Status != http.StatusOK {
		t.Fatalf("connect: HTTP %d: %s", p.Status, p.Body)
	}
	access, _, _ := g.Conn.TokensForTest(ctx, k)

	g.refuseNext(1)
	r := g.call(t, "kim", urlCaps, "listPets", nil)
	if !r.IsError || !strings.Contains(r.text(), "HTTP 401") || !strings.Contains(r.text(), "has been renewed") {
		t.Fatalf("call refused by the upstream: %q %s", r.ResultType, r.text())
	}
	renewed, _, _ := g.Conn.TokensForTest(ctx, k)
	if renewed == access {
		t.Fatal("the refused access token is still stored")
	}
	if r := g.call(t, "kim", urlCaps, "listPets", nil); r.IsError || !strings.Contains(r.text(), `"owner":"kim"`) {
		t.Fatalf("call after the renewal: %s", r.text())
	}
	if last := g.upstreamCalls(); last[len(last)-1].Token != renewed {
		t.Errorf("the upstream got %q, want the renewed token", last[len(last)-1].Token)
	}

	// The user revokes the access at the authorization server (which, at
	// oidc-provider, revokes every token of the grant): asked again.
	g.revoke(t, renewed, "access_token")
	g.askedToConnect(t, g.call(t, "kim", urlCaps, "listPets", nil))
	if g.hasGrant(t, "kim") {
		t.Error("the revoked grant is still stored")
	}
}
