// Package sqlite is the default durable store of mcpgate: a [tasks.Manager]
// on one SQLite database file (modernc.org/sqlite, pure Go), the
// [mrtr.ReplayCache] of sealed request states in the same file
// ([NewReplayCache]), and the parts the gateway's features open on first
// use: the audit table ([NewAuditStore]) and the vault of users' OAuth
// grants ([NewGrantStore]). [OpenStore] opens them as one [store.Backend]
// from a sqlite:PATH location, with an in-process publisher (tasks.Bus);
// quotas are then kept in memory by each process.
//
// Ownership. This package owns the tables it creates (tasks,
// task_transitions and schema_version at Open; mrtr_replay, audit_records
// and oauth_grants when they are first opened) and their schema; the state
// machine itself lives in package tasks (the *tasks.Task transition methods),
// which every mutation here applies inside one write transaction.
//
// Invariants:
//
//   - Create returns after its INSERT committed; a Get on any connection sees
//     it from then on.
//   - Writes go through one connection in BEGIN IMMEDIATE transactions, so
//     they are serialized and never fail with SQLITE_BUSY between themselves;
//     reads use a separate pool and run concurrently with writes (WAL).
//     Concurrent creates share commits (group commit), each caller still
//     returning only after its own row committed.
//   - The database itself refuses to change a terminal task (a trigger
//     aborts any UPDATE of a completed, failed or cancelled row) and refuses
//     unknown statuses (CHECK). Every status change is appended to
//     task_transitions (an audit trail, deleted with its task).
//   - Durability: journal_mode=WAL with synchronous=NORMAL by default. A
//     commit is then durable against a crash of the process (SIGKILL
//     included: the WAL frames are in the operating system's page cache), but
//     the last commits may be lost on power failure or kernel crash.
//     Synchronous "FULL" fsyncs the WAL on every commit and survives those
//     too, at a large cost in write throughput. See [Options].
//
// The database is meant for one machine. Several processes may open it at
// once (a desktop client starting "mcpgate stdio" beside a running server):
// writes serialize on the file's lock, and leases, fencing tokens and the
// orphan listing work exactly as for a clustered store, so a task is taken
// over only once its worker stopped renewing the lease, whether that worker
// was in a crashed predecessor or in another live process.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/internal/taskrow"
	"github.com/mcpgate/mcpgate/tasks"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Options configure a [Manager].
type Options struct {
	tasks.Options
	// Synchronous is the SQLite synchronous level in WAL mode: "NORMAL"
	// (default; durable against process crashes) or "FULL" (also against
	// power loss).
	Synchronous string
	// BusyTimeout bounds waits for locks held by other connections
	// (default 5s).
	BusyTimeout time.Duration
	// Readers is the size of the read connection pool (default 4).
	Readers int
}

// Manager is a SQLite-backed [tasks.Manager]. Close it when done.
type Manager struct {
	opts Options
	w    *sql.DB // exactly one connection: all writes
	r    *sql.DB // read pool

	get, insert, update, orphans *sql.Stmt
	sel                          *sql.Stmt // read-for-update on the writer
	active                       *sql.Stmt // an owner's tasks in progress

	// Group commit of creates: the first Create to arrive commits its row
	// and, while it is at it, every row queued meanwhile by other Create
	// calls, in one transaction; those callers wait for its verdict.
	gmu        sync.Mutex
	pending    []*pendingCreate
	committing bool
}

type pendingCreate struct {
	args []any
	err  chan error // buffered 1
}

// maxBatch bounds one group commit.
const maxBatch = 256

var _ tasks.Manager = (*Manager)(nil)

