package tasks

import (
	"context"
	"encoding/json"
	"time"
)

// Store is the client-facing side of a task manager: what tasks/get,
// tasks/update, tasks/cancel and task creation need. Every method that takes
// a Principal authorizes atomically with the lookup; an unknown, expired or
// foreign id returns exactly [ErrNotFound].
type Store interface {
	// Create stores a new working task and returns it only once Get would
	// find it (for durable managers: committed).
	Create(ctx context.Context, nt NewTask) (Task, error)
	// Get returns the task's current state.
	Get(ctx context.Context, p Principal, id string) (Task, error)
	// Update delivers input responses. Only currently outstanding keys are
	// taken; others are ignored. Succeeds (ignoring everything) on a task that
	// is not input_required.
	Update(ctx context.Context, p Principal, id string, responses map[string]json.RawMessage) error
	// Cancel records cancelation intent. Idempotent on terminal tasks. A task
	// that no live worker holds is cancelled at once.
	Cancel(ctx context.Context, p Principal, id string) error
}

// WorkerStore is the worker-facing side: leases, transitions through a
// lease, and maintenance. It is not authorized by principal; only the runtime
// may use it.
type WorkerStore interface {
	// Claim takes a task's lease (see [Claim]); ErrClaimed when another
	// worker holds it or the token moved, ErrNotFound when it is gone.
	Claim(ctx context.Context, c Claim) (Task, error)
	// Heartbeat extends the lease by d and returns the current task, so the
	// worker sees cancelation intent and input responses.
	Heartbeat(ctx context.Context, l Lease, d time.Duration) (Task, error)
	// RequireInput adds outstanding input requests (see [Task.AskInput]) and
	// returns the new state.
	RequireInput(ctx context.Context, l Lease, requests map[string]json.RawMessage, msg string) (Task, error)
	// SetStatusMessage changes the human-readable status message.
	SetStatusMessage(ctx context.Context, l Lease, msg string) error
	// Finish moves the task to a terminal status (see [Task.Finish]).
	Finish(ctx context.Context, l Lease, status Status, payload json.RawMessage, msg string) error
	// Release gives a lease up without finishing the task.
	Release(ctx context.Context, l Lease) error
	// Checkpoint records the handler's stage and progress record (see
	// [Task.SetCheckpoint]); not a client-visible change.
	Checkpoint(ctx context.Context, l Lease, stage Stage, data json.RawMessage) error
	// Orphans lists up to limit non-terminal tasks whose lease has lapsed at
	// asOf (never-claimed tasks included), oldest first.
	Orphans(ctx context.Context, asOf time.Time, limit int) ([]Task, error)
	// Sweep deletes every task whose retention (CreatedAt+TTL) has passed at
	// now and returns how many it deleted.
	Sweep(ctx context.Context, now time.Time) (int, error)
}

// Manager is a complete task authority.
type Manager interface {
	Store
	WorkerStore
}

// ActiveCounter is what a manager offers for a per-owner bound on tasks
// in progress ([RunnerConfig.MaxActivePerOwner]): every manager here
// implements it.
type ActiveCounter interface {
	// CountActive is the number of p's tasks that are working or
	// input_required and not expired.
	CountActive(ctx context.Context, p Principal) (int, error)
}

// Options are the settings every manager shares.
type Options struct {
	// Now is the clock; nil means time.Now. Times are stored in UTC.
	Now func() time.Time
	// Publisher, when set, receives the id of every task after each
	// committed, client-visible change (create, status, message, input,
	// cancel intent). Nil disables notifications.
	Publisher Publisher
}

// Clock returns the current time from o.Now (UTC).
func (o Options) Clock() time.Time {
	if o.Now != nil {
		return o.Now().UTC()
	}
	return time.Now().UTC()
}

// Notify publishes id if a publisher is configured.
func (o Options) Notify(ctx context.Context, id string) {
	if o.Publisher != nil {
		o.Publisher.Publish(ctx, id)
	}
}
