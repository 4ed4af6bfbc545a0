package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/internal/taskrow"
)

// GrantStore is a [connect.Store] on PostgreSQL, shared by every replica:
// the users' OAuth grants, sealed, in table oauth_grants of the pool's
// schema (created if missing). Its conditional writes (version compare,
// refresh lease) are single statements, so replicas racing on one grant
// serialize on its row.
type GrantStore struct {
	pool *pgxpool.Pool
	now  func() time.Time
}

var _ connect.Store = (*GrantStore)(nil)

// grantsLock is the advisory lock key under which the table is created, so
// replicas starting together do not race on CREATE TABLE.
const grantsLock = 0x6d6370676174 // "mcpgat"

// NewGrantStore creates the grant table if needed and returns the store on
// pool (the task manager's, Manager.Pool). now is its clock (nil:
// time.Now).
func NewGrantStore(ctx context.Context, pool *pgxpool.Pool, now func() time.Time) (*GrantStore, error) {
	if now == nil {
		now = time.Now
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(grantsLock)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS oauth_grants (
			api         TEXT NOT NULL,
			tenant      TEXT NOT NULL,
			subject     TEXT NOT NULL,
			sealed      BYTEA NOT NULL,
			key_id      TEXT NOT NULL,
			scopes      TEXT NOT NULL,
			expiry      BIGINT NOT NULL,
			refreshable BOOLEAN NOT NULL,
			created_at  BIGINT NOT NULL,
			updated_at  BIGINT NOT NULL,
			version     BIGINT NOT NULL,
			lease_until BIGINT NOT NULL,
			PRIMARY KEY (api, tenant, subject)
		)`)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: create oauth_grants: %w", err)
	}
	return &GrantStore{pool: pool, now: now}, nil
}

const grantColumns = `api, tenant, subject, key_id, scopes, expiry, refreshable, created_at, updated_at, version`

func scanGrant(row pgx.Row, sealed *[]byte) (connect.Record, error) {
	var r connect.Record
	var expiry, created, updated int64
	dst := []any{&r.Key.API, &r.Key.Tenant, &r.Key.Subject, &r.KeyID, &r.Scopes, &expiry, &r.Refreshable, &created, &updated, &r.Version}
	if sealed != nil {
		dst = append(dst, sealed)
	}
	if err := row.Scan(dst...); err != nil {
		return r, err
	}
	r.Expiry, r.CreatedAt, r.UpdatedAt = taskrow.FromNanos(expiry), taskrow.FromNanos(created), taskrow.FromNanos(updated)
	if sealed != nil {
		r.Sealed = *sealed
	}
	return r, nil
}

// Get implements [connect.Store].
func (s *GrantStore) Get(ctx context.Context, k connect.Key) (connect.Record, error) {
	var sealed []byte
	r, err := scanGrant(s.pool.QueryRow(ctx, `SELECT `+grantColumns+`, sealed FROM oauth_grants
		WHERE api = $1 AND tenant = $2 AND subject = $3`, k.API, k.Tenant, k.Subject), &sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return connect.Record{}, connect.ErrNoGrant
	}
	if err != nil {
		return connect.Record{}, fmt.Errorf("postgres: get grant: %w", err)
	}
	return r, nil
}

// Put implements [connect.Store].
func (s *GrantStore) Put(ctx context.Context, r connect.Record) (connect.Record, error) {
	now := taskrow.Nanos(s.now())
	var created int64
	err := s.pool.QueryRow(ctx, `INSERT INTO oauth_grants AS g
		(api, tenant, subject, sealed, key_id, scopes, expiry, refreshable, created_at, updated_at, version, lease_until)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, 1, 0)
		ON CONFLICT (api, tenant, subject) DO UPDATE SET
			sealed = EXCLUDED.sealed, key_id = EXCLUDED.key_id, scopes = EXCLUDED.scopes, expiry = EXCLUDED.expiry,
			refreshable = EXCLUDED.refreshable, updated_at = EXCLUDED.updated_at,
			version = g.version + 1, lease_until = 0
		RETURNING version, created_at`,
		r.Key.API, r.Key.Tenant, r.Key.Subject, r.Sealed, r.KeyID, r.Scopes, taskrow.Nanos(r.Expiry), r.Refreshable, now,
	).Scan(&r.Version, &created)
	if err != nil {
		return connect.Record{}, fmt.Errorf("postgres: put grant: %w", err)
	}
	r.CreatedAt, r.UpdatedAt = taskrow.FromNanos(created), taskrow.FromNanos(now)
	return r, nil
}

// Update implements [connect.Store].
func (s *GrantStore) Update(ctx context.Context, r connect.Record) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE oauth_grants SET sealed = $1, key_id = $2, scopes = $3, expiry = $4, refreshable = $5,
		updated_at = $6, version = version + 1, lease_until = 0
		WHERE api = $7 AND tenant = $8 AND subject = $9 AND version = $10`,
		r.Sealed, r.KeyID, r.Scopes, taskrow.Nanos(r.Expiry), r.Refreshable, taskrow.Nanos(s.now()),
		r.Key.API, r.Key.Tenant, r.Key.Subject, r.Version)
	return oneRow(tag, err, "update grant")
}

// Lease implements [connect.Store].
func (s *GrantStore) Lease(ctx context.Context, k connect.Key, version int64, until, now time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE oauth_grants SET lease_until = $1
		WHERE api = $2 AND tenant = $3 AND subject = $4 AND version = $5 AND lease_until <= $6`,
		taskrow.Nanos(until), k.API, k.Tenant, k.Subject, version, taskrow.Nanos(now))
	return oneRow(tag, err, "lease grant")
}

// Delete implements [connect.Store].
func (s *GrantStore) Delete(ctx context.Context, k connect.Key, version int64) (bool, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM oauth_grants
		WHERE api = $1 AND tenant = $2 AND subject = $3 AND ($4 = 0 OR version = $4)`,
		k.API, k.Tenant, k.Subject, version)
	return oneRow(tag, err, "delete grant")
}

// List implements [connect.Store].
func (s *GrantStore) List(ctx context.Context, f connect.Filter) ([]connect.Record, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+grantColumns+` FROM oauth_grants
		WHERE ($1 = '' OR api = $1) AND ($2 = '' OR tenant = $2) AND ($3 = '' OR subject = $3)
		ORDER BY api COLLATE "C", tenant COLLATE "C", subject COLLATE "C" LIMIT $4`,
		f.API, f.Tenant, f.Subject, f.EffectiveLimit())
	if err != nil {
		return nil, fmt.Errorf("postgres: list grants: %w", err)
	}
	defer rows.Close()
	var out []connect.Record
	for rows.Next() {
		r, err := scanGrant(rows, nil)
		if err != nil {
			return nil, fmt.Errorf("postgres: list grants: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list grants: %w", err)
	}
	return out, nil
}

func oneRow(tag pgconn.CommandTag, err error, what string) (bool, error) {
	if err != nil {
		return false, fmt.Errorf("postgres: %s: %w", what, err)
	}
	return tag.RowsAffected() == 1, nil
}
