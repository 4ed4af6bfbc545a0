package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/audit"
)

// AuditStore keeps audit records in table audit_records of a SQLite
// database, beside the tasks: the indexed columns serve the filters, the
// whole record is kept as its JSON document.
type AuditStore struct {
	db *sql.DB
}

var _ audit.Store = (*AuditStore)(nil)

// NewAuditStore creates the audit table in db if it is missing. db is
// typically [Manager.DB], the database's one write connection: audit
// batches then queue behind task writes rather than contend with them.
// Closing the store does not close db.
func NewAuditStore(ctx context.Context, db *sql.DB) (*AuditStore, error) {
	for _, ddl := range []string{
		`CREATE TABLE IF NOT EXISTS audit_records (
			id      INTEGER PRIMARY KEY AUTOINCREMENT,
			time_ns INTEGER NOT NULL,
			kind    TEXT NOT NULL,
			subject TEXT NOT NULL,
			tool    TEXT NOT NULL,
			outcome TEXT NOT NULL,
			record  TEXT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS audit_records_time ON audit_records (time_ns)`,
		`CREATE INDEX IF NOT EXISTS audit_records_subject ON audit_records (subject, time_ns)`,
	} {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			return nil, fmt.Errorf("sqlite: audit table: %w", err)
		}
	}
	return &AuditStore{db: db}, nil
}

// Write implements [audit.Sink]: one transaction per batch.
func (s *AuditStore) Write(ctx context.Context, batch []audit.Record) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: audit write: %w", err)
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, `INSERT INTO audit_records (time_ns, kind, subject, tool, outcome, record) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("sqlite: audit write: %w", err)
	}
	defer st.Close()
	for i := range batch {
		r := &batch[i]
		doc, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("sqlite: audit record: %w", err)
		}
		if _, err := st.ExecContext(ctx, r.Time.UnixNano(), string(r.Kind), r.Subject, r.Tool, string(r.Outcome), doc); err != nil {
			return fmt.Errorf("sqlite: audit write: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: audit write: %w", err)
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
		where = append(where, c.Column+" "+c.Op+" ?")
		args = append(args, c.Value)
	}
	q := `SELECT record FROM audit_records`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY time_ns DESC, id DESC LIMIT ?`
	args = append(args, f.Limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: audit list: %w", err)
	}
	defer rows.Close()
	var out []audit.Record
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, fmt.Errorf("sqlite: audit list: %w", err)
		}
		var r audit.Record
		if err := json.Unmarshal(doc, &r); err != nil {
			return nil, fmt.Errorf("sqlite: audit list: a stored record does not decode: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: audit list: %w", err)
	}
	return out, nil
}

// auditSweepBatch bounds the rows one sweep transaction deletes, so a large
// backlog never holds the write lock for long.
const auditSweepBatch = 5000

// Sweep implements [audit.Store], in transactions of at most auditSweepBatch
// rows.
func (s *AuditStore) Sweep(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for {
		res, err := s.db.ExecContext(ctx, `DELETE FROM audit_records WHERE id IN
			(SELECT id FROM audit_records WHERE time_ns < ? ORDER BY time_ns LIMIT ?)`, before.UnixNano(), auditSweepBatch)
		if err != nil {
			return total, fmt.Errorf("sqlite: audit sweep: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("sqlite: audit sweep: %w", err)
		}
		total += n
		if n < auditSweepBatch {
			return total, nil
		}
	}
}

// Close implements [audit.Sink]; the database stays open.
func (s *AuditStore) Close() error { return nil }
