package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Sink receives batches of records from a [Recorder]'s goroutine (one call
// at a time).
type Sink interface {
	Write(ctx context.Context, batch []Record) error
	Close() error
}

// Store is a sink that keeps records in a database table (package sqlite
// and package postgres have one each) and can list and expire them.
type Store interface {
	Sink
	// List returns the records f selects, newest first.
	List(ctx context.Context, f Filter) ([]Record, error)
	// Sweep deletes the records older than before and returns how many.
	Sweep(ctx context.Context, before time.Time) (int64, error)
}

// ParseSink turns the configured sink ("stdout", "file:PATH" or "store")
// into a Sink. stdout is where "stdout" writes; store is the task store's
// audit table, required by "store".
func ParseSink(spec string, stdout io.Writer, store Store) (Sink, error) {
	switch {
	case spec == "stdout":
		return NewWriterSink(stdout), nil
	case strings.HasPrefix(spec, "file:"):
		return OpenFile(strings.TrimPrefix(spec, "file:"))
	case spec == "store":
		if store == nil {
			return nil, errors.New(`audit: sink "store" needs a SQLite or PostgreSQL store`)
		}
		return store, nil
	}
	return nil, fmt.Errorf("audit: sink %q: want stdout, file:PATH or store", spec)
}

// encodeLines appends the JSON lines of batch to buf.
func encodeLines(buf *bytes.Buffer, batch []Record) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	for i := range batch {
		if err := enc.Encode(&batch[i]); err != nil {
			return fmt.Errorf("audit: encode record: %w", err)
		}
	}
	return nil
}

// WriterSink writes JSON lines to an io.Writer, one Write per batch.
type WriterSink struct {
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
}

// NewWriterSink returns a sink writing JSON lines to w (for example
// os.Stdout). Closing it does not close w.
func NewWriterSink(w io.Writer) *WriterSink { return &WriterSink{w: w} }

// Write implements [Sink].
func (s *WriterSink) Write(_ context.Context, batch []Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Reset()
	if err := encodeLines(&s.buf, batch); err != nil {
		return err
	}
	_, err := s.w.Write(s.buf.Bytes())
	return err
}

// Close implements [Sink].
func (s *WriterSink) Close() error { return nil }

// FileSink appends JSON lines to a file. Each batch is one write(2) on a
// descriptor opened with O_APPEND, under an exclusive advisory lock
// (flock) where the system has one, so several processes (replicas,
// rotations by copy-truncate) may append to one file without interleaving
// their lines.
type FileSink struct {
	WriterSink
	f *lockedFile
}

// OpenFile opens (creating, mode 0600) the file at path for appending.
func OpenFile(path string) (*FileSink, error) {
	if path == "" {
		return nil, errors.New("audit: file sink: empty path")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: file sink: %w", err)
	}
	lf := &lockedFile{f}
	return &FileSink{WriterSink: WriterSink{w: lf}, f: lf}, nil
}

// Close implements [Sink].
func (s *FileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.f.Close()
}

// lockedFile writes under the file's advisory lock.
type lockedFile struct{ f *os.File }

func (l *lockedFile) Write(p []byte) (int, error) {
	unlock, err := lockFile(l.f)
	if err != nil {
		return 0, fmt.Errorf("audit: lock %s: %w", l.f.Name(), err)
	}
	defer unlock()
	n, err := l.f.Write(p)
	if err != nil {
		return n, fmt.Errorf("audit: append to %s: %w", l.f.Name(), err)
	}
	return n, nil
}

// Filter selects records.
type Filter struct {
	Since, Until time.Time // [Since, Until); zero means unbounded
	Subject      string
	Tool         string
	Outcome      Outcome
	Kind         Kind
	// Limit is the most records returned (default DefaultLimit, at most
	// MaxLimit).
	Limit int
}

// The limits of a Filter.
const (
	DefaultLimit = 100
	MaxLimit     = 10_000
)

// Normalize returns f with its limit defaulted and bounded.
func (f Filter) Normalize() Filter {
	if f.Limit <= 0 {
		f.Limit = DefaultLimit
	}
	f.Limit = min(f.Limit, MaxLimit)
	return f
}

// Cond is one condition of a Filter on the columns the stores index:
// time_ns (Unix nanoseconds), kind, subject, tool and outcome.
type Cond struct {
	Column string
	Op     string // "=", ">=" or "<"
	Value  any    // an int64 for time_ns, a string otherwise
}

// Conds lists f's conditions on the stores' columns, for a store's WHERE
// clause (the limit aside).
func (f Filter) Conds() []Cond {
	var cs []Cond
	if !f.Since.IsZero() {
		cs = append(cs, Cond{"time_ns", ">=", f.Since.UnixNano()})
	}
	if !f.Until.IsZero() {
		cs = append(cs, Cond{"time_ns", "<", f.Until.UnixNano()})
	}
	for _, c := range []struct{ col, v string }{
		{"subject", f.Subject}, {"tool", f.Tool}, {"outcome", string(f.Outcome)}, {"kind", string(f.Kind)},
	} {
		if c.v != "" {
			cs = append(cs, Cond{c.col, "=", c.v})
		}
	}
	return cs
}

// Match reports whether f selects r (ignoring the limit).
func (f Filter) Match(r *Record) bool {
	switch {
	case !f.Since.IsZero() && r.Time.Before(f.Since),
		!f.Until.IsZero() && !r.Time.Before(f.Until),
		f.Subject != "" && r.Subject != f.Subject,
		f.Tool != "" && r.Tool != f.Tool,
		f.Outcome != "" && r.Outcome != f.Outcome,
		f.Kind != "" && r.Kind != f.Kind:
		return false
	}
	return true
}
