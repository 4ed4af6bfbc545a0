// Package taskrow is the row form of a task shared by the SQL task stores
// (packages sqlite and postgres): one column list, one scan, one set of
// values per statement, one batched sweep. A field added to tasks.Task is
// added here once, and each store adds its column in a migration.
//
// Invariants: [Columns], [Scan] and [Values] agree in order; [Mutable] and
// [MutableValues] agree in order, and name every column a state-machine
// step may change (the others are fixed at creation). Times are int64 Unix
// nanoseconds (0 for the zero time), so they round-trip exactly; maps of
// input requests and responses are one JSON object each (NULL when empty).
package taskrow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/tasks"
)

// Columns are the task table's columns, in the order of Scan and Values.
const Columns = `id, subject, tenant, tool, status, status_message, created_at, updated_at, ttl_ns, expires_at,
	poll_ns, params, result, error, input_requests, input_responses, cancel_requested, idempotent,
	lease_owner, lease_token, lease_expires_at, version, stage, checkpoint, secret`

// NumColumns is the number of Columns.
const NumColumns = 25

// mutable are the columns a state-machine step may change.
var mutable = []string{"status", "status_message", "updated_at", "result", "error", "input_requests",
	"input_responses", "cancel_requested", "lease_owner", "lease_token", "lease_expires_at", "version",
	"stage", "checkpoint", "secret"}

// Mutable returns "status=P1, status_message=P2, …" for the mutable
// columns, with placeholder(i) naming the i-th (1-based) argument.
func Mutable(placeholder func(i int) string) string {
	parts := make([]string, len(mutable))
	for i, c := range mutable {
		parts[i] = c + "=" + placeholder(i+1)
	}
	return strings.Join(parts, ", ")
}

// NumMutable is the number of arguments of Mutable.
func NumMutable() int { return len(mutable) }

// Scanner is one result row: database/sql's *Row and *Rows, pgx's Row and
// Rows.
type Scanner interface{ Scan(dest ...any) error }

// Scan reads one row of Columns.
func Scan(s Scanner) (tasks.Task, error) {
	var (
		t                                   tasks.Task
		status, stage                       string
		created, updated, ttl, poll, leaseX int64
		expires                             *int64
		params, result, rpcErr, reqs, resps []byte
		checkpoint                          []byte
	)
	err := s.Scan(&t.ID, &t.Owner.Subject, &t.Owner.Tenant, &t.ToolName, &status, &t.StatusMessage,
		&created, &updated, &ttl, &expires, &poll, &params, &result, &rpcErr, &reqs, &resps,
		&t.CancelRequested, &t.Idempotent, &t.LeaseOwner, &t.LeaseToken, &leaseX, &t.Version,
		&stage, &checkpoint, &t.Secret)
	if err != nil {
		return tasks.Task{}, err
	}
	t.Status, t.Stage = tasks.Status(status), tasks.Stage(stage)
	t.CreatedAt, t.LastUpdatedAt, t.LeaseExpiresAt = FromNanos(created), FromNanos(updated), FromNanos(leaseX)
	t.TTL, t.PollInterval = time.Duration(ttl), time.Duration(poll)
	t.Params, t.Result, t.Error, t.Checkpoint = raw(params), raw(result), raw(rpcErr), raw(checkpoint)
	if t.InputRequests, err = decodeMap(reqs); err != nil {
		return tasks.Task{}, fmt.Errorf("task %s input requests: %w", t.ID, err)
	}
	if t.InputResponses, err = decodeMap(resps); err != nil {
		return tasks.Task{}, fmt.Errorf("task %s input responses: %w", t.ID, err)
	}
	return t, nil
}

// Rows is a result set of Columns.
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// Collect scans every row.
func Collect(rows Rows) ([]tasks.Task, error) {
	var out []tasks.Task
	for rows.Next() {
		t, err := Scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Values returns the values of Columns for a new row.
func Values(t *tasks.Task) ([]any, error) {
	var expires *int64
	if e := t.ExpiresAt(); !e.IsZero() {
		n := e.UnixNano()
		expires = &n
	}
	m, err := MutableValues(t)
	if err != nil {
		return nil, err
	}
	// status, status_message, updated_at come from m; so do result … secret.
	return []any{t.ID, t.Owner.Subject, t.Owner.Tenant, t.ToolName, m[0], m[1],
		Nanos(t.CreatedAt), m[2], int64(t.TTL), expires, int64(t.PollInterval), bytesOrNil(t.Params),
		m[3], m[4], m[5], m[6], m[7], t.Idempotent, m[8], m[9], m[10], m[11], m[12], m[13], m[14]}, nil
}

// MutableValues returns the values of the Mutable columns, in order.
func MutableValues(t *tasks.Task) ([]any, error) {
	reqs, err := encodeMap(t.InputRequests)
	if err != nil {
		return nil, fmt.Errorf("encode input requests: %w", err)
	}
	resps, err := encodeMap(t.InputResponses)
	if err != nil {
		return nil, fmt.Errorf("encode input responses: %w", err)
	}
	return []any{string(t.Status), t.StatusMessage, Nanos(t.LastUpdatedAt), bytesOrNil(t.Result), bytesOrNil(t.Error),
		bytesOrNil(reqs), bytesOrNil(resps), t.CancelRequested, t.LeaseOwner, t.LeaseToken, Nanos(t.LeaseExpiresAt), t.Version,
		string(t.Stage), bytesOrNil(t.Checkpoint), bytesOrNil(t.Secret)}, nil
}

// SweepBatch bounds one DELETE of a sweep, so that a large sweep holds the
// writer (SQLite) or row locks (PostgreSQL) only briefly.
const SweepBatch = 500

// Sweep runs deleteBatch (which deletes at most n expired tasks and
// reports how many) until a batch comes back short, and returns the total.
func Sweep(ctx context.Context, deleteBatch func(ctx context.Context, n int) (int64, error)) (int, error) {
	total := 0
	for {
		n, err := deleteBatch(ctx, SweepBatch)
		if err != nil {
			return total, err
		}
		total += int(n)
		if n < SweepBatch {
			return total, nil
		}
	}
}

// Nanos is t as stored: Unix nanoseconds, 0 for the zero time.
func Nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromNanos reverses Nanos (UTC).
func FromNanos(n int64) time.Time {
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

// bytesOrNil is a payload as an argument: nil (or empty) is NULL.
func bytesOrNil(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

func raw(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}
