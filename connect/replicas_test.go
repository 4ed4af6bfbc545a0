package connect_test

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/sqlite"
)

func sqliteStore(t *testing.T) connect.Store {
	t.Helper()
	ctx := context.Background()
	m, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "gateway.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s, err := sqlite.NewGrantStore(ctx, m.DB(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConnectAcrossReplicas: three replicas behind a round-robin balancer
// on one SQLite grant store. The flow's steps land on different replicas
// (link made on one, confirmed on another, callback on a third), and two
// replicas that find the same token expired at once refresh it once: the
// authorization server revokes a whole grant whose rotated refresh token is
// used twice, so a double refresh would show as a lost grant.
func TestConnectAcrossReplicas(t *testing.T) {
	g := newGateway(t, setup{replicas: 3, store: sqliteStore(t)})
	first := g.call(t, "alice", urlCaps, "listPets", nil)
	link, code := g.askedToConnect(t, first)
	if p := newBrowser().connect(t, link, code, "alice"); p.Status != http.StatusOK {
		t.Fatalf("connect: HTTP %d: %s", p.Status, p.Body)
	}
	made := g.replicasServing(http.MethodPost, "/mcp")[0]
	confirmed := g.replicasServing(http.MethodPost, "/connect/pets")[0]
	callback := g.replicasServing(http.MethodGet, "/connect/pets/callback")[0]
	if made == confirmed || confirmed == callback {
		t.Fatalf("replicas link %d, confirm %d, callback %d: the balancer did not spread the flow", made, confirmed, callback)
	}
	retry := g.call(t, "alice", urlCaps, "listPets", map[string]any{
		"requestState": first.RequestState, "inputResponses": map[string]any{"connect": map[string]any{"action": "accept"}},
	})
	if retry.IsError || retry.ResultType != "complete" {
		t.Fatalf("retry: %s", retry.text())
	}

	g.Clock.advance(2 * time.Hour)
	var wg sync.WaitGroup
	results := make([]*toolResult, 2)
	for i := range results {
		wg.Go(func() { results[i] = g.call(t, "alice", urlCaps, "listPets", nil) })
	}
	wg.Wait()
	for i, r := range results {
		if r.ResultType != "complete" || r.IsError {
			t.Errorf("concurrent call %d after expiry: %q %s", i, r.ResultType, r.text())
		}
	}
	rec, err := g.Store.Get(context.Background(), connect.Key{API: "pets", Subject: "alice"})
	if err != nil || rec.Version != 2 {
		t.Fatalf("grant after the concurrent calls: version %d, %v; want one refresh (version 2)", rec.Version, err)
	}
	// The grant is alive at the authorization server: one more call works
	// (back at the real time, where the refreshed token has not expired).
	g.Clock.advance(-2 * time.Hour)
	if r := g.call(t, "alice", urlCaps, "listPets", nil); r.IsError || !strings.Contains(r.text(), `"owner":"alice"`) {
		t.Fatalf("call after the refresh: %s", r.text())
	}
	calls := g.upstreamCalls()
	tokens := map[string]bool{}
	for _, c := range calls {
		if c.Sub != "alice" {
			t.Errorf("the upstream saw an inactive token: %+v", c)
		}
		tokens[c.Token] = true
	}
	if len(tokens) != 2 {
		t.Errorf("the upstream saw %d distinct tokens, want 2 (the first and the one refresh)", len(tokens))
	}
	if rs := g.replicasServing(http.MethodPost, "/mcp"); len(slices.Compact(slices.Sorted(slices.Values(rs)))) < 2 {
		t.Errorf("MCP calls all served by one replica: %v", rs)
	}
}

// TestRefreshedGrantLastsOnTheConnectorsClock: a grant refreshed after the
// connector's clock moved past its expiry is fresh on that clock, so the
// next call uses it instead of refreshing again (the expiry was counted
// from the wall clock, and two calls in a row refreshed twice: the cause
// of TestConnectAcrossReplicas' rare version 3).
func TestRefreshedGrantLastsOnTheConnectorsClock(t *testing.T) {
	g := newGateway(t, setup{replicas: 1, store: sqliteStore(t)})
	first := g.call(t, "alice", urlCaps, "listPets", nil)
	link, code := g.askedToConnect(t, first)
	if p := newBrowser().connect(t, link, code, "alice"); p.Status != http.StatusOK {
		t.Fatalf("connect: HTTP %d: %s", p.Status, p.Body)
	}
	g.Clock.advance(2 * time.Hour)
	for i := range 2 {
		if r := g.call(t, "alice", urlCaps, "listPets", nil); r.IsError || r.ResultType != "complete" {
			t.Fatalf("call %d after expiry: %q %s", i, r.ResultType, r.text())
		}
	}
	rec, err := g.Store.Get(context.Background(), connect.Key{API: "pets", Subject: "alice"})
	if err != nil || rec.Version != 2 {
		t.Fatalf("grant after two calls: version %d, %v; want one refresh (version 2)", rec.Version, err)
	}
}
