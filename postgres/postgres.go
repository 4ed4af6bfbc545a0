// Package postgres is the clustered durable store of mcpgate: a
// [tasks.Manager], an [mrtr.ReplayCache] and a [tasks.Publisher] on one
// PostgreSQL database (pgx v5, pgxpool), shared by any number of stateless
// replicas, and beside them the parts the gateway's features open on first
// use: the audit table ([NewAuditStore]), the shared quota bank
// ([NewQuotaBank]), the vault of users' OAuth grants ([NewGrantStore]) and
// the [Signals] that tell replicas of a reload. [OpenStore] opens them all
// as one [store.Backend] from a postgres:// location.
//
// Ownership. This package owns the tables it creates (tasks,
// task_transitions, mrtr_replay and schema_migrations at Open; audit_records,
// quota_buckets and oauth_grants when their feature first opens them) in one
// PostgreSQL schema, and the LISTEN/NOTIFY channels that announce task
// changes and reloaded tool sets. The state machine itself lives in package
// tasks (the *tasks.Task transition methods); every mutation here applies
// one of them to the row it read.
//
// Invariants:
//
//   - Atomic transitions. A mutation reads the row, applies the state-machine
//     method in Go and writes it back with one conditional UPDATE keyed on
//     the version it read (compare-and-swap). If another replica committed
//     first, nothing is written and the mutation re-reads and re-applies, so
//     concurrent changes serialize and no update is lost. No row lock is held
//     across a network round trip.
//   - Fencing. Every claim increments the lease token; a worker write carrying
//     a stale token fails with [tasks.ErrLeaseLost]. Of N replicas racing to
//     claim one task (for example the orphans of a dead replica), exactly one
//     wins; the others get [tasks.ErrClaimed].
//   - Unknown ≡ unauthorized. An unknown, expired or foreign id, and an id
//     that cannot be a task id (invalid UTF-8, NUL), yield the bare
//     [tasks.ErrNotFound] on every client path.
//   - The database refuses to change a terminal task (a trigger aborts any
//     UPDATE of a completed, failed or cancelled row) and refuses unknown
//     statuses (CHECK). Every status change is appended to task_transitions,
//     deleted with its task.
//   - Create returns after its INSERT committed. Durability is the server's
//     synchronous_commit: on by default, so the commit is on disk. A DSN may
//     lower it per connection (options=-c synchronous_commit=off): creates
//     then skip the WAL fsync (several times faster here) but a crash of the
//     database server may lose the last fraction of a second of commits.
//   - Sweeps never double-run: expired rows are deleted in batches selected
//     FOR UPDATE SKIP LOCKED, so concurrent sweepers delete disjoint rows and
//     their counts add up to the number of expired tasks.
//   - Migrations are versioned (schema_migrations), applied at Open inside one
//     transaction that holds a transaction-scoped advisory lock, so replicas
//     starting at once serialize and each migration is applied exactly once.
//     A database migrated by a newer build is refused.
//   - Notifications. The transaction that makes a client-visible change also
//     sends NOTIFY on the manager's channel with the task id as the only
//     payload, so an event is sent if and only if the change committed, at no
//     extra round trip, and every replica (this one included) hears it. A
//     [Publisher] LISTENs, fans the ids out to local subscribers, reconnects
//     after a dropped connection and then re-announces the tasks changed
//     while it was away. Receivers must re-read and authorize; polling stays
//     authoritative.
//
// Times are stored as int64 Unix nanoseconds from the manager's clock
// (tasks.Options.Now), like the SQLite manager, so stored times round-trip
// exactly. The notification bookkeeping column changed_at uses the
// database's clock, which is the one clock all replicas share.
//
// There is no package-level mutable state; several Managers (replicas) may
// share one database and schema, or use separate schemas of one database.
package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpgate/mcpgate/tasks"
)

// DefaultChannel is the LISTEN/NOTIFY channel that announces changes of the
// tasks in the default schema (see Options.Channel).
const DefaultChannel = "mcpgate_tasks"

// Options configure a [Manager].
type Options struct {
	// Options carries the clock and an optional in-process publisher, which
	// (like every manager's) receives each client-visible change after it
	// committed. A [Publisher] of this package needs no such wiring: the
	// database announces changes itself (see Channel). Setting one here as
	// well only duplicates events.
	tasks.Options
	// Schema is the PostgreSQL schema holding the tables; it is created if
	// missing. Empty means the connection's default (the first schema of
	// its search_path, normally public).
	Schema string
	// Channel is the NOTIFY channel for task changes. Every replica sharing
	// the tables must use the same. The default is DefaultChannel, or with a
	// Schema DefaultChannel+"."+Schema (a hash of the schema name when that
	// is longer than PostgreSQL's 63-byte limit), so deployments in
	// different schemas of one database do not hear each other.
	Channel string
	// DisableNotify turns the in-transaction NOTIFY off (then a [Publisher]
	// cannot be built on this manager).
	DisableNotify bool
	// MaxConns is the connection pool size (default: pgxpool's, the larger
	// of 4 and the number of CPUs). A pool_max_conns in the DSN also works.
	MaxConns int32
}

// Manager is a PostgreSQL-backed [tasks.Manager]. It is safe for concurrent
// use; Close it when done.
type Manager struct {
	opts    Options
	pool    *pgxpool.Pool
	channel string // "" when NOTIFY is off

	qInsert, qUpdateVisible, qUpdateQuiet string
}

var _ tasks.Manager = (*Manager)(nil)

