package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestReplayCacheSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "replay.db")
	open := func() (*Manager, *ReplayCache) {
		m, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewReplayCache(ctx, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		return m, c
	}
	m, c := open()
	exp := time.Now().Add(time.Hour)
	if first, err := c.Use(ctx, "jti-1", exp); err != nil || !first {
		t.Fatalf("first use: %v %v", first, err)
	}
	if first, _ := c.Use(ctx, "jti-1", exp); first {
		t.Fatal("a second use must be refused")
	}
	m.Close()
	m, c = open()
	defer m.Close()
	if first, _ := c.Use(ctx, "jti-1", exp); first {
		t.Fatal("a use after a restart must be refused")
	}
	// Concurrent uses of one id: exactly one wins.
	var wg sync.WaitGroup
	wins := make(chan bool, 32)
	for range 32 {
		wg.Go(func() {
			first, err := c.Use(ctx, "jti-race", exp)
			if err != nil {
				t.Error(err)
			}
			wins <- first
		})
	}
	wg.Wait()
	close(wins)
	n := 0
	for w := range wins {
		if w {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d concurrent first uses", n)
	}
	// Expired ids are purged.
	past := time.Now().Add(-time.Minute)
	for i := range purgeEvery {
		_, _ = c.Use(ctx, fmt.Sprintf("old-%d", i), past)
	}
	var left int
	_ = m.DB().QueryRowContext(ctx, `SELECT count(*) FROM mrtr_replay WHERE expires_at < ?`, time.Now().UnixNano()).Scan(&left)
	if left >= purgeEvery {
		t.Fatalf("expired ids were not purged: %d left", left)
	}
}
