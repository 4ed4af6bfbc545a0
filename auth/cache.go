package auth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// tokenHash is the cache key of a token: its SHA-256, so caches never hold
// the token itself as a key.
type tokenHash [sha256.Size]byte

func hashToken(t string) tokenHash { return sha256.Sum256([]byte(t)) }

// defaultMaxEntries bounds each cache.
const defaultMaxEntries = 10000

// ttlCache is a small bounded map whose entries expire at a given instant.
type ttlCache[K comparable, V any] struct {
	mu  sync.Mutex
	max int
	m   map[K]ttlEntry[V]
	now func() time.Time
}

type ttlEntry[V any] struct {
	v   V
	exp time.Time
}

func newTTLCache[K comparable, V any](max int, now func() time.Time) *ttlCache[K, V] {
	if max <= 0 {
		max = defaultMaxEntries
	}
	return &ttlCache[K, V]{max: max, m: make(map[K]ttlEntry[V]), now: now}
}

// get returns the value for k when it has not expired.
func (c *ttlCache[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	if !c.now().Before(e.exp) {
		delete(c.m, k)
		var zero V
		return zero, false
	}
	return e.v, true
}

// put stores v until exp. When the cache is full it first drops expired
// entries, then the entry that expires soonest.
func (c *ttlCache[K, V]) put(k K, v V, exp time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		now := c.now()
		var (
			soonest K
			first   = true
			at      time.Time
		)
		for key, e := range c.m {
			if !now.Before(e.exp) {
				delete(c.m, key)
				continue
			}
			if first || e.exp.Before(at) {
				soonest, at, first = key, e.exp, false
			}
		}
		if len(c.m) >= c.max && !first {
			delete(c.m, soonest)
		}
	}
	c.m[k] = ttlEntry[V]{v: v, exp: exp}
}
