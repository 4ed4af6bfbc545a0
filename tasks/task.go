package tasks

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"time"
)

// Status is a task's lifecycle state, spelled as on the wire.
type Status string

// The five task statuses of the Tasks extension.
const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Valid reports whether s is one of the five statuses.
func (s Status) Valid() bool {
	switch s {
	case Working, InputRequired, Completed, Failed, Cancelled:
		return true
	}
	return false
}

// Terminal reports whether s is completed, failed or cancelled. A terminal
// task never changes status again.
func (s Status) Terminal() bool {
	return s == Completed || s == Failed || s == Cancelled
}

// CanBecome reports whether the transition s → next is legal:
// working ⇄ input_required, and either of them → completed | failed |
// cancelled. Staying in the same non-terminal status is not a transition and
// is allowed; nothing leaves a terminal status.
func (s Status) CanBecome(next Status) bool {
	if !s.Valid() || !next.Valid() || s.Terminal() {
		return false
	}
	return true // every pair among valid statuses from a non-terminal one is legal
}

// Principal is the authenticated caller a task is bound to. Two principals are
// the same caller only if both fields are equal.
type Principal struct {
	Subject string
	Tenant  string
}

// Task is one task's complete state, as stored. Returned values are copies:
// changing them changes nothing in the store.
type Task struct {
	ID            string
	Owner         Principal
	ToolName      string
	Status        Status
	StatusMessage string
	CreatedAt     time.Time
	LastUpdatedAt time.Time
	// TTL is the retention from CreatedAt; 0 means unlimited (ttlMs: null).
	TTL time.Duration
	// PollInterval is the suggested client poll interval (pollIntervalMs);
	// 0 means no hint.
	PollInterval time.Duration

	// Result is the CallToolResult JSON of a completed task (tool errors
	// included, with isError true). Set only when Status is Completed.
	Result json.RawMessage
	// Error is the JSON-RPC error object of a failed task. Set only when
	// Status is Failed.
	Error json.RawMessage

	// InputRequests are the outstanding input requests by key (non-empty
	// exactly when Status is InputRequired).
	InputRequests map[string]json.RawMessage
	// InputResponses are all answers received so far by key, kept for the
	// task's lifetime so that a re-run handler asking the same key again gets
	// the recorded answer.
	InputResponses map[string]json.RawMessage

	// CancelRequested records the client's cancelation intent.
	CancelRequested bool

	// Params is what a worker needs to run (or re-run) the task: the original
	// call, opaque to this package.
	Params json.RawMessage
	// Idempotent allows recovery to re-run the task after its worker died.
	Idempotent bool

	// Stage is where the task's handler stands, as it last recorded
	// ([WorkerStore.Checkpoint]); recovery reads it to decide whether a
	// re-run is safe. Checkpoint is the handler's own record of its
	// progress (opaque JSON, for example the status URL of an accepted
	// operation), handed back to a re-run; cleared when the task ends.
	Stage      Stage
	Checkpoint json.RawMessage

	// Secret is what the task keeps sealed for its worker (the caller's
	// credential, encrypted by a [Sealer]; opaque here). It is deleted when
	// the task ends and never belongs on the wire.
	Secret []byte

	// LeaseOwner names the worker holding the task; empty when none.
	LeaseOwner string
	// LeaseToken is the fencing token: incremented by every claim; 0 means
	// the task was never claimed (never started).
	LeaseToken int64
	// LeaseExpiresAt is when the current lease lapses; zero when none.
	LeaseExpiresAt time.Time

	// Version increments on every stored change.
	Version int64
}

// Stage is how far a task's handler got, as far as re-running it matters.
type Stage string

