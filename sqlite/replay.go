package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"time"
)

// ReplayCache is a durable mrtr.ReplayCache: each requestState id (jti) is
// accepted once, across restarts of the process, until it expires. It keeps
// its table in the task store's database and writes through the manager's
// single writer connection.
type ReplayCache struct {
	db    *sql.DB
	now   func() time.Time
	calls atomic.Uint64
}

// purgeEvery is how many uses pass between two purges of expired ids.
const purgeEvery = 1024

// NewReplayCache creates (if needed) the replay table in m's database.
func NewReplayCache(ctx context.Context, m *Manager, now func() time.Time) (*ReplayCache, error) {
	if now == nil {
		now = time.Now
	}
	if _, err := m.DB().ExecContext(ctx, `CREATE TABLE IF NOT EXISTS mrtr_replay (jti TEXT PRIMARY KEY, expires_at INTEGER NOT NULL) WITHOUT ROWID`); err != nil {
		return nil, fmt.Errorf("sqlite: create replay table: %w", err)
	}
	return &ReplayCache{db: m.DB(), now: now}, nil
}

// Use records jti and reports whether this was its first use.
func (c *ReplayCache) Use(ctx context.Context, jti string, expiresAt time.Time) (bool, error) {
	if c.calls.Add(1)%purgeEvery == 0 {
		if _, err := c.db.ExecContext(ctx, `DELETE FROM mrtr_replay WHERE expires_at < ?`, c.now().UnixNano()); err != nil {
			return false, fmt.Errorf("sqlite: purge replay ids: %w", err)
		}
	}
	res, err := c.db.ExecContext(ctx, `INSERT INTO mrtr_replay (jti, expires_at) VALUES (?, ?) ON CONFLICT (jti) DO NOTHING`, jti, expiresAt.UnixNano())
	if err != nil {
		return false, fmt.Errorf("sqlite: record replay id: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite: record replay id: %w", err)
	}
	return n == 1, nil
}