// Open connects to the database at dsn (a PostgreSQL URL or key=value
// string), applies pending migrations and returns a ready manager.
func Open(ctx context.Context, dsn string, opts Options) (*Manager, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{opts.Schema}.Sanitize()
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "mcpgate"
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	m := &Manager{opts: opts}
	if !opts.DisableNotify {
		m.channel = opts.Channel
		if m.channel == "" {
			m.channel = defaultChannel(opts.Schema)
		}
		if len(m.channel) > 63 || strings.ContainsRune(m.channel, 0) {
			return nil, fmt.Errorf("postgres: channel %q: at most 63 bytes, no NUL", m.channel)
		}
	}
	m.prepareSQL()
	if m.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := migrate(ctx, m.pool, opts.Schema); err != nil {
		m.pool.Close()
		return nil, err
	}
	return m, nil
}

// defaultChannel is the NOTIFY channel of the tables in schema.
func defaultChannel(schema string) string {
	if schema == "" {
		return DefaultChannel
	}
	c := DefaultChannel + "." + schema
	if len(c) > 63 {
		sum := sha256.Sum256([]byte(schema))
		c = DefaultChannel + "." + hex.EncodeToString(sum[:16])
	}
	return c
}

// Close closes the connection pool. Publishers and replay caches built on
// the manager stop working.
func (m *Manager) Close() { m.pool.Close() }

// Pool returns the connection pool, for inspection in tests and tools.
func (m *Manager) Pool() *pgxpool.Pool { return m.pool }

// Channel returns the NOTIFY channel of task changes ("" when disabled).
func (m *Manager) Channel() string { return m.channel }

// migrationLock is the first key of the advisory lock that serializes
// migrations; the second is a hash of the schema name, so distinct schemas
// migrate independently.
const migrationLock = 0x6d637067 // "mcpg"

// migration is one versioned schema change; versions are 1-based positions
// in migrations. Never edit a released migration: append a new one.
type migration struct {
	name string
	sql  string
}

// migrations returns the schema history, oldest first.
func migrations() []migration {
	return []migration{
		{"tasks", `
CREATE TABLE tasks (
	id               text PRIMARY KEY,
	subject          text NOT NULL,
	tenant           text NOT NULL,
	tool             text NOT NULL,
	status           text NOT NULL CHECK (status IN ('working','input_required','completed','failed','cancelled')),
	status_message   text NOT NULL,
	created_at       bigint NOT NULL,
	updated_at       bigint NOT NULL,
	ttl_ns           bigint NOT NULL,
	expires_at       bigint,
	poll_ns          bigint NOT NULL,
	params           bytea,
	result           bytea,
	error            bytea,
	input_requests   bytea,
	input_responses  bytea,
	cancel_requested boolean NOT NULL,
	idempotent       boolean NOT NULL,
	lease_owner      text NOT NULL,
	lease_token      bigint NOT NULL,
	lease_expires_at bigint NOT NULL,
	version          bigint NOT NULL,
	changed_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX tasks_expiry ON tasks (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX tasks_active ON tasks (created_at, id) WHERE status IN ('working','input_required');
CREATE INDEX tasks_changed ON tasks (changed_at);

CREATE TABLE task_transitions (
	seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	task_id     text NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
	from_status text NOT NULL,
	to_status   text NOT NULL,
	version     bigint NOT NULL,
	at          bigint NOT NULL
);
CREATE INDEX task_transitions_task ON task_transitions (task_id);

CREATE FUNCTION tasks_terminal_final() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'illegal task transition: task % is %', OLD.id, OLD.status;
END $$;
CREATE TRIGGER tasks_terminal_final BEFORE UPDATE ON tasks FOR EACH ROW
	WHEN (OLD.status IN ('completed','failed','cancelled'))
	EXECUTE FUNCTION tasks_terminal_final();

CREATE FUNCTION tasks_audit() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
	INSERT INTO task_transitions (task_id, from_status, to_status, version, at)
	VALUES (NEW.id, OLD.status, NEW.status, NEW.version, NEW.updated_at);
	RETURN NULL;
END $$;
CREATE TRIGGER tasks_audit AFTER UPDATE OF status ON tasks FOR EACH ROW
	WHEN (NEW.status <> OLD.status)
	EXECUTE FUNCTION tasks_audit();
`},
		{"mrtr_replay", `
CREATE TABLE mrtr_replay (
	jti        text PRIMARY KEY,
	expires_at timestamptz NOT NULL
);
CREATE INDEX mrtr_replay_expiry ON mrtr_replay (expires_at);
`},
		{"task_stage_and_secret", `
ALTER TABLE tasks ADD COLUMN stage text NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN checkpoint bytea;
ALTER TABLE tasks ADD COLUMN secret bytea;
`},
		{"tasks_owner_active", `
CREATE INDEX tasks_owner_active ON tasks (subject, tenant) WHERE status IN ('working','input_required');
`},
	}
}

// SchemaVersion returns the schema version this build migrates to.
func SchemaVersion() int { return len(migrations()) }

// migrate brings the schema to the current version in one transaction that
// holds the migration advisory lock.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(migrationLock), schema); err != nil {
		return fmt.Errorf("postgres: migrate: lock: %w", err)
	}
	if schema != "" {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
			return fmt.Errorf("postgres: migrate: create schema: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	var cur int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&cur); err != nil {
		return fmt.Errorf("postgres: migrate: read version: %w", err)
	}
	all := migrations()
	if cur > len(all) {
		return fmt.Errorf("postgres: database schema version %d is newer than this build's %d", cur, len(all))
	}
	for v := cur + 1; v <= len(all); v++ {
		mg := all[v-1]
		if _, err := tx.Exec(ctx, mg.sql); err != nil {
			return fmt.Errorf("postgres: migration %d (%s): %w", v, mg.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, v, mg.name); err != nil {
			return fmt.Errorf("postgres: migration %d (%s): %w", v, mg.name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: migrate: commit: %w", err)
	}
	return nil
}

// isNoRows reports whether err is pgx's "no rows".
func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