// migrations is the schema history, oldest first: migrations[v-1] brings a
// database from version v-1 to v. Never edit a released migration: append.
var migrations = [][]string{
	{ // 1: tasks and their audit trail
		`CREATE TABLE tasks (
			id               TEXT PRIMARY KEY,
			subject          TEXT NOT NULL,
			tenant           TEXT NOT NULL,
			tool             TEXT NOT NULL,
			status           TEXT NOT NULL CHECK (status IN ('working','input_required','completed','failed','cancelled')),
			status_message   TEXT NOT NULL,
			created_at       INTEGER NOT NULL,
			updated_at       INTEGER NOT NULL,
			ttl_ns           INTEGER NOT NULL,
			expires_at       INTEGER,
			poll_ns          INTEGER NOT NULL,
			params           BLOB,
			result           BLOB,
			error            BLOB,
			input_requests   BLOB,
			input_responses  BLOB,
			cancel_requested INTEGER NOT NULL,
			idempotent       INTEGER NOT NULL,
			lease_owner      TEXT NOT NULL,
			lease_token      INTEGER NOT NULL,
			lease_expires_at INTEGER NOT NULL,
			version          INTEGER NOT NULL
		)`,
		`CREATE INDEX tasks_expiry ON tasks (expires_at) WHERE expires_at IS NOT NULL`,
		`CREATE INDEX tasks_active ON tasks (created_at, id) WHERE status IN ('working','input_required')`,
		`CREATE TABLE task_transitions (
			seq       INTEGER PRIMARY KEY,
			task_id   TEXT NOT NULL,
			from_status TEXT NOT NULL,
			to_status TEXT NOT NULL,
			at        INTEGER NOT NULL
		)`,
		`CREATE INDEX task_transitions_task ON task_transitions (task_id)`,
		`CREATE TRIGGER tasks_terminal_final BEFORE UPDATE ON tasks
			WHEN OLD.status IN ('completed','failed','cancelled')
			BEGIN SELECT RAISE(ABORT, 'illegal task transition: terminal task'); END`,
		`CREATE TRIGGER tasks_audit AFTER UPDATE OF status ON tasks
			WHEN NEW.status <> OLD.status
			BEGIN INSERT INTO task_transitions (task_id, from_status, to_status, at)
			      VALUES (NEW.id, OLD.status, NEW.status, NEW.updated_at); END`,
		`CREATE TRIGGER tasks_audit_gc AFTER DELETE ON tasks
			BEGIN DELETE FROM task_transitions WHERE task_id = OLD.id; END`,
	},
	{ // 2: where a task's handler stands, and its sealed secret
		`ALTER TABLE tasks ADD COLUMN stage TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE tasks ADD COLUMN checkpoint BLOB`,
		`ALTER TABLE tasks ADD COLUMN secret BLOB`,
	},
	{ // 3: an owner's tasks in progress, counted for the per-caller bound
		`CREATE INDEX tasks_owner_active ON tasks (subject, tenant) WHERE status IN ('working','input_required')`,
	},
}

// SchemaVersion is the schema version this build migrates to.
func SchemaVersion() int { return len(migrations) }

// Open opens (creating if needed) the database at path and prepares it.
func Open(ctx context.Context, path string, opts Options) (*Manager, error) {
	if opts.Synchronous == "" {
		opts.Synchronous = "NORMAL"
	}
	if opts.Synchronous != "NORMAL" && opts.Synchronous != "FULL" {
		return nil, fmt.Errorf("sqlite: synchronous must be NORMAL or FULL, not %q", opts.Synchronous)
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	if opts.Readers <= 0 {
		opts.Readers = 4
	}
	dsn := func(extra ...string) string {
		q := url.Values{}
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds()))
		q.Add("_pragma", "synchronous("+opts.Synchronous+")")
		for i := 0; i+1 < len(extra); i += 2 {
			q.Add(extra[i], extra[i+1])
		}
		return "file:" + path + "?" + q.Encode()
	}
	m := &Manager{opts: opts}
	var err error
	if m.w, err = sql.Open("sqlite", dsn("_txlock", "immediate")); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	m.w.SetMaxOpenConns(1)
	m.w.SetMaxIdleConns(1)
	m.w.SetConnMaxLifetime(0)
	m.w.SetConnMaxIdleTime(0)
	if err := m.migrate(ctx); err != nil {
		m.w.Close()
		return nil, err
	}
	if m.r, err = sql.Open("sqlite", dsn("_pragma", "query_only(1)")); err != nil {
		m.w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	m.r.SetMaxOpenConns(opts.Readers)
	m.r.SetMaxIdleConns(opts.Readers)
	m.r.SetConnMaxIdleTime(0)
	prep := []struct {
		db  *sql.DB
		dst **sql.Stmt
		q   string
	}{
		{m.r, &m.get, `SELECT ` + taskrow.Columns + ` FROM tasks WHERE id = ?`},
		{m.w, &m.sel, `SELECT ` + taskrow.Columns + ` FROM tasks WHERE id = ?`},
		{m.w, &m.insert, `INSERT INTO tasks (` + taskrow.Columns + `) VALUES (?` + strings.Repeat(",?", taskrow.NumColumns-1) + `)`},
		{m.w, &m.update, `UPDATE tasks SET ` + taskrow.Mutable(func(int) string { return "?" }) + ` WHERE id=? AND version=?`},
		{m.r, &m.active, `SELECT count(*) FROM tasks
			WHERE subject = ? AND tenant = ? AND status IN ('working','input_required')
			  AND (expires_at IS NULL OR expires_at > ?)`},
		{m.r, &m.orphans, `SELECT ` + taskrow.Columns + ` FROM tasks
			WHERE status IN ('working','input_required')
			  AND (lease_owner = '' OR lease_expires_at <= ?)
			  AND (expires_at IS NULL OR expires_at > ?)
			ORDER BY created_at, id LIMIT ?`},
	}
	for _, p := range prep {
		if *p.dst, err = p.db.PrepareContext(ctx, p.q); err != nil {
			m.Close()
			return nil, fmt.Errorf("sqlite: prepare: %w", err)
		}
	}
	return m, nil
}

