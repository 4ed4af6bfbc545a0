package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/store"
)

// auditCmd lists the audit records serve kept: from its store (sink
// "store") or from a JSON-lines file (sink "file:PATH"). Its --config,
// --store and --audit-sink are serve's settings, read from the same file
// and variables, so that `mcpgate audit --config mcpgate.yaml` finds the
// records of `mcpgate serve --config mcpgate.yaml`.
type auditCmd struct {
	ConfigPath string `name:"config" placeholder:"FILE" help:"The YAML settings file serve reads: its store and audit.sink say where the records are."`
	Store      string `name:"store" env:"MCPGATE_STORE" placeholder:"URL" help:"The store serve keeps records in (sqlite:PATH or postgres://...); default: serve's default SQLite file."`
	Sink       string `name:"audit-sink" aliases:"audit" env:"MCPGATE_AUDIT_SINK,MCPGATE_AUDIT" placeholder:"store|file:PATH" help:"Where serve sent the records: store (default) or file:PATH; stdout records cannot be listed."`
	File       string `name:"file" env:"-" placeholder:"PATH" help:"Read this JSON-lines audit file (a file: sink's) instead."`

	Since   string `name:"since" env:"-" placeholder:"DURATION|TIME" help:"Only records from this time on: a duration back from now (90m, 24h) or an RFC 3339 time or date."`
	Until   string `name:"until" env:"-" placeholder:"DURATION|TIME" help:"Only records before this time (same forms as --since)."`
	Subject string `name:"subject" env:"-" help:"Only this caller's records: the subject as records show it (with auth mode oauth the token's sub; without, bearer: and a keyed hash of the token)."`
	Tool    string `name:"tool" env:"-" help:"Only calls of this tool (its served name)."`
	Outcome string `name:"outcome" env:"-" enum:",${outcomes}" default:"" placeholder:"OUTCOME" help:"Only records with this outcome: ${outcomes}."`
	Kind    string `name:"kind" env:"-" enum:",tools/call,task" default:"" placeholder:"tools/call|task" help:"Only tools/call records or task records."`
	Limit   int    `name:"limit" env:"-" default:"100" help:"At most this many records, newest first (at most 10000)."`
	Format  string `name:"format" env:"-" default:"text" enum:"text,json" help:"text (one aligned line per record) or json (JSON lines, the sinks' own format)."`
}

// auditOutcomes are the values --outcome takes, for its enum and help.
var auditOutcomes = []audit.Outcome{audit.OK, audit.ToolError, audit.RPCError, audit.Refused,
	audit.InputRequired, audit.TaskCreated, audit.Pending, audit.Cancelled}

func outcomesVar() string {
	names := make([]string, len(auditOutcomes))
	for i, o := range auditOutcomes {
		names[i] = string(o)
	}
	return strings.Join(names, ",")
}

// Run lists the records the filter selects.
func (c *auditCmd) Run(ctx context.Context, io streams) error {
	f, err := c.filter(time.Now())
	if err != nil {
		return err
	}
	var recs []audit.Record
	switch path, err := c.source(); {
	case err != nil:
		return err
	case path != "":
		recs, err = audit.ReadFile(ctx, path, f)
		if err != nil {
			return err
		}
	default:
		if recs, err = c.list(ctx, f, io.stderr); err != nil {
			return err
		}
	}
	return audit.Format(io.stdout, recs, c.Format)
}

// source is the audit file to read, or "" for the store.
func (c *auditCmd) source() (string, error) {
	if c.File != "" {
		return c.File, nil
	}
	switch sink := c.Sink; {
	case strings.HasPrefix(sink, "file:"):
		return strings.TrimPrefix(sink, "file:"), nil
	case sink == "stdout":
		return "", usagef("audit sink stdout: the records went to serve's standard output; give --file PATH or --store URL")
	case sink == "" || sink == "store":
		return "", nil
	default:
		return "", usagef("--audit-sink %q: want store or file:PATH", sink)
	}
}

// list queries the store's audit table. The store is opened through the
// table of backends serve uses; a SQLite file that does not exist is not
// created.
func (c *auditCmd) list(ctx context.Context, f audit.Filter, stderr io.Writer) ([]audit.Record, error) {
	loc := gateway.StoreLocation(c.Store)
	switch store.Scheme(loc) {
	case "memory":
		return nil, errors.New("store memory keeps no audit records (use a sqlite or postgres store)")
	case "sqlite":
		path := strings.TrimPrefix(strings.TrimPrefix(loc, "sqlite:"), "//")
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("store %s: no such database (serve with --audit-sink store writes it; --store names another)", path)
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := gateway.StoreBackends().Open(ctx, loc, store.Options{Logger: logger})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if b.Audit == nil {
		return nil, fmt.Errorf("store %s keeps no audit records (use a sqlite or postgres store)", b.Location)
	}
	st, err := b.Audit(ctx)
	if err != nil {
		return nil, err
	}
	recs, err := st.List(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", b.Location, err)
	}
	return recs, nil
}

// filter is the audit.Filter the flags ask for, times relative to now.
func (c *auditCmd) filter(now time.Time) (audit.Filter, error) {
	f := audit.Filter{Subject: c.Subject, Tool: c.Tool, Outcome: audit.Outcome(c.Outcome), Kind: audit.Kind(c.Kind), Limit: c.Limit}
	if c.Limit < 1 || c.Limit > audit.MaxLimit {
		return f, usagef("--limit %d: want 1 to %d", c.Limit, audit.MaxLimit)
	}
	var err error
	if f.Since, err = parseWhen(now, c.Since); err != nil {
		return f, usagef("--since %v", err)
	}
	if f.Until, err = parseWhen(now, c.Until); err != nil {
		return f, usagef("--until %v", err)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, usagef("--since %s is not before --until %s", c.Since, c.Until)
	}
	return f, nil
}

// parseWhen reads a time flag: "" (unbounded), a duration back from now,
// an RFC 3339 time or a date (midnight UTC).
func parseWhen(now time.Time, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: a duration back from now must be positive", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want a duration (90m, 24h), an RFC 3339 time or a date (2006-01-02)", s)
}
