package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpgate/mcpgate/audit"
)

// AuditStore keeps audit records in table audit_records, shared by every
// replica on the database: the indexed columns serve the filters, the whole
// record is kept as a jsonb document (for the operator's own queries too).
type AuditStore struct {
	pool *pgxpool.Pool
}

var _ audit.Store = (*AuditStore)(nil)

// auditLock is the advisory lock key under which the table is created.
const auditLock = 0x6d617564 // "maud"

// NewAuditStore creates the audit table in pool's schema if it is missing.
// pool is typically [Manager.Pool]. Closing the store leaves pool open.
func NewAuditStore(ctx context.Context, pool *pgxpool.Pool) (*AuditStore, error) {
	err := createTable(ctx, pool, auditLock,
		`CREATE TABLE IF NOT EXISTS audit_records (
			id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			time_ns bigint NOT NULL,
			kind    text NOT NULL,
			subject text NOT NULL,
			tool    text NOT NULL,
			outcome text NOT NULL,
			record  jsonb NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS audit_records_time ON audit_records (time_ns)`,
		`CREATE INDEX IF NOT EXISTS audit_records_subject ON audit_records (subject, time_ns)`)
	if err != nil {
		return nil, fmt.Errorf("postgres: audit table: %w", err)
	}
	return &AuditStore{pool: pool}, nil
}

// Write implements [audit.Sink]: one COPY per batch.
func (s *AuditStore) Write(ctx context.Context, batch []audit.Record) error {
	rows := make([][]any, len(batch))
	for i := range batch {
		r := &batch[i]
		doc, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("postgres: audit record: %w", err)
		}
		rows[i] = []any{r.Time.UnixNano(), string(r.Kind), r.Subject, r.Tool, string(r.Outcome), string(doc)}
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"audit_records"},
		[]string{"time_ns", "kind", "subject", "tool", "outcome", "record"}, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("postgres: audit write: %w", err)
	}
	return nil
}

// List implements [audit.Store].
func (s *AuditStore) List(ctx context.Context, f audit.Filter) ([]audit.Record, error) {
	f = f.Normalize()
	var (
		where []string
		args  []any
	)
	for _, c := range f.Conds() {
		args = append(args, c.Value)
		where = append(where, c.Column+" "+c.Op+" $"+strconv.Itoa(len(args)))
	}
	q := `SELECT record FROM audit_records`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, f.Limit)
	q += ` ORDER BY time_ns DESC, id DESC LIMIT $` + strconv.Itoa(len(args))
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: audit list: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (audit.Record, error) {
		var doc []byte
		var r audit.Record
		if err := row.Scan(&doc); err != nil {
			return r, err
		}
		if err := json.Unmarshal(doc, &r); err != nil {
			return r, fmt.Errorf("a stored record does not decode: %w", err)
		}
		return r, nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: audit list: %w", err)
	}
	return out, nil
}

// auditSweepBatch bounds the rows one sweep statement deletes.
const auditSweepBatch = 5000

// Sweep implements [audit.Store]. Concurrent sweeps (one per replica)
// delete disjoint rows (FOR UPDATE SKIP LOCKED), so their counts add up.
func (s *AuditStore) Sweep(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, `DELETE FROM audit_records WHERE id IN
			(SELECT id FROM audit_records WHERE time_ns < $1 ORDER BY time_ns LIMIT $2 FOR UPDATE SKIP LOCKED)`,
			before.UnixNano(), auditSweepBatch)
		if err != nil {
			return total, fmt.Errorf("postgres: audit sweep: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < auditSweepBatch {
			return total, nil
		}
	}
}

// Close implements [audit.Sink]; the pool stays open.
func (s *AuditStore) Close() error { return nil }