// groupInsert inserts one row and returns once it committed. A caller that
// finds no commit in progress becomes the committer: it commits its row and
// then, batch by batch, every row queued meanwhile, so concurrent creates
// share one commit (and with synchronous FULL one fsync). Alone, a caller
// just commits its own row in its own goroutine.
func (m *Manager) groupInsert(args []any) error {
	p := &pendingCreate{args: args, err: make(chan error, 1)}
	m.gmu.Lock()
	m.pending = append(m.pending, p)
	if m.committing {
		m.gmu.Unlock()
		return <-p.err
	}
	m.committing = true
	for len(m.pending) > 0 {
		n := min(len(m.pending), maxBatch)
		batch := m.pending[:n:n]
		m.pending = m.pending[n:]
		m.gmu.Unlock()
		m.commitBatch(batch)
		m.gmu.Lock()
	}
	m.pending = nil
	m.committing = false
	m.gmu.Unlock()
	return <-p.err
}

func (m *Manager) commitBatch(batch []*pendingCreate) {
	ctx := context.Background()
	if len(batch) > 1 {
		err := func() error {
			tx, err := m.w.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			st := tx.StmtContext(ctx, m.insert)
			for _, p := range batch {
				if _, err := st.ExecContext(ctx, p.args...); err != nil {
					return err
				}
			}
			return tx.Commit()
		}()
		if err == nil {
			for _, p := range batch {
				p.err <- nil
			}
			return
		}
		// Fall through: one row at a time, so one bad row fails only itself.
	}
	for _, p := range batch {
		_, err := m.insert.ExecContext(ctx, p.args...)
		p.err <- err
	}
}

