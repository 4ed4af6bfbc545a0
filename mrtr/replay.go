package mrtr

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// ReplayCache remembers the jti of every requestState resumed so that each
// resumes at most once. Codec.Open calls Use only after all other checks
// passed, so a rejected token does not consume its jti. An implementation may
// forget a jti once expiresAt has passed: the token is rejected as expired
// from then on.
type ReplayCache interface {
	// Use records jti and reports whether this is its first use. An error
	// means the answer is unknown; Open then fails.
	Use(ctx context.Context, jti string, expiresAt time.Time) (firstUse bool, err error)
}

// DefaultReplayCacheSize is the capacity of a MemoryReplayCache built with
// size 0.
const DefaultReplayCacheSize = 100_000

// MemoryReplayCache is a ReplayCache in process memory, for a single replica
// or tests. It holds at most its capacity of jtis: when full it first drops
// expired entries, then the ones expiring soonest. A dropped jti that has not
// yet expired could be replayed, so size it above the number of pauses per
// TTL. It is safe for concurrent use; its zero value is not usable.
type MemoryReplayCache struct {
	mu    sync.Mutex
	max   int
	now   func() time.Time
	seen  map[string]struct{}
	queue byExpiry // the entries of seen, soonest expiry first
}

// NewMemoryReplayCache returns a cache for at most size jtis
// (DefaultReplayCacheSize when size <= 0). now is its clock; nil means
// time.Now.
func NewMemoryReplayCache(size int, now func() time.Time) *MemoryReplayCache {
	if size <= 0 {
		size = DefaultReplayCacheSize
	}
	if now == nil {
		now = time.Now
	}
	return &MemoryReplayCache{max: size, now: now, seen: make(map[string]struct{})}
}

// Use implements ReplayCache. It never returns an error.
func (m *MemoryReplayCache) Use(_ context.Context, jti string, expiresAt time.Time) (bool, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.queue) > 0 && !now.Before(m.queue[0].expiresAt) {
		m.drop()
	}
	if _, ok := m.seen[jti]; ok {
		return false, nil
	}
	if len(m.queue) >= m.max {
		m.drop()
	}
	m.seen[jti] = struct{}{}
	heap.Push(&m.queue, replayEntry{jti, expiresAt})
	return true, nil
}

// Len reports how many jtis the cache holds.
func (m *MemoryReplayCache) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.queue)
}

// drop forgets the entry that expires soonest.
func (m *MemoryReplayCache) drop() {
	e := heap.Pop(&m.queue).(replayEntry)
	delete(m.seen, e.jti)
}

type replayEntry struct {
	jti       string
	expiresAt time.Time
}

// byExpiry is a min-heap of entries ordered by expiry.
type byExpiry []replayEntry

func (h byExpiry) Len() int           { return len(h) }
func (h byExpiry) Less(i, j int) bool { return h[i].expiresAt.Before(h[j].expiresAt) }
func (h byExpiry) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *byExpiry) Push(x any)        { *h = append(*h, x.(replayEntry)) }
func (h *byExpiry) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = replayEntry{}
	*h = old[:len(old)-1]
	return e
}
