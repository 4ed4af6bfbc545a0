package tasks

import (
	"encoding/json"
	"fmt"
	"time"
)

// This file is the state machine. Each method checks one operation against
// the task's current state and applies it in place, bumping Version (and
// LastUpdatedAt when the change is visible on the wire). A manager runs a
// method on a private copy inside its atomic section and stores the copy only
// when the method reports a change and no error.

// Cancelled-by-client status message used when a cancel takes effect directly.
const cancelledMessage = "Cancelled by client"

// Build turns a creation request into the initial task state: status working,
// never claimed.
func (nt NewTask) Build(id string, now time.Time) (Task, error) {
	if nt.ToolName == "" {
		return Task{}, fmt.Errorf("%w: empty tool name", ErrInvalid)
	}
	if nt.Params != nil && !json.Valid(nt.Params) {
		return Task{}, fmt.Errorf("%w: params are not valid JSON", ErrInvalid)
	}
	if nt.TTL < 0 || nt.PollInterval < 0 {
		return Task{}, fmt.Errorf("%w: negative duration", ErrInvalid)
	}
	return Task{
		ID:            id,
		Owner:         nt.Owner,
		ToolName:      nt.ToolName,
		Status:        Working,
		StatusMessage: nt.StatusMessage,
		CreatedAt:     now,
		LastUpdatedAt: now,
		TTL:           nt.TTL,
		PollInterval:  nt.PollInterval,
		Params:        cloneRaw(nt.Params),
		Idempotent:    nt.Idempotent,
		Secret:        append([]byte(nil), nt.Secret...),
		Version:       1,
	}, nil
}

// end clears what only a live task needs: outstanding input requests, the
// lease, the handler's checkpoint and the sealed secret.
func (t *Task) end() {
	t.InputRequests = nil
	t.LeaseOwner, t.LeaseExpiresAt = "", time.Time{}
	t.Checkpoint, t.Secret = nil, nil
}

func (t *Task) touch(now time.Time, visible bool) {
	t.Version++
	if visible {
		t.LastUpdatedAt = now
	}
}

// LeaseLive reports whether a worker holds an unexpired lease at now.
func (t *Task) LeaseLive(now time.Time) bool {
	return t.LeaseOwner != "" && now.Before(t.LeaseExpiresAt)
}

// AcceptInput applies a client's tasks/update. Only keys that are currently
// outstanding are taken; unknown, answered and superseded keys are ignored,
// as is the whole update on a task that is not input_required. When the last
// outstanding key is answered the task returns to working. It reports whether
// anything changed; a malformed answer to an outstanding key rejects the whole
// update with ErrInvalid.
func (t *Task) AcceptInput(responses map[string]json.RawMessage, now time.Time) (bool, error) {
	if t.Status != InputRequired {
		return false, nil
	}
	taken := 0
	for k, v := range responses {
		if _, ok := t.InputRequests[k]; !ok {
			continue
		}
		if !json.Valid(v) {
			return false, fmt.Errorf("%w: input response %q is not valid JSON", ErrInvalid, k)
		}
		taken++
	}
	if taken == 0 {
		return false, nil
	}
	if t.InputResponses == nil {
		t.InputResponses = make(map[string]json.RawMessage, taken)
	}
	for k, v := range responses {
		if _, ok := t.InputRequests[k]; ok {
			t.InputResponses[k] = cloneRaw(v)
			delete(t.InputRequests, k)
		}
	}
	if len(t.InputRequests) == 0 {
		t.InputRequests = nil
		t.Status = Working
		t.StatusMessage = ""
	}
	t.touch(now, true)
	return true, nil
}

// RequestCancel records the client's cancelation intent. A terminal task is
// left alone (cancel is idempotent). A task no live worker holds is cancelled
// at once; otherwise the intent is recorded for the worker to honour. It
// reports whether anything changed.
func (t *Task) RequestCancel(now time.Time) bool {
	if t.Status.Terminal() {
		return false
	}
	if !t.LeaseLive(now) {
		t.Status = Cancelled
		t.StatusMessage = cancelledMessage
		t.CancelRequested = true
		t.end()
		t.touch(now, true)
		return true
	}
	if t.CancelRequested {
		return false
	}
	t.CancelRequested = true
	t.touch(now, false)
	return true
}

// Claim asks for a task's lease.
type Claim struct {
	TaskID string
	Owner  string
	// Token is the fencing token the claimer observed (0 for a task that was
	// never claimed). The claim fails with ErrClaimed if it changed.
	Token int64
	// AsOf: the current lease must have lapsed at or before this instant
	// (the time recovery listed the task as an orphan). Zero means now.
	AsOf time.Time
	// For is the lease duration from now.
	For time.Duration
}

