package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/mcpgate/mcpgate/tasks"
)

const columns = `id, subject, tenant, tool, status, status_message, created_at, updated_at, ttl_ns, expires_at,
	poll_ns, params, result, error, input_requests, input_responses, cancel_requested, idempotent,
	lease_owner, lease_token, lease_expires_at, version`

const (
	qGet     = `SELECT ` + columns + ` FROM tasks WHERE id = $1`
	qOrphans = `SELECT ` + columns + ` FROM tasks
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
	m.qInsert = `WITH i AS (INSERT INTO tasks (` + columns + `)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,NULL,NULL,NULL,NULL,false,$13,'',0,0,$14)
		RETURNING id) ` + notify("i")
	set := `status=$1, status_message=$2, updated_at=$3, result=$4, error=$5, input_requests=$6,
		input_responses=$7, cancel_requested=$8, lease_owner=$9, lease_token=$10, lease_expires_at=$11, version=$12`
	m.qUpdateVisible = `WITH u AS (UPDATE tasks SET ` + set + `, changed_at = clock_timestamp()
		WHERE id = $13 AND version = $14 RETURNING id) ` + notify("u")
	m.qUpdateQuiet = `WITH u AS (UPDATE tasks SET ` + set + `
		WHERE id = $13 AND version = $14 RETURNING id) SELECT count(*) FROM u`
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

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// encodeMap stores a key → raw JSON map as one JSON object (nil when empty).
func encodeMap(m map[string]json.RawMessage) ([]byte, error) {
	if len(m) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func decodeMap(b []byte) (map[string]json.RawMessage, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// raw converts a payload to a bytea argument: nil stays NULL.
func raw(r json.RawMessage) []byte {
	if r == nil {
		return nil
	}
	return []byte(r)
}

func rawOrNil(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

func scanTask(row pgx.Row) (tasks.Task, error) {
	var (
		t                                   tasks.Task
		status                              string
		created, updated, ttl, poll, leaseX int64
		expires                             *int64
		params, result, rpcErr, reqs, resps []byte
	)
	err := row.Scan(&t.ID, &t.Owner.Subject, &t.Owner.Tenant, &t.ToolName, &status, &t.StatusMessage,
		&created, &updated, &ttl, &expires, &poll, &params, &result, &rpcErr, &reqs, &resps,
		&t.CancelRequested, &t.Idempotent, &t.LeaseOwner, &t.LeaseToken, &leaseX, &t.Version)
	if err != nil {
		return tasks.Task{}, err
	}
	t.Status = tasks.Status(status)
	t.CreatedAt, t.LastUpdatedAt, t.LeaseExpiresAt = fromNanos(created), fromNanos(updated), fromNanos(leaseX)
	t.TTL, t.PollInterval = time.Duration(ttl), time.Duration(poll)
	t.Params, t.Result, t.Error = rawOrNil(params), rawOrNil(result), rawOrNil(rpcErr)
	if t.InputRequests, err = decodeMap(reqs); err != nil {
		return tasks.Task{}, fmt.Errorf("task %s input requests: %w", t.ID, err)
	}
	if t.InputResponses, err = decodeMap(resps); err != nil {
		return tasks.Task{}, fmt.Errorf("task %s input responses: %w", t.ID, err)
	}
	return t, nil
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
	var expires *int64
	if e := t.ExpiresAt(); !e.IsZero() {
		n := e.UnixNano()
		expires = &n
	}
	var n int64
	err = m.pool.QueryRow(ctx, m.qInsert, t.ID, t.Owner.Subject, t.Owner.Tenant, t.ToolName, string(t.Status),
		t.StatusMessage, nanos(t.CreatedAt), nanos(t.LastUpdatedAt), int64(t.TTL), expires, int64(t.PollInterval),
		raw(t.Params), t.Idempotent, t.Version).Scan(&n)
	if err != nil {
		return tasks.Task{}, fmt.Errorf("postgres: create task: %w", err)
	}
	if n != 1 {
		return tasks.Task{}, fmt.Errorf("postgres: create task: %d rows inserted", n)
	}
	m.opts.Notify(ctx, t.ID)
	return t, nil
}

// read loads one task; (zero, false, nil) when there is no such row.
func (m *Manager) read(ctx context.Context, id string) (tasks.Task, bool, error) {
	t, err := scanTask(m.pool.QueryRow(ctx, qGet, id))
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
		reqs, err := encodeMap(t.InputRequests)
		if err != nil {
			return tasks.Task{}, fmt.Errorf("postgres: encode input requests: %w", err)
		}
		resps, err := encodeMap(t.InputResponses)
		if err != nil {
			return tasks.Task{}, fmt.Errorf("postgres: encode input responses: %w", err)
		}
		q := m.qUpdateQuiet
		if visible {
			q = m.qUpdateVisible
		}
		var n int64
		err = m.pool.QueryRow(ctx, q, string(t.Status), t.StatusMessage, nanos(t.LastUpdatedAt),
			raw(t.Result), raw(t.Error), reqs, resps, t.CancelRequested,
			t.LeaseOwner, t.LeaseToken, nanos(t.LeaseExpiresAt), t.Version, t.ID, prev).Scan(&n)
		if err != nil {
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
	var out []tasks.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list orphans: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list orphans: %w", err)
	}
	return out, nil
}

// sweepBatch bounds one DELETE so a large sweep holds few row locks at once.
const sweepBatch = 500

// Sweep implements [tasks.WorkerStore]. Replicas may sweep at the same
// time: each expired task is deleted, and counted, by exactly one of them.
func (m *Manager) Sweep(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for {
		tag, err := m.pool.Exec(ctx, qSweep, now.UnixNano(), sweepBatch)
		if err != nil {
			return total, fmt.Errorf("postgres: sweep: %w", err)
		}
		n := int(tag.RowsAffected())
		total += n
		if n < sweepBatch {
			return total, nil
		}
	}
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
		tr.From, tr.To, tr.At = tasks.Status(from), tasks.Status(to), fromNanos(at)
		out = append(out, tr)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: transitions: %w", err)
	}
	return out, nil
}
