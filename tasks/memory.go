package tasks

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// DefaultMemoryLimit is the task bound of a [Memory] built with a
// non-positive limit.
const DefaultMemoryLimit = 10_000

// Memory is a process-local [Manager] for development and tests only: its
// state dies with the process and is invisible to other replicas, so nothing
// selects it implicitly. It holds at most a fixed number of tasks; Create
// sweeps expired tasks when full and then fails with [ErrCapacity].
type Memory struct {
	opts  Options
	limit int

	mu    sync.Mutex
	tasks map[string]*Task
}

var _ Manager = (*Memory)(nil)

// NewMemory returns an empty in-memory manager holding at most limit tasks.
func NewMemory(limit int, opts Options) *Memory {
	if limit <= 0 {
		limit = DefaultMemoryLimit
	}
	return &Memory{opts: opts, limit: limit, tasks: make(map[string]*Task)}
}

// Create implements [Store].
func (m *Memory) Create(ctx context.Context, nt NewTask) (Task, error) {
	now := m.opts.Clock()
	t, err := nt.Build(NewID(), now)
	if err != nil {
		return Task{}, fmt.Errorf("create task: %w", err)
	}
	m.mu.Lock()
	if len(m.tasks) >= m.limit {
		m.sweepLocked(now)
	}
	if len(m.tasks) >= m.limit {
		m.mu.Unlock()
		return Task{}, fmt.Errorf("create task: %w (limit %d)", ErrCapacity, m.limit)
	}
	stored := t.Clone()
	m.tasks[t.ID] = &stored
	m.mu.Unlock()
	m.opts.Notify(ctx, t.ID)
	return t, nil
}

// lookup returns the live task for id, nil if unknown or expired.
func (m *Memory) lookup(id string, now time.Time) *Task {
	t := m.tasks[id]
	if t == nil || t.Expired(now) {
		return nil
	}
	return t
}

// Get implements [Store].
func (m *Memory) Get(_ context.Context, p Principal, id string) (Task, error) {
	now := m.opts.Clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.lookup(id, now)
	if t == nil || t.Owner != p {
		return Task{}, ErrNotFound
	}
	return t.Clone(), nil
}

// mutate applies fn to a copy of the task and stores it if fn reports a change.
func (m *Memory) mutate(ctx context.Context, id string, owner *Principal, fn func(t *Task, now time.Time) (changed, visible bool, err error)) (Task, error) {
	now := m.opts.Clock()
	m.mu.Lock()
	cur := m.lookup(id, now)
	if cur == nil || (owner != nil && cur.Owner != *owner) {
		m.mu.Unlock()
		return Task{}, ErrNotFound
	}
	next := cur.Clone()
	changed, visible, err := fn(&next, now)
	if err != nil {
		m.mu.Unlock()
		return Task{}, err
	}
	if changed {
		stored := next.Clone()
		m.tasks[id] = &stored
	}
	m.mu.Unlock()
	if changed && visible {
		m.opts.Notify(ctx, id)
	}
	return next, nil
}

// Update implements [Store].
func (m *Memory) Update(ctx context.Context, p Principal, id string, responses map[string]json.RawMessage) error {
	_, err := m.mutate(ctx, id, &p, func(t *Task, now time.Time) (bool, bool, error) {
		ch, err := t.AcceptInput(responses, now)
		return ch, true, err
	})
	return err
}

// Cancel implements [Store].
func (m *Memory) Cancel(ctx context.Context, p Principal, id string) error {
	_, err := m.mutate(ctx, id, &p, func(t *Task, now time.Time) (bool, bool, error) {
		return t.RequestCancel(now), true, nil
	})
	return err
}

// Claim implements [WorkerStore].
func (m *Memory) Claim(ctx context.Context, c Claim) (Task, error) {
	return m.mutate(ctx, c.TaskID, nil, func(t *Task, now time.Time) (bool, bool, error) {
		return true, false, t.TakeLease(c, now)
	})
}

// Heartbeat implements [WorkerStore].
func (m *Memory) Heartbeat(ctx context.Context, l Lease, d time.Duration) (Task, error) {
	return m.mutate(ctx, l.TaskID, nil, func(t *Task, now time.Time) (bool, bool, error) {
		return true, false, t.Renew(l, d, now)
	})
}

// RequireInput implements [WorkerStore].
func (m *Memory) RequireInput(ctx context.Context, l Lease, requests map[string]json.RawMessage, msg string) (Task, error) {
	return m.mutate(ctx, l.TaskID, nil, func(t *Task, now time.Time) (bool, bool, error) {
		v := t.Version
		err := t.AskInput(l, requests, msg, now)
		return t.Version != v, true, err
	})
}

// SetStatusMessage implements [WorkerStore].
func (m *Memory) SetStatusMessage(ctx context.Context, l Lease, msg string) error {
	_, err := m.mutate(ctx, l.TaskID, nil, func(t *Task, now time.Time) (bool, bool, error) {
		v := t.Version
		err := t.SetMessage(l, msg, now)
		return t.Version != v, true, err
	})
	return err
}

// Finish implements [WorkerStore].
func (m *Memory) Finish(ctx context.Context, l Lease, status Status, payload json.RawMessage, msg string) error {
	_, err := m.mutate(ctx, l.TaskID, nil, func(t *Task, now time.Time) (bool, bool, error) {
		return true, true, t.Finish(l, status, payload, msg, now)
	})
	return err
}

// Release implements [WorkerStore].
func (m *Memory) Release(ctx context.Context, l Lease) error {
	_, err := m.mutate(ctx, l.TaskID, nil, func(t *Task, now time.Time) (bool, bool, error) {
		return true, false, t.Release(l, now)
	})
	return err
}

// Checkpoint implements [WorkerStore].
func (m *Memory) Checkpoint(ctx context.Context, l Lease, stage Stage, data json.RawMessage) error {
	_, err := m.mutate(ctx, l.TaskID, nil, func(t *Task, now time.Time) (bool, bool, error) {
		return true, false, t.SetCheckpoint(l, stage, data, now)
	})
	return err
}

// Orphans implements [WorkerStore].
func (m *Memory) Orphans(_ context.Context, asOf time.Time, limit int) ([]Task, error) {
	now := m.opts.Clock()
	m.mu.Lock()
	var out []Task
	for _, t := range m.tasks {
		if !t.Status.Terminal() && !t.LeaseLive(asOf) && !t.Expired(now) {
			out = append(out, t.Clone())
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Task) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Sweep implements [WorkerStore].
func (m *Memory) Sweep(_ context.Context, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sweepLocked(now), nil
}

func (m *Memory) sweepLocked(now time.Time) int {
	n := 0
	for id, t := range m.tasks {
		if t.Expired(now) {
			delete(m.tasks, id)
			n++
		}
	}
	return n
}

// Len returns the number of stored tasks (expired ones not yet swept
// included).
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tasks)
}

// CountActive implements [ActiveCounter].
func (m *Memory) CountActive(_ context.Context, p Principal) (int, error) {
	now := m.opts.Clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, t := range m.tasks {
		if t.Owner == p && !t.Status.Terminal() && !t.Expired(now) {
			n++
		}
	}
	return n, nil
}
