package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mcpgate/mcpgate/tasks"
	"github.com/mcpgate/mcpgate/telemetry"
)

// tracedTasks is a task manager whose operations are client spans
// ("create tasks", "claim tasks", …) under the request or task run they
// serve. An operation outside any trace (the runner's scans, heartbeats
// between requests) makes none: background maintenance must not start a
// trace every few seconds.
type tracedTasks struct {
	m      tasks.Manager
	count  tasks.ActiveCounter // m, counting
	tracer *telemetry.Tracer
	system string // db.system.name: sqlite or postgresql
}

// traceTasks decorates m when tracing is on and the store is a database
// (every manager here counts tasks in progress; one that does not is left
// as it is, so that the decorator never hides a method).
func traceTasks(m tasks.Manager, tracer *telemetry.Tracer, system string) tasks.Manager {
	count, ok := m.(tasks.ActiveCounter)
	if tracer == nil || system == "" || !ok {
		return m
	}
	return &tracedTasks{m: m, count: count, tracer: tracer, system: system}
}

// span runs op as a store span when ctx is traced.
func (t *tracedTasks) span(ctx context.Context, op string, f func(context.Context) error) {
	if telemetry.TraceID(ctx) == "" {
		_ = f(ctx)
		return
	}
	ctx, s := t.tracer.StartStore(ctx, telemetry.Store{System: t.system, Operation: op, Collection: "tasks"})
	err := f(ctx)
	if errors.Is(err, tasks.ErrNotFound) {
		err = nil // an answer, not a failure of the store
	}
	s.End(telemetry.Outcome{Err: err})
}

func (t *tracedTasks) Create(ctx context.Context, nt tasks.NewTask) (tk tasks.Task, err error) {
	t.span(ctx, "create", func(ctx context.Context) error { tk, err = t.m.Create(ctx, nt); return err })
	return tk, err
}

func (t *tracedTasks) Get(ctx context.Context, p tasks.Principal, id string) (tk tasks.Task, err error) {
	t.span(ctx, "get", func(ctx context.Context) error { tk, err = t.m.Get(ctx, p, id); return err })
	return tk, err
}

func (t *tracedTasks) Update(ctx context.Context, p tasks.Principal, id string, r map[string]json.RawMessage) (err error) {
	t.span(ctx, "update", func(ctx context.Context) error { err = t.m.Update(ctx, p, id, r); return err })
	return err
}

func (t *tracedTasks) Cancel(ctx context.Context, p tasks.Principal, id string) (err error) {
	t.span(ctx, "cancel", func(ctx context.Context) error { err = t.m.Cancel(ctx, p, id); return err })
	return err
}

func (t *tracedTasks) Claim(ctx context.Context, c tasks.Claim) (tk tasks.Task, err error) {
	t.span(ctx, "claim", func(ctx context.Context) error { tk, err = t.m.Claim(ctx, c); return err })
	return tk, err
}

func (t *tracedTasks) Heartbeat(ctx context.Context, l tasks.Lease, d time.Duration) (tk tasks.Task, err error) {
	t.span(ctx, "heartbeat", func(ctx context.Context) error { tk, err = t.m.Heartbeat(ctx, l, d); return err })
	return tk, err
}

func (t *tracedTasks) RequireInput(ctx context.Context, l tasks.Lease, r map[string]json.RawMessage, msg string) (tk tasks.Task, err error) {
	t.span(ctx, "require_input", func(ctx context.Context) error { tk, err = t.m.RequireInput(ctx, l, r, msg); return err })
	return tk, err
}

func (t *tracedTasks) SetStatusMessage(ctx context.Context, l tasks.Lease, msg string) (err error) {
	t.span(ctx, "set_status_message", func(ctx context.Context) error { err = t.m.SetStatusMessage(ctx, l, msg); return err })
	return err
}

func (t *tracedTasks) Finish(ctx context.Context, l tasks.Lease, st tasks.Status, payload json.RawMessage, msg string) (err error) {
	t.span(ctx, "finish", func(ctx context.Context) error { err = t.m.Finish(ctx, l, st, payload, msg); return err })
	return err
}

func (t *tracedTasks) Release(ctx context.Context, l tasks.Lease) (err error) {
	t.span(ctx, "release", func(ctx context.Context) error { err = t.m.Release(ctx, l); return err })
	return err
}

func (t *tracedTasks) Checkpoint(ctx context.Context, l tasks.Lease, stage tasks.Stage, data json.RawMessage) (err error) {
	t.span(ctx, "checkpoint", func(ctx context.Context) error { err = t.m.Checkpoint(ctx, l, stage, data); return err })
	return err
}

func (t *tracedTasks) Orphans(ctx context.Context, asOf time.Time, limit int) (out []tasks.Task, err error) {
	t.span(ctx, "orphans", func(ctx context.Context) error { out, err = t.m.Orphans(ctx, asOf, limit); return err })
	return out, err
}

func (t *tracedTasks) Sweep(ctx context.Context, now time.Time) (n int, err error) {
	t.span(ctx, "sweep", func(ctx context.Context) error { n, err = t.m.Sweep(ctx, now); return err })
	return n, err
}

// CountActive implements [tasks.ActiveCounter].
func (t *tracedTasks) CountActive(ctx context.Context, p tasks.Principal) (n int, err error) {
	t.span(ctx, "count_active", func(ctx context.Context) error { n, err = t.count.CountActive(ctx, p); return err })
	return n, err
}
