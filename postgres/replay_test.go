package postgres_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/mrtr"
	"github.com/mcpgate/mcpgate/postgres"
)

// TestReplayCacheSingleUseAcrossReplicas: many goroutines on two replicas
// use the same jtis at once; each jti has exactly one first use.
func TestReplayCacheSingleUseAcrossReplicas(t *testing.T) {
	schema := newSchema(t)
	caches := []*postgres.ReplayCache{
		postgres.NewReplayCache(open(t, schema, postgres.Options{}), postgres.ReplayOptions{}),
		postgres.NewReplayCache(open(t, schema, postgres.Options{}), postgres.ReplayOptions{}),
	}
	const jtis, goroutines = 50, 8
	exp := time.Now().Add(time.Hour)
	var firsts [jtis]atomic.Int32
	var wg sync.WaitGroup
	for g := range goroutines {
		c := caches[g%2]
		wg.Go(func() {
			for i := range jtis {
				ok, err := c.Use(t.Context(), fmt.Sprint("jti-", i), exp)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					firsts[i].Add(1)
				}
			}
		})
	}
	wg.Wait()
	for i := range firsts {
		if n := firsts[i].Load(); n != 1 {
			t.Fatalf("jti-%d had %d first uses", i, n)
		}
	}
}

// TestReplayCacheExpiry: an expired jti is forgotten (purged, or taken over
// if still present) and the opportunistic purge runs from Use.
func TestReplayCacheExpiry(t *testing.T) {
	m := open(t, newSchema(t), postgres.Options{})
	now := time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	c := postgres.NewReplayCache(m, postgres.ReplayOptions{Now: clock, PurgeEvery: time.Hour})
	var _ mrtr.ReplayCache = c
	use := func(jti string, ttl time.Duration) bool {
		t.Helper()
		ok, err := c.Use(t.Context(), jti, clock().Add(ttl))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	count := func() int {
		t.Helper()
		var n int
		if err := m.Pool().QueryRow(t.Context(), `SELECT count(*) FROM mrtr_replay`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if !use("a", time.Minute) || use("a", time.Minute) {
		t.Fatal("a: want first use once")
	}
	for i := range 5 {
		use(fmt.Sprint("short-", i), time.Minute)
	}
	use("long", 3*time.Hour)
	advance(time.Minute)
	// Expired but not purged yet: the row is taken over as a first use.
	if !use("a", time.Minute) {
		t.Fatal("expired jti a not reusable")
	}
	if use("a", time.Minute) {
		t.Fatal("a reused twice")
	}
	if got := count(); got != 7 {
		t.Fatalf("%d rows before purge, want 7", got)
	}
	n, err := c.Purge(t.Context())
	if err != nil || n != 5 {
		t.Fatalf("purge deleted %d (%v), want the 5 expired", n, err)
	}
	advance(time.Hour) // a expires; the next Use purges it
	use("b", time.Minute)
	if got := count(); got != 2 { // long, b
		t.Fatalf("%d rows after the opportunistic purge, want 2", got)
	}
	if use("long", time.Hour) {
		t.Fatal("unexpired jti forgotten")
	}
}

// TestReplayCacheWithCodec: two replicas (codecs sharing a key ring, each
// with its own PostgreSQL replay cache on one database) resume a paused
// request; the token works once, on either replica, never twice.
func TestReplayCacheWithCodec(t *testing.T) {
	schema := newSchema(t)
	ring := mrtr.GenerateKeyRing(slog.New(slog.DiscardHandler))
	var codecs []*mrtr.Codec
	for range 2 {
		c, err := mrtr.NewCodec(ring, mrtr.Options{ReplayCache: postgres.NewReplayCache(open(t, schema, postgres.Options{}), postgres.ReplayOptions{})})
		if err != nil {
			t.Fatal(err)
		}
		codecs = append(codecs, c)
	}
	b := mrtr.Binding{Method: "tools/call", Name: "create_issue", Subject: "user-12", Arguments: json.RawMessage(`{"title":"Bug"}`)}
	token, err := codecs[0].Seal(b, 1, map[string]string{"asked": "repo"})
	if err != nil {
		t.Fatal(err)
	}
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			_, err := codecs[i%2].Open(t.Context(), token, b)
			switch {
			case err == nil:
				ok.Add(1)
			case !errors.Is(err, mrtr.ErrReplayed):
				t.Errorf("resume: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 {
		t.Fatalf("token resumed %d times across replicas, want 1", ok.Load())
	}
}