// TakeLease applies a claim: the task must be non-terminal, its token must be
// the observed one and its lease must have lapsed at c.AsOf. The token is
// incremented, fencing off the previous holder.
func (t *Task) TakeLease(c Claim, now time.Time) error {
	if t.Status.Terminal() {
		return fmt.Errorf("%w: task is %s", ErrIllegalTransition, t.Status)
	}
	asOf := c.AsOf
	if asOf.IsZero() {
		asOf = now
	}
	if t.LeaseToken != c.Token || t.LeaseLive(asOf) {
		return ErrClaimed
	}
	if c.Owner == "" || c.For <= 0 {
		return fmt.Errorf("%w: claim needs an owner and a duration", ErrInvalid)
	}
	t.LeaseOwner = c.Owner
	t.LeaseToken++
	t.LeaseExpiresAt = now.Add(c.For)
	t.touch(now, false)
	return nil
}

// CheckLease verifies that l still holds t: ErrIllegalTransition when t is
// terminal, ErrLeaseLost when the token or owner changed. An expired lease
// whose token is unchanged still holds: nobody took the task over.
func (t *Task) CheckLease(l Lease) error {
	if t.Status.Terminal() {
		return fmt.Errorf("%w: task is %s", ErrIllegalTransition, t.Status)
	}
	if t.LeaseToken != l.Token || t.LeaseOwner != l.Owner || l.Owner == "" {
		return ErrLeaseLost
	}
	return nil
}

// Renew extends the lease to now+d.
func (t *Task) Renew(l Lease, d time.Duration, now time.Time) error {
	if err := t.CheckLease(l); err != nil {
		return err
	}
	t.LeaseExpiresAt = now.Add(d)
	t.touch(now, false)
	return nil
}

// Release gives the lease up without finishing the task (worker shutdown).
// The token stays, so recovery sees a started task.
func (t *Task) Release(l Lease, now time.Time) error {
	if err := t.CheckLease(l); err != nil {
		return err
	}
	t.LeaseOwner, t.LeaseExpiresAt = "", time.Time{}
	t.touch(now, false)
	return nil
}

// SetMessage changes the status message (progress text).
func (t *Task) SetMessage(l Lease, msg string, now time.Time) error {
	if err := t.CheckLease(l); err != nil {
		return err
	}
	if t.StatusMessage == msg {
		return nil
	}
	t.StatusMessage = msg
	t.touch(now, true)
	return nil
}

// AskInput adds input requests. Keys already answered are not asked again
// (their recorded answers stand, which lets a re-run handler replay a round);
// keys already outstanding stay outstanding. If any key is outstanding
// afterwards the task becomes input_required.
func (t *Task) AskInput(l Lease, requests map[string]json.RawMessage, msg string, now time.Time) error {
	if err := t.CheckLease(l); err != nil {
		return err
	}
	if len(requests) == 0 {
		return fmt.Errorf("%w: no input requests", ErrInvalid)
	}
	for k, v := range requests {
		if k == "" || !json.Valid(v) {
			return fmt.Errorf("%w: input request %q", ErrInvalid, k)
		}
	}
	added := false
	for k, v := range requests {
		if _, done := t.InputResponses[k]; done {
			continue
		}
		if _, open := t.InputRequests[k]; open {
			continue
		}
		if t.InputRequests == nil {
			t.InputRequests = make(map[string]json.RawMessage, len(requests))
		}
		t.InputRequests[k] = cloneRaw(v)
		added = true
	}
	if len(t.InputRequests) == 0 || (!added && t.Status == InputRequired) {
		return nil
	}
	t.Status = InputRequired
	t.StatusMessage = msg
	t.touch(now, true)
	return nil
}

// Finish moves the task to a terminal status through its lease:
// Completed with payload = the result, Failed with payload = the JSON-RPC
// error object, Cancelled with no payload. Outstanding input requests, the
// lease, the checkpoint and the secret are cleared.
func (t *Task) Finish(l Lease, status Status, payload json.RawMessage, msg string, now time.Time) error {
	if err := t.CheckLease(l); err != nil {
		return err
	}
	switch status {
	case Completed, Failed:
		if !json.Valid(payload) {
			return fmt.Errorf("%w: %s payload is not valid JSON", ErrInvalid, status)
		}
	case Cancelled:
		payload = nil
	default:
		return fmt.Errorf("%w: %s is not terminal", ErrIllegalTransition, status)
	}
	if !t.Status.CanBecome(status) {
		return fmt.Errorf("%w: %s → %s", ErrIllegalTransition, t.Status, status)
	}
	t.Status = status
	t.StatusMessage = msg
	switch status {
	case Completed:
		t.Result = cloneRaw(payload)
	case Failed:
		t.Error = cloneRaw(payload)
	}
	t.end()
	t.touch(now, true)
	return nil
}

// SetCheckpoint records where the handler stands (see [Stage]) and its
// opaque progress record (nil clears it). Not visible to clients.
func (t *Task) SetCheckpoint(l Lease, stage Stage, data json.RawMessage, now time.Time) error {
	if err := t.CheckLease(l); err != nil {
		return err
	}
	if !stage.Valid() {
		return fmt.Errorf("%w: stage %q", ErrInvalid, stage)
	}
	if data != nil && !json.Valid(data) {
		return fmt.Errorf("%w: checkpoint is not valid JSON", ErrInvalid)
	}
	t.Stage = stage
	t.Checkpoint = cloneRaw(data)
	t.touch(now, false)
	return nil
}
