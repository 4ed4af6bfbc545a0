package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/internal/taskrow"
	"github.com/mcpgate/mcpgate/tasks"
)

const (
	qGet     = `SELECT ` + taskrow.Columns + ` FROM tasks WHERE id = $1`
	qOrphans = `SELECT ` + taskrow.Columns + ` FROM tasks
		WHERE status IN ('working','input_required')
		  AND (lease_owner = '' OR lease_expires_at <= $1)
		  AND (expires_at IS NULL OR expires_at > $2)
		ORDER BY created_at, id LIMIT $3`
	// qSweep deletes one batch; SKIP LOCKED keeps concurrent sweepers (and
	// in-flight writers) out of each other's way, and no row is counted
	// twice.
	qSweep = `DELETE FROM tasks WHERE id IN (
		SELECT id FROM tasks WHERE expires_at IS NOT NULL AND expires_at <= $1
		LIMIT $2 FOR UPDATE SKIP LOCKED)`
)

// prepareSQL builds the statements that depend on the notify setting. Each
// is one statement (one round trip, one implicit transaction) that reports
// how many rows it wrote; with NOTIFY on, it notifies for exactly the rows it
// wrote, so the event commits with the change.
func (m *Manager) prepareSQL() {
	notify := func(cte string) string {
		if m.channel == "" {
			return `SELECT count(*) FROM ` + cte
		}
		return `SELECT count(*) FROM ` + cte + `, LATERAL pg_notify(` + quoteLiteral(m.channel) + `, ` + cte + `.id)`
	}
	values := make([]string, taskrow.NumColumns)
	for i := range values {
		values[i] = "$" + strconv.Itoa(i+1)
	}
	m.qInsert = `WITH i AS (INSERT INTO tasks (` + taskrow.Columns + `) VALUES (` + strings.Join(values, ",") + `)
		RETURNING id) ` + notify("i")
	set := taskrow.Mutable(func(i int) string { return "$" + strconv.Itoa(i) })
	key := fmt.Sprintf("WHERE id = $%d AND version = $%d", taskrow.NumMutable()+1, taskrow.NumMutable()+2)
	m.qUpdateVisible = `WITH u AS (UPDATE tasks SET ` + set + `, changed_at = clock_timestamp()
		` + key + ` RETURNING id) ` + notify("u")
	m.qUpdateQuiet = `WITH u AS (UPDATE tasks SET ` + set + `
		` + key + ` RETURNING id) SELECT count(*) FROM u`
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// validID reports whether id can be stored at all; anything else cannot be
// a task id and is simply not found.
func validID(id string) bool {
	return id != "" && len(id) <= 1024 && utf8.ValidString(id) && !strings.ContainsRune(id, 0)
}

// storable reports whether PostgreSQL can store every s as text (valid
// UTF-8 without NUL).
func storable(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			return false
		}
	}
	return true
}

// Create implements [tasks.Store]: the task is committed before it returns.
func (m *Manager) Create(ctx context.Context, nt tasks.NewTask) (tasks.Task, error) {
	t, err := nt.Build(tasks.NewID(), m.opts.Clock())
	if err != nil {
		return tasks.Task{}, fmt.Errorf("create task: %w", err)
	}
	if !storable(t.Owner.Subject, t.Owner.Tenant, t.ToolName, t.StatusMessage) {
		return tasks.Task{}, fmt.Errorf("create task: %w: text must be valid UTF-8 without NUL", tasks.ErrInvalid)
	}
	args, err := taskrow.Values(&t)
	if err != nil {
		return tasks.Task{}, fmt.Errorf("postgres: create task: %w", err)
	}
	var n int64
	if err := m.pool.QueryRow(ctx, m.qInsert, args...).Scan(&n); err != nil {
		return tasks.Task{}, fmt.Errorf("postgres: create task: %w", err)
	}
	if n != 1 {
		return tasks.Task{}, fmt.Errorf("postgres: create task: %d rows inserted", n)
	}
	m.opts.Notify(ctx, t.ID)
	return t, nil
}

// CountActive implements [tasks.ActiveCounter].
func (m *Manager) CountActive(ctx context.Context, p tasks.Principal) (int, error) {
	var n int
	err := m.pool.QueryRow(ctx, `SELECT count(*) FROM tasks
		WHERE subject = $1 AND tenant = $2 AND status IN ('working','input_required')
		  AND (expires_at IS NULL OR expires_at > $3)`, p.Subject, p.Tenant, m.opts.Clock().UnixNano()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("postgres: count tasks in progress: %w", err)
	}
	return n, nil
}

