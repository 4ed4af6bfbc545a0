package mrtr_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/mrtr"
)

func TestMemoryReplayCacheFirstUse(t *testing.T) {
	m := mrtr.NewMemoryReplayCache(10, nil)
	exp := time.Now().Add(time.Hour)
	for i, want := range []bool{true, false, false} {
		if got, err := m.Use(t.Context(), "a", exp); got != want || err != nil {
			t.Fatalf("use %d = %v, %v; want %v", i+1, got, err, want)
		}
	}
	if got, _ := m.Use(t.Context(), "b", exp); !got {
		t.Fatal("a different jti was reported as used")
	}
}

func TestMemoryReplayCacheBounded(t *testing.T) {
	now := time.Date(2026, 7, 28, 0, 0, 0, 0, time.UTC)
	m := mrtr.NewMemoryReplayCache(3, func() time.Time { return now })
	for i := range 5 {
		m.Use(t.Context(), fmt.Sprint(i), now.Add(time.Duration(i+1)*time.Minute))
	}
	if m.Len() != 3 {
		t.Fatalf("Len = %d, want 3", m.Len())
	}
	// The two expiring soonest were evicted; the newest three are remembered.
	for i, want := range []bool{false, false, false} {
		if got, _ := m.Use(t.Context(), fmt.Sprint(i+2), now.Add(time.Hour)); got != want {
			t.Errorf("jti %d first use = %v, want %v", i+2, got, want)
		}
	}
	if got, _ := m.Use(t.Context(), "0", now.Add(time.Hour)); !got {
		t.Error("evicted jti 0 still remembered")
	}
}

func TestMemoryReplayCacheEvictsExpiredFirst(t *testing.T) {
	now := time.Date(2026, 7, 28, 0, 0, 0, 0, time.UTC)
	m := mrtr.NewMemoryReplayCache(3, func() time.Time { return now })
	m.Use(t.Context(), "long", now.Add(time.Hour))
	m.Use(t.Context(), "short1", now.Add(time.Minute))
	m.Use(t.Context(), "short2", now.Add(2*time.Minute))
	now = now.Add(2 * time.Minute) // both short ones have expired
	m.Use(t.Context(), "new", now.Add(time.Hour))
	if m.Len() != 2 {
		t.Fatalf("Len = %d, want 2 (long, new)", m.Len())
	}
	if got, _ := m.Use(t.Context(), "long", now.Add(time.Hour)); got {
		t.Error("unexpired jti forgotten while expired ones were present")
	}
}

func TestMemoryReplayCacheConcurrent(t *testing.T) {
	m := mrtr.NewMemoryReplayCache(10_000, nil)
	exp := time.Now().Add(time.Hour)
	var firsts atomic.Int32
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 100 {
				if ok, _ := m.Use(t.Context(), fmt.Sprint(i), exp); ok {
					firsts.Add(1)
				}
				m.Use(t.Context(), fmt.Sprintf("g%d-%d", g, i), exp)
			}
		})
	}
	wg.Wait()
	if firsts.Load() != 100 {
		t.Fatalf("%d first uses of 100 jtis", firsts.Load())
	}
}