// migrate brings the schema to the current version in one write
// transaction (BEGIN IMMEDIATE: processes opening the file at once take
// turns, and each migration is applied once). A database migrated by a
// newer build is refused.
func (m *Manager) migrate(ctx context.Context) error {
	tx, err := m.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	var v int
	switch err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v); {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
			return fmt.Errorf("sqlite: create schema: %w", err)
		}
	case err != nil:
		return fmt.Errorf("sqlite: read schema version: %w", err)
	case v > len(migrations):
		return fmt.Errorf("sqlite: database schema version %d is newer than this build's %d", v, len(migrations))
	}
	for ; v < len(migrations); v++ {
		for _, stmt := range migrations[v] {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("sqlite: migration %d: %w", v+1, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, v); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	return nil
}

// Close closes the database.
func (m *Manager) Close() error {
	for _, s := range []*sql.Stmt{m.get, m.sel, m.insert, m.update, m.orphans, m.active} {
		if s != nil {
			s.Close()
		}
	}
	var errs []error
	if m.r != nil {
		errs = append(errs, m.r.Close())
	}
	if m.w != nil {
		errs = append(errs, m.w.Close())
	}
	return errors.Join(errs...)
}

// DB returns the write handle, for inspection in tests and tools.
func (m *Manager) DB() *sql.DB { return m.w }

// Create implements [tasks.Store]: the task is committed before it returns.
func (m *Manager) Create(ctx context.Context, nt tasks.NewTask) (tasks.Task, error) {
	t, err := nt.Build(tasks.NewID(), m.opts.Clock())
	if err != nil {
		return tasks.Task{}, fmt.Errorf("create task: %w", err)
	}
	args, err := taskrow.Values(&t)
	if err != nil {
		return tasks.Task{}, fmt.Errorf("sqlite: create task: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return tasks.Task{}, fmt.Errorf("sqlite: create task: %w", err)
	}
	// Once queued, the row is waited for even if ctx ends: it may be
	// committing, and the caller must not be told "no task" about a task
	// that exists.
	if err := m.groupInsert(args); err != nil {
		return tasks.Task{}, fmt.Errorf("sqlite: create task: %w", err)
	}
	m.opts.Notify(ctx, t.ID)
	return t, nil
}

// CountActive implements [tasks.ActiveCounter].
func (m *Manager) CountActive(ctx context.Context, p tasks.Principal) (int, error) {
	var n int
	if err := m.active.QueryRowContext(ctx, p.Subject, p.Tenant, m.opts.Clock().UnixNano()).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count tasks in progress: %w", err)
	}
	return n, nil
}

// Get implements [tasks.Store].
func (m *Manager) Get(ctx context.Context, p tasks.Principal, id string) (tasks.Task, error) {
	t, err := taskrow.Scan(m.get.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return tasks.Task{}, tasks.ErrNotFound
	}
	if err != nil {
		return tasks.Task{}, fmt.Errorf("sqlite: get task: %w", err)
	}
	if t.Owner != p || t.Expired(m.opts.Clock()) {
		return tasks.Task{}, tasks.ErrNotFound
	}
	return t, nil
}

// change is one state-machine step: it mutates t and reports whether to
// store it and whether the change is visible to clients (publish).
type change func(t *tasks.Task, now time.Time) (store, visible bool, err error)

// mutate runs fn on the current row inside one write transaction.
func (m *Manager) mutate(ctx context.Context, id string, owner *tasks.Principal, fn change) (tasks.Task, error) {
	tx, err := m.w.BeginTx(ctx, nil)
	if err != nil {
		return tasks.Task{}, fmt.Errorf("sqlite: begin: %w", err)
	}
	defer tx.Rollback()
	now := m.opts.Clock()
	t, err := taskrow.Scan(tx.StmtContext(ctx, m.sel).QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) || err == nil && (t.Expired(now) || owner != nil && t.Owner != *owner) {
		return tasks.Task{}, tasks.ErrNotFound
	}
	if err != nil {
		return tasks.Task{}, fmt.Errorf("sqlite: read task: %w", err)
	}
	prev := t.Version
	store, visible, err := fn(&t, now)
	if err != nil {
		return tasks.Task{}, err
	}
	if !store || t.Version == prev {
		return t, nil
	}
	args, err := taskrow.MutableValues(&t)
	if err != nil {
		return tasks.Task{}, fmt.Errorf("sqlite: %w", err)
	}
	res, err := tx.StmtContext(ctx, m.update).ExecContext(ctx, append(args, t.ID, prev)...)
	if err != nil {
		return tasks.Task{}, fmt.Errorf("sqlite: update task: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return tasks.Task{}, fmt.Errorf("sqlite: update task %s: concurrent change (rows %d, %v)", id, n, err)
	}
	if err := tx.Commit(); err != nil {
		return tasks.Task{}, fmt.Errorf("sqlite: commit: %w", err)
	}
	if visible {
		m.opts.Notify(ctx, id)
	}
	return t, nil
}

// Update implements [tasks.Store].
func (m *Manager) Update(ctx context.Context, p tasks.Principal, id string, responses map[string]json.RawMessage) error {
	_, err := m.mutate(ctx, id, &p, func(t *tasks.Task, now time.Time) (bool, bool, error) {
		ch, err := t.AcceptInput(responses, now)
		return ch, true, err
	})
	return err
}

// Cancel implements [tasks.Store].
func (m *Manager) Cancel(ctx context.Context, p tasks.Principal, id string) error {
	_, err := m.mutate(ctx, id, &p, func(t *tasks.Task, now time.Time) (bool, bool, error) {
		return t.RequestCancel(now), true, nil
	})
	return err
}

// Claim implements [tasks.WorkerStore].
func (m *Manager) Claim(ctx context.Context, c tasks.Claim) (tasks.Task, error) {
	return m.mutate(ctx, c.TaskID, nil, func(t *tasks.Task, now time.Time) (bool, bool, error) {
		return true, false, t.TakeLease(c, now)
	})
}

// Heartbeat implements [tasks.WorkerStore].
func (m *Manager) Heartbeat(ctx context.Context, l tasks.Lease, d time.Duration) (tasks.Task, error) {
	return m.mutate(ctx, l.TaskID, nil, func(t *tasks.Task, now time.Time) (bool, bool, error) {
		return true, false, t.Renew(l, d, now)
	})
}

// RequireInput implements [tasks.WorkerStore].
func (m *Manager) RequireInput(ctx context.Context, l tasks.Lease, requests map[string]json.RawMessage, msg string) (tasks.Task, error) {
	return m.mutate(ctx, l.TaskID, nil, func(t *tasks.Task, now time.Time) (bool, bool, error) {
		return true, true, t.AskInput(l, requests, msg, now)
	})
}

// SetStatusMessage implements [tasks.WorkerStore].
func (m *Manager) SetStatusMessage(ctx context.Context, l tasks.Lease, msg string) error {
	_, err := m.mutate(ctx, l.TaskID, nil, func(t *tasks.Task, now time.Time) (bool, bool, error) {
		return true, true, t.SetMessage(l, msg, now)
	})
	return err
}

// Finish implements [tasks.WorkerStore].
func (m *Manager) Finish(ctx context.Context, l tasks.Lease, status tasks.Status, payload json.RawMessage, msg string) error {
	_, err := m.mutate(ctx, l.TaskID, nil, func(t *tasks.Task, now time.Time) (bool, bool, error) {
		return true, true, t.Finish(l, status, payload, msg, now)
	})
	return err
}

// Release implements [tasks.WorkerStore].
func (m *Manager) Release(ctx context.Context, l tasks.Lease) error {
	_, err := m.mutate(ctx, l.TaskID, nil, func(t *tasks.Task, now time.Time) (bool, bool, error) {
		return true, false, t.Release(l, now)
	})
	return err
}

// Checkpoint implements [tasks.WorkerStore].
func (m *Manager) Checkpoint(ctx context.Context, l tasks.Lease, stage tasks.Stage, data json.RawMessage) error {
	_, err := m.mutate(ctx, l.TaskID, nil, func(t *tasks.Task, now time.Time) (bool, bool, error) {
		return true, false, t.SetCheckpoint(l, stage, data, now)
	})
	return err
}

// Orphans implements [tasks.WorkerStore].
func (m *Manager) Orphans(ctx context.Context, asOf time.Time, limit int) ([]tasks.Task, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := m.orphans.QueryContext(ctx, asOf.UnixNano(), m.opts.Clock().UnixNano(), limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list orphans: %w", err)
	}
	defer rows.Close()
	out, err := taskrow.Collect(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list orphans: %w", err)
	}
	return out, nil
}

// Sweep implements [tasks.WorkerStore].
func (m *Manager) Sweep(ctx context.Context, now time.Time) (int, error) {
	n, err := taskrow.Sweep(ctx, func(ctx context.Context, batch int) (int64, error) {
		res, err := m.w.ExecContext(ctx, `DELETE FROM tasks WHERE id IN
			(SELECT id FROM tasks WHERE expires_at IS NOT NULL AND expires_at <= ? LIMIT ?)`, now.UnixNano(), batch)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	})
	if err != nil {
		return n, fmt.Errorf("sqlite: sweep: %w", err)
	}
	return n, nil
}

// Transition is one recorded status change.
type Transition struct {
	TaskID   string
	From, To tasks.Status
	At       time.Time
}

// Transitions returns the audit trail of status changes in commit order
// (for tests and forensic tools).
func (m *Manager) Transitions(ctx context.Context) ([]Transition, error) {
	rows, err := m.r.QueryContext(ctx, `SELECT task_id, from_status, to_status, at FROM task_transitions ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: transitions: %w", err)
	}
	defer rows.Close()
	var out []Transition
	for rows.Next() {
		var tr Transition
		var from, to string
		var at int64
		if err := rows.Scan(&tr.TaskID, &from, &to, &at); err != nil {
			return nil, fmt.Errorf("sqlite: transitions: %w", err)
		}
		tr.From, tr.To, tr.At = tasks.Status(from), tasks.Status(to), taskrow.FromNanos(at)
		out = append(out, tr)
	}
	return out, rows.Err()
}
