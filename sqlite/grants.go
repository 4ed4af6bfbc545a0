package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/internal/taskrow"
)

// GrantStore is a [connect.Store] on a SQLite database: the OAuth grants of
// the users, sealed, in table oauth_grants (which it creates). It shares the
// database of the task manager; give it the manager's writer (Manager.DB),
// whose single connection serializes its writes with the manager's.
type GrantStore struct {
	db  *sql.DB
	now func() time.Time
}

var _ connect.Store = (*GrantStore)(nil)

// NewGrantStore creates the grant table in db if needed and returns the
// store. now is its clock (nil: time.Now).
func NewGrantStore(ctx context.Context, db *sql.DB, now func() time.Time) (*GrantStore, error) {
	if now == nil {
		now = time.Now
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS oauth_grants (
		api         TEXT NOT NULL,
		tenant      TEXT NOT NULL,
		subject     TEXT NOT NULL,
		sealed      BLOB NOT NULL,
		key_id      TEXT NOT NULL,
		scopes      TEXT NOT NULL,
		expiry      INTEGER NOT NULL,
		refreshable INTEGER NOT NULL,
		created_at  INTEGER NOT NULL,
		updated_at  INTEGER NOT NULL,
		version     INTEGER NOT NULL,
		lease_until INTEGER NOT NULL,
		PRIMARY KEY (api, tenant, subject)
	) WITHOUT ROWID`); err != nil {
		return nil, fmt.Errorf("sqlite: create oauth_grants: %w", err)
	}
	return &GrantStore{db: db, now: now}, nil
}

const grantColumns = `api, tenant, subject, key_id, scopes, expiry, refreshable, created_at, updated_at, version`

func scanGrant(s taskrow.Scanner, sealed *[]byte) (connect.Record, error) {
	var r connect.Record
	var expiry, created, updated int64
	var refreshable int
	dst := []any{&r.Key.API, &r.Key.Tenant, &r.Key.Subject, &r.KeyID, &r.Scopes, &expiry, &refreshable, &created, &updated, &r.Version}
	if sealed != nil {
		dst = append(dst, sealed)
	}
	if err := s.Scan(dst...); err != nil {
		return r, err
	}
	r.Expiry, r.CreatedAt, r.UpdatedAt = taskrow.FromNanos(expiry), taskrow.FromNanos(created), taskrow.FromNanos(updated)
	r.Refreshable = refreshable != 0
	if sealed != nil {
		r.Sealed = *sealed
	}
	return r, nil
}

// Get implements [connect.Store].
func (s *GrantStore) Get(ctx context.Context, k connect.Key) (connect.Record, error) {
	var sealed []byte
	r, err := scanGrant(s.db.QueryRowContext(ctx, `SELECT `+grantColumns+`, sealed FROM oauth_grants
		WHERE api = ? AND tenant = ? AND subject = ?`, k.API, k.Tenant, k.Subject), &sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return connect.Record{}, connect.ErrNoGrant
	}
	if err != nil {
		return connect.Record{}, fmt.Errorf("sqlite: get grant: %w", err)
	}
	return r, nil
}

// Put implements [connect.Store].
func (s *GrantStore) Put(ctx context.Context, r connect.Record) (connect.Record, error) {
	now := taskrow.Nanos(s.now())
	var created int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO oauth_grants
		(api, tenant, subject, sealed, key_id, scopes, expiry, refreshable, created_at, updated_at, version, lease_until)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0)
		ON CONFLICT (api, tenant, subject) DO UPDATE SET
			sealed = excluded.sealed, key_id = excluded.key_id, scopes = excluded.scopes, expiry = excluded.expiry,
			refreshable = excluded.refreshable, updated_at = excluded.updated_at,
			version = oauth_grants.version + 1, lease_until = 0
		RETURNING version, created_at`,
		r.Key.API, r.Key.Tenant, r.Key.Subject, r.Sealed, r.KeyID, r.Scopes, taskrow.Nanos(r.Expiry), r.Refreshable, now, now,
	).Scan(&r.Version, &created)
	if err != nil {
		return connect.Record{}, fmt.Errorf("sqlite: put grant: %w", err)
	}
	r.CreatedAt, r.UpdatedAt = taskrow.FromNanos(created), taskrow.FromNanos(now)
	return r, nil
}

// Update implements [connect.Store].
func (s *GrantStore) Update(ctx context.Context, r connect.Record) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE oauth_grants SET sealed = ?, key_id = ?, scopes = ?, expiry = ?, refreshable = ?,
		updated_at = ?, version = version + 1, lease_until = 0
		WHERE api = ? AND tenant = ? AND subject = ? AND version = ?`,
		r.Sealed, r.KeyID, r.Scopes, taskrow.Nanos(r.Expiry), r.Refreshable, taskrow.Nanos(s.now()),
		r.Key.API, r.Key.Tenant, r.Key.Subject, r.Version)
	return changed(res, err, "update grant")
}

// Lease implements [connect.Store].
func (s *GrantStore) Lease(ctx context.Context, k connect.Key, version int64, until, now time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE oauth_grants SET lease_until = ?
		WHERE api = ? AND tenant = ? AND subject = ? AND version = ? AND lease_until <= ?`,
		taskrow.Nanos(until), k.API, k.Tenant, k.Subject, version, taskrow.Nanos(now))
	return changed(res, err, "lease grant")
}

// Delete implements [connect.Store].
func (s *GrantStore) Delete(ctx context.Context, k connect.Key, version int64) (bool, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM oauth_grants
		WHERE api = ? AND tenant = ? AND subject = ? AND (? = 0 OR version = ?)`,
		k.API, k.Tenant, k.Subject, version, version)
	return changed(res, err, "delete grant")
}

// List implements [connect.Store].
func (s *GrantStore) List(ctx context.Context, f connect.Filter) ([]connect.Record, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+grantColumns+` FROM oauth_grants
		WHERE (? = '' OR api = ?) AND (? = '' OR tenant = ?) AND (? = '' OR subject = ?)
		ORDER BY api, tenant, subject LIMIT ?`,
		f.API, f.API, f.Tenant, f.Tenant, f.Subject, f.Subject, f.EffectiveLimit())
	if err != nil {
		return nil, fmt.Errorf("sqlite: list grants: %w", err)
	}
	defer rows.Close()
	var out []connect.Record
	for rows.Next() {
		r, err := scanGrant(rows, nil)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list grants: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list grants: %w", err)
	}
	return out, nil
}

// changed reports whether a statement changed a row.
func changed(res sql.Result, err error, what string) (bool, error) {
	if err != nil {
		return false, fmt.Errorf("sqlite: %s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite: %s: %w", what, err)
	}
	return n == 1, nil
}
