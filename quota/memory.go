package quota

import (
	"sync"
	"time"
)

// memory holds the buckets of one node.
type memory struct {
	mu        sync.Mutex
	buckets   map[string]*bucket
	max       int
	lastSweep time.Time
}

// bucket is a token bucket; its capacity and rate are its rule's.
type bucket struct {
	tokens float64
	last   time.Time
	rule   *rule
}

func newMemory(maxBuckets int) *memory {
	return &memory{buckets: make(map[string]*bucket), max: maxBuckets}
}

// sweepEvery is how often full buckets are dropped, at most.
const sweepEvery = time.Minute

// take takes one token from the bucket of every claim, or none.
func (m *memory) take(claims []claim, now time.Time) Verdict {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	var buf [4]*bucket
	got := buf[:0]
	v := Verdict{Allowed: true, Rule: -1}
	for _, c := range claims {
		b := m.bucket(c, now)
		b.refill(now)
		if b.tokens < 1 {
			v.refuse(c.rule.index, c.rule.retryAfter(b.tokens))
		}
		got = append(got, b)
	}
	if v.Allowed {
		for _, b := range got {
			b.tokens--
		}
	}
	return v
}

// bucket returns the claim's bucket, a new full one when it has none, or
// the rule's overflow bucket when the map is at its bound.
func (m *memory) bucket(c claim, now time.Time) *bucket {
	return slotFor(m.buckets, c, m.max, func(string) *bucket {
		return &bucket{tokens: float64(c.rule.Limit), last: now, rule: c.rule}
	})
}

func (b *bucket) refill(now time.Time) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(float64(b.rule.Limit), b.tokens+float64(d)*b.rule.rate)
		b.last = now
	}
}

// sweep drops the buckets that are full again, once per sweepEvery, or
// once a second while the map is at its bound.
func (m *memory) sweep(now time.Time) {
	since := now.Sub(m.lastSweep)
	if since < sweepEvery && (len(m.buckets) < m.max || since < time.Second) {
		return
	}
	m.lastSweep = now
	for k, b := range m.buckets {
		b.refill(now)
		if b.tokens >= float64(b.rule.Limit) {
			delete(m.buckets, k)
		}
	}
}
