package connect_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestConnectLogin: with Options.Login the connect page signs the browser
// in at the callers' identity provider (here the same oidc-provider) and
// lets only the link's own caller go on; a link sent to someone else is
// refused for them, and the code form is closed.
func TestConnectLogin(t *testing.T) {
	g := newGateway(t, setup{login: true})

	first := g.call(t, "alice", urlCaps, "listPets", nil)
	link, _ := g.askedToConnect(t, first)
	b := newBrowser()
	// The link leads to the sign-in, then (same browser, same account) to
	// the API's authorization, then back to the gateway.
	p := b.authorize(t, b.get(t, link), "alice")
	if p.Status != http.StatusOK || !strings.Contains(p.Body, "is connected") {
		t.Fatalf("connect with sign-in: HTTP %d: %s", p.Status, p.Body)
	}
	retry := g.call(t, "alice", urlCaps, "listPets", map[string]any{
		"requestState": first.RequestState, "inputResponses": map[string]any{"connect": map[string]any{"action": "accept"}},
	})
	if retry.IsError || !strings.Contains(retry.text(), `"owner":"alice"`) {
		t.Fatalf("retry: %s", retry.text())
	}
	// The link is spent.
	if p := newBrowser().authorize(t, newBrowser().get(t, link), "alice"); p.Status == http.StatusOK && strings.Contains(p.Body, "is connected") {
		t.Fatal("a spent link connected again")
	}

	t.Run("phished link", func(t *testing.T) {
		// Mallory's client gets a link bound to mallory and sends it to bob.
		link, _ := g.askedToConnect(t, g.call(t, "mallory", urlCaps, "listPets", nil))
		bob := newBrowser()
		p := bob.authorize(t, bob.get(t, link), "bob")
		if p.Status != http.StatusForbidden || !strings.Contains(p.Body, "another user") {
			t.Fatalf("bob completing mallory's link: HTTP %d: %s", p.Status, p.Body)
		}
		if g.hasGrant(t, "mallory") || g.hasGrant(t, "bob") {
			t.Fatalf("grants %+v", g.grants(t))
		}
		// Mallory herself cannot use it afterwards either: one attempt.
		m := newBrowser()
		if p := m.authorize(t, m.get(t, link), "mallory"); p.Status != http.StatusForbidden {
			t.Fatalf("the link after a refused sign-in: HTTP %d: %s", p.Status, p.Body)
		}
	})

	t.Run("no code form", func(t *testing.T) {
		link, _ := g.askedToConnect(t, g.call(t, "carol", urlCaps, "listPets", nil))
		u, _ := url.Parse(link)
		s := u.Query().Get("s")
		u.RawQuery = ""
		if p := newBrowser().post(t, u.String(), url.Values{"s": {s}, "code": {"AAAA-AAAA"}}); p.Status != http.StatusForbidden {
			t.Fatalf("code form with sign-in on: HTTP %d: %s", p.Status, p.Body)
		}
	})

	t.Run("forged login state", func(t *testing.T) {
		if p := newBrowser().get(t, g.URL+"/connect/.login?code=x&state=AAAAAAAAAAAAAAAAAAAAAA"); p.Status != http.StatusBadRequest {
			t.Fatalf("HTTP %d: %s", p.Status, p.Body)
		}
	})
	if len(g.grants(t)) != 1 {
		t.Errorf("grants %+v, want alice's only", g.grants(t))
	}
}
