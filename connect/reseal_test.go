package connect

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/mrtr"
	"github.com/mcpgate/mcpgate/secretbox"
)

// TestReseal: after a rotation, Reseal moves every grant to the new key,
// and a ring without the old key then opens them all.
func TestReseal(t *testing.T) {
	ctx := context.Background()
	key := func(id string, b byte) mrtr.Key {
		return mrtr.Key{ID: id, Secret: bytes.Repeat([]byte{b}, mrtr.KeySize)}
	}
	ring := func(keys ...mrtr.Key) *mrtr.KeyRing {
		r, err := mrtr.NewKeyRing(keys...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	store := &MemoryStore{}
	connector := func(r *mrtr.KeyRing) *Connector {
		c, err := New(Options{BaseURL: "https://mcp.example.com", Ring: r, Store: store, Replay: mrtr.NewMemoryReplayCache(0, nil), Logger: slog.New(slog.DiscardHandler)},
			Provider{API: "pets", ClientID: "id", AuthURL: "https://as/auth", TokenURL: "https://as/token"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	old := connector(ring(key("k1", 1)))
	for _, sub := range []string{"alice", "bob"} {
		rec, err := old.grants.seal(Key{API: "pets", Subject: sub}, tokens{AccessToken: "at-" + sub, Expiry: time.Now().Add(time.Hour)}, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Put(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	rotated := connector(ring(key("k2", 2), key("k1", 1)))
	if n, err := rotated.Reseal(ctx, Filter{}); err != nil || n != 2 {
		t.Fatalf("Reseal = %d, %v; want 2", n, err)
	}
	if n, err := rotated.Reseal(ctx, Filter{}); err != nil || n != 0 {
		t.Fatalf("second Reseal = %d, %v; want 0", n, err)
	}
	dropped := connector(ring(key("k2", 2)))
	for _, sub := range []string{"alice", "bob"} {
		k := Key{API: "pets", Subject: sub}
		if at, _, err := dropped.TokensForTest(ctx, k); err != nil || at != "at-"+sub {
			t.Errorf("%s after the old key was dropped: %q, %v", sub, at, err)
		}
		if _, _, err := old.TokensForTest(ctx, k); !errors.Is(err, secretbox.ErrUnknownKey) {
			t.Errorf("%s with only the old key: %v, want ErrUnknownKey", sub, err)
		}
	}
}
