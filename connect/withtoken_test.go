package connect

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/mrtr"
)

func TestWithToken(t *testing.T) {
	ctx := context.Background()
	store := &MemoryStore{}
	c, err := New(Options{BaseURL: "https://mcp.example.com", Ring: mrtr.GenerateKeyRing(slog.New(slog.DiscardHandler)), Store: store,
		Replay: mrtr.NewMemoryReplayCache(0, nil), Logger: slog.New(slog.DiscardHandler)},
		Provider{API: "pets", ClientID: "id", AuthURL: "https://as/auth", TokenURL: "https://as/token"})
	if err != nil {
		t.Fatal(err)
	}
	k := Key{API: "pets", Tenant: "acme", Subject: "alice"}
	rec, _ := c.grants.seal(k, tokens{AccessToken: "at-alice", Expiry: time.Now().Add(time.Hour)}, "")
	if _, err := store.Put(ctx, rec); err != nil {
		t.Fatal(err)
	}
	got, err := c.WithToken(ctx, "pets", mcp.Principal{Subject: "alice", Tenant: "acme"})
	if tok, ok := TokenFrom(got, "pets"); err != nil || !ok || tok != "at-alice" {
		t.Fatalf("WithToken: %q %v %v", tok, ok, err)
	}
	if _, ok := TokenFrom(got, "slack"); ok {
		t.Error("a token for another API")
	}
	for _, p := range []mcp.Principal{{Subject: "alice"}, {Subject: "bob", Tenant: "acme"}, {}} {
		if _, err := c.WithToken(ctx, "pets", p); !errors.Is(err, ErrNoGrant) {
			t.Errorf("WithToken(%+v) = %v, want ErrNoGrant", p, err)
		}
	}
	if _, err := c.WithToken(ctx, "slack", mcp.Principal{Subject: "alice"}); err == nil {
		t.Error("WithToken for an API that is not configured")
	}
}