// read loads one task; (zero, false, nil) when there is no such row.
func (m *Manager) read(ctx context.Context, id string) (tasks.Task, bool, error) {
	t, err := taskrow.Scan(m.pool.QueryRow(ctx, qGet, id))
	if isNoRows(err) {
		return tasks.Task{}, false, nil
	}
	if err != nil {
		return tasks.Task{}, false, fmt.Errorf("postgres: read task: %w", err)
	}
	return t, true, nil
}

// Get implements [tasks.Store].
func (m *Manager) Get(ctx context.Context, p tasks.Principal, id string) (tasks.Task, error) {
	if !validID(id) {
		return tasks.Task{}, tasks.ErrNotFound
	}
	t, ok, err := m.read(ctx, id)
	if err != nil {
		return tasks.Task{}, err
	}
	if !ok || t.Owner != p || t.Expired(m.opts.Clock()) {
		return tasks.Task{}, tasks.ErrNotFound
	}
	return t, nil
}

// change is one state-machine step: it mutates t and reports whether the
// change is visible to clients (stamped, notified and published).
type change func(t *tasks.Task, now time.Time) (visible bool, err error)

// maxAttempts bounds the compare-and-swap retries of one mutation. Each
// failed attempt means another writer committed a change to the same task,
// so this is only reached under pathological contention.
const maxAttempts = 100

// mutate applies fn to the current row and stores the result with a
// conditional UPDATE on the version it read; when another writer got there
// first it re-reads and re-applies. Nothing is written when fn changes
// nothing (Version unchanged) or fails.
func (m *Manager) mutate(ctx context.Context, id string, owner *tasks.Principal, fn change) (tasks.Task, error) {
	if !validID(id) {
		return tasks.Task{}, tasks.ErrNotFound
	}
	for attempt := 1; ; attempt++ {
		now := m.opts.Clock()
		t, ok, err := m.read(ctx, id)
		if err != nil {
			return tasks.Task{}, err
		}
		if !ok || t.Expired(now) || owner != nil && t.Owner != *owner {
			return tasks.Task{}, tasks.ErrNotFound
		}
		prev := t.Version
		visible, err := fn(&t, now)
		if err != nil {
			return tasks.Task{}, err
		}
		if t.Version == prev {
			return t, nil
		}
		if !storable(t.StatusMessage, t.LeaseOwner) {
			return tasks.Task{}, fmt.Errorf("%w: text must be valid UTF-8 without NUL", tasks.ErrInvalid)
		}
		args, err := taskrow.MutableValues(&t)
		if err != nil {
			return tasks.Task{}, fmt.Errorf("postgres: %w", err)
		}
		q := m.qUpdateQuiet
		if visible {
			q = m.qUpdateVisible
		}
		var n int64
		if err := m.pool.QueryRow(ctx, q, append(args, t.ID, prev)...).Scan(&n); err != nil {
			return tasks.Task{}, fmt.Errorf("postgres: update task: %w", err)
		}
		if n == 1 {
			if visible {
				m.opts.Notify(ctx, id)
			}
			return t, nil
		}
		// Another writer committed first (or the task was swept): start over
		// from the row as it is now.
		if attempt == maxAttempts {
			return tasks.Task{}, fmt.Errorf("postgres: update task %s: still contended after %d attempts", id, attempt)
		}
		if attempt > 2 {
			if err := pause(ctx, attempt); err != nil {
				return tasks.Task{}, err
			}
		}
	}
}

// pause waits a short random time that grows with attempt (at most ~10ms),
// so writers contending on one row spread out.
func pause(ctx context.Context, attempt int) error {
	d := time.Duration(rand.Int64N(int64(min(attempt, 20)) * int64(500*time.Microsecond)))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("postgres: update task: %w", context.Cause(ctx))
	}
}

// Update implements [tasks.Store].
func (m *Manager) Update(ctx context.Context, p tasks.Principal, id string, responses map[string]json.RawMessage) error {
	_, err := m.mutate(ctx, id, &p, func(t *tasks.Task, now time.Time) (bool, error) {
		_, err := t.AcceptInput(responses, now)
		return true, err
	})
	return err
}

// Cancel implements [tasks.Store].
func (m *Manager) Cancel(ctx context.Context, p tasks.Principal, id string) error {
	_, err := m.mutate(ctx, id, &p, func(t *tasks.Task, now time.Time) (bool, error) {
		t.RequestCancel(now)
		return true, nil
	})
	return err
}

// Claim implements [tasks.WorkerStore].
func (m *Manager) Claim(ctx context.Context, c tasks.Claim) (tasks.Task, error) {
	return m.mutate(ctx, c.TaskID, nil, func(t *tasks.Task, now time.Time) (bool, error) {
		return false, t.TakeLease(c, now)
	})
}

