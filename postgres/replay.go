package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/mrtr"
)

// ReplayOptions configure a [ReplayCache].
type ReplayOptions struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PurgeEvery is how often Use also deletes expired jtis (default one
	// minute); negative disables the opportunistic purge (call Purge).
	PurgeEvery time.Duration
}

// ReplayCache is an [mrtr.ReplayCache] shared by every replica of one
// database: a jti is reported as a first use exactly once, whichever replica
// sees it, until it expires. Expired jtis are deleted in batches by Purge,
// which Use runs now and then.
type ReplayCache struct {
	m          *Manager
	now        func() time.Time
	purgeEvery time.Duration
	lastPurge  atomic.Int64 // unix nanos of the last purge started by Use
}

var _ mrtr.ReplayCache = (*ReplayCache)(nil)

// NewReplayCache returns a replay cache on m's database (the table is
// created by m's migrations).
func NewReplayCache(m *Manager, opts ReplayOptions) *ReplayCache {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PurgeEvery == 0 {
		opts.PurgeEvery = time.Minute
	}
	c := &ReplayCache{m: m, now: opts.Now, purgeEvery: opts.PurgeEvery}
	c.lastPurge.Store(opts.Now().UnixNano())
	return c
}

// Use implements [mrtr.ReplayCache]. The INSERT either creates the row (first
// use) or finds it; a row whose jti expired counts as absent and is taken
// over. Two replicas using one jti at once serialize on its primary key, so
// exactly one of them gets true.
func (c *ReplayCache) Use(ctx context.Context, jti string, expiresAt time.Time) (bool, error) {
	now := c.now()
	if c.purgeEvery > 0 {
		last := c.lastPurge.Load()
		if now.UnixNano()-last >= int64(c.purgeEvery) && c.lastPurge.CompareAndSwap(last, now.UnixNano()) {
			// Opportunistic and best effort: a failure leaves rows for the
			// next purge and does not affect the answer.
			_, _ = c.Purge(ctx)
		}
	}
	var first bool
	err := c.m.pool.QueryRow(ctx, `WITH ins AS (
		INSERT INTO mrtr_replay (jti, expires_at) VALUES ($1, $2)
		ON CONFLICT (jti) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE mrtr_replay.expires_at <= $3
		RETURNING 1)
		SELECT count(*) = 1 FROM ins`, jti, expiresAt, now).Scan(&first)
	if err != nil {
		return false, fmt.Errorf("postgres: replay cache: %w", err)
	}
	return first, nil
}

// purgeBatch bounds one purge DELETE.
const purgeBatch = 1000

// Purge deletes expired jtis and returns how many. Concurrent purges on
// several replicas delete disjoint rows.
func (c *ReplayCache) Purge(ctx context.Context) (int, error) {
	total := 0
	for {
		tag, err := c.m.pool.Exec(ctx, `DELETE FROM mrtr_replay WHERE jti IN (
			SELECT jti FROM mrtr_replay WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`, c.now(), purgeBatch)
		if err != nil {
			return total, fmt.Errorf("postgres: replay cache purge: %w", err)
		}
		n := int(tag.RowsAffected())
		total += n
		if n < purgeBatch {
			return total, nil
		}
	}
}