// The stages a handler records. A task that never recorded one is
// StageNone: nothing is known about what its handler did.
const (
	StageNone Stage = ""
	// StageFresh: the handler has done nothing that must not be repeated
	// (the upstream request was not sent yet); starting over is safe.
	StageFresh Stage = "fresh"
	// StageInDoubt: the handler did something that may have taken effect
	// and must not be repeated unless the operation is idempotent (a request
	// was sent and no answer recorded).
	StageInDoubt Stage = "in_doubt"
	// StageResumable: the handler recorded in Checkpoint what it needs to
	// go on from where it stands (an accepted operation's status URL, or
	// an idempotency key that makes a resend safe); a re-run resumes.
	StageResumable Stage = "resumable"
)

// Valid reports whether s is one of the stages.
func (s Stage) Valid() bool {
	switch s {
	case StageNone, StageFresh, StageInDoubt, StageResumable:
		return true
	}
	return false
}

// ExpiresAt is CreatedAt+TTL, or the zero time when the TTL is unlimited.
func (t *Task) ExpiresAt() time.Time {
	if t.TTL <= 0 {
		return time.Time{}
	}
	return t.CreatedAt.Add(t.TTL)
}

// Expired reports whether the task's retention has passed at now.
func (t *Task) Expired(now time.Time) bool {
	e := t.ExpiresAt()
	return !e.IsZero() && !now.Before(e)
}

// Lease is the worker's handle on a claimed task.
func (t *Task) Lease() Lease {
	return Lease{TaskID: t.ID, Owner: t.LeaseOwner, Token: t.LeaseToken}
}

// Clone returns a deep copy of t.
func (t Task) Clone() Task {
	t.Result = cloneRaw(t.Result)
	t.Error = cloneRaw(t.Error)
	t.Params = cloneRaw(t.Params)
	t.Checkpoint = cloneRaw(t.Checkpoint)
	if t.Secret != nil {
		t.Secret = append([]byte(nil), t.Secret...)
	}
	t.InputRequests = cloneMap(t.InputRequests)
	t.InputResponses = cloneMap(t.InputResponses)
	return t
}

func cloneRaw(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	return append(json.RawMessage(nil), r...)
}

func cloneMap(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	c := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		c[k] = cloneRaw(v)
	}
	return c
}

// Lease identifies a worker's claim on a task. Every worker-side write
// carries it; a write whose token is no longer the task's fails with
// [ErrLeaseLost].
type Lease struct {
	TaskID string
	Owner  string
	Token  int64
}

// NewTask is what a client-side creation supplies.
type NewTask struct {
	Owner         Principal
	ToolName      string
	Params        json.RawMessage
	Idempotent    bool
	TTL           time.Duration // 0 = unlimited
	PollInterval  time.Duration // 0 = no hint
	StatusMessage string
	// Secret is stored as is (sealed by the caller, see [Task.Secret]).
	Secret []byte
}

// Errors. Match them with [errors.Is]; managers wrap them with context, except
// ErrNotFound, which client-side methods return unwrapped so that unknown and
// unauthorized ids produce byte-identical errors.
var (
	// ErrNotFound is the one error for an unknown, expired or unauthorized
	// task id.
	ErrNotFound = errors.New("task not found")
	// ErrIllegalTransition is returned when a change would break the state
	// machine (for example completing a terminal task).
	ErrIllegalTransition = errors.New("illegal task transition")
	// ErrLeaseLost is returned to a worker whose lease token is stale: the
	// task was claimed by another worker (or never claimed by this one).
	ErrLeaseLost = errors.New("task lease lost")
	// ErrClaimed is returned by a claim when the task's lease is still live or
	// its token changed since the caller observed it.
	ErrClaimed = errors.New("task already claimed")
	// ErrCapacity is returned by a bounded manager that is full.
	ErrCapacity = errors.New("task store full")
	// ErrTooManyActive is returned by a submission whose owner already has
	// the most tasks in progress one owner may have.
	ErrTooManyActive = errors.New("too many tasks in progress")
	// ErrInvalid is returned for malformed input (bad JSON payload, missing
	// tool name, reused input key).
	ErrInvalid = errors.New("invalid task data")
)

// NewID returns a fresh task id: 26 base32 characters from crypto/rand
// (130 bits).
func NewID() string { return rand.Text() }