// Heartbeat implements [tasks.WorkerStore].
func (m *Manager) Heartbeat(ctx context.Context, l tasks.Lease, d time.Duration) (tasks.Task, error) {
	return m.mutate(ctx, l.TaskID, nil, func(t *tasks.Task, now time.Time) (bool, error) {
		return false, t.Renew(l, d, now)
	})
}

// RequireInput implements [tasks.WorkerStore].
func (m *Manager) RequireInput(ctx context.Context, l tasks.Lease, requests map[string]json.RawMessage, msg string) (tasks.Task, error) {
	return m.mutate(ctx, l.TaskID, nil, func(t *tasks.Task, now time.Time) (bool, error) {
		return true, t.AskInput(l, requests, msg, now)
	})
}

// SetStatusMessage implements [tasks.WorkerStore].
func (m *Manager) SetStatusMessage(ctx context.Context, l tasks.Lease, msg string) error {
	_, err := m.mutate(ctx, l.TaskID, nil, func(t *tasks.Task, now time.Time) (bool, error) {
		return true, t.SetMessage(l, msg, now)
	})
	return err
}

// Finish implements [tasks.WorkerStore].
func (m *Manager) Finish(ctx context.Context, l tasks.Lease, status tasks.Status, payload json.RawMessage, msg string) error {
	_, err := m.mutate(ctx, l.TaskID, nil, func(t *tasks.Task, now time.Time) (bool, error) {
		return true, t.Finish(l, status, payload, msg, now)
	})
	return err
}

// Release implements [tasks.WorkerStore].
func (m *Manager) Release(ctx context.Context, l tasks.Lease) error {
	_, err := m.mutate(ctx, l.TaskID, nil, func(t *tasks.Task, now time.Time) (bool, error) {
		return false, t.Release(l, now)
	})
	return err
}

// Checkpoint implements [tasks.WorkerStore].
func (m *Manager) Checkpoint(ctx context.Context, l tasks.Lease, stage tasks.Stage, data json.RawMessage) error {
	_, err := m.mutate(ctx, l.TaskID, nil, func(t *tasks.Task, now time.Time) (bool, error) {
		return false, t.SetCheckpoint(l, stage, data, now)
	})
	return err
}

// Orphans implements [tasks.WorkerStore]. It is a plain read: acting on an
// orphan takes a fenced Claim, which exactly one of the replicas that listed
// it wins.
func (m *Manager) Orphans(ctx context.Context, asOf time.Time, limit int) ([]tasks.Task, error) {
	var lim *int64
	if limit > 0 {
		l := int64(limit)
		lim = &l
	}
	rows, err := m.pool.Query(ctx, qOrphans, asOf.UnixNano(), m.opts.Clock().UnixNano(), lim)
	if err != nil {
		return nil, fmt.Errorf("postgres: list orphans: %w", err)
	}
	defer rows.Close()
	out, err := taskrow.Collect(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: list orphans: %w", err)
	}
	return out, nil
}

// Sweep implements [tasks.WorkerStore]. Replicas may sweep at the same
// time: each expired task is deleted, and counted, by exactly one of them.
func (m *Manager) Sweep(ctx context.Context, now time.Time) (int, error) {
	n, err := taskrow.Sweep(ctx, func(ctx context.Context, batch int) (int64, error) {
		tag, err := m.pool.Exec(ctx, qSweep, now.UnixNano(), batch)
		return tag.RowsAffected(), err
	})
	if err != nil {
		return n, fmt.Errorf("postgres: sweep: %w", err)
	}
	return n, nil
}

// Transition is one recorded status change.
type Transition struct {
	TaskID   string
	From, To tasks.Status
	// Version is the task's version after the change.
	Version int64
	At      time.Time
}

// Transitions returns the audit trail of status changes in commit order,
// of one task or (id "") of all tasks, for tests and forensic tools.
func (m *Manager) Transitions(ctx context.Context, id string) ([]Transition, error) {
	rows, err := m.pool.Query(ctx, `SELECT task_id, from_status, to_status, version, at FROM task_transitions
		WHERE $1 = '' OR task_id = $1 ORDER BY seq`, id)
	if err != nil {
		return nil, fmt.Errorf("postgres: transitions: %w", err)
	}
	defer rows.Close()
	var out []Transition
	for rows.Next() {
		var tr Transition
		var from, to string
		var at int64
		if err := rows.Scan(&tr.TaskID, &from, &to, &tr.Version, &at); err != nil {
			return nil, fmt.Errorf("postgres: transitions: %w", err)
		}
		tr.From, tr.To, tr.At = tasks.Status(from), tasks.Status(to), taskrow.FromNanos(at)
		out = append(out, tr)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: transitions: %w", err)
	}
	return out, nil
}
