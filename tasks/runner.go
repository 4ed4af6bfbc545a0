package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Handler runs one kind of task (one tool).
type Handler struct {
	// Run does the work. It returns the CallToolResult JSON, tool errors
	// included (isError true): the task becomes completed. A non-nil error is
	// a protocol-level failure: the task becomes failed, with the code and
	// message of an *[RPCError] found in the chain, or else a generic
	// -32603 "Internal error" (no internal detail reaches the client).
	// Cancelation intent and shutdown arrive through ctx; see
	// [ErrCancelRequested].
	Run func(ctx context.Context, x *Exec) (json.RawMessage, error)
	// Idempotent declares that re-running a task whose worker died is safe.
	// Recovery re-runs idempotent tasks and fails the others.
	Idempotent bool
	// Timeout bounds one run; 0 means none. A run that times out fails.
	Timeout time.Duration
}

// RPCError is a JSON-RPC error object; a handler returns one to choose the
// error a failed task reports.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// Context causes seen by handlers through context.Cause.
var (
	// ErrCancelRequested: the client asked to cancel the task.
	ErrCancelRequested = errors.New("task cancelation requested")
	// ErrShutdown: the runner is stopping; the task will be recovered.
	ErrShutdown = errors.New("task runner shutting down")
	// errTimeout: the handler's Timeout passed.
	errTimeout = errors.New("task timed out")
)

// Status messages and errors written by the runner and by recovery.
const (
	MsgInterrupted = "Task interrupted: its worker stopped and the tool is not safe to re-run"
	MsgNoHandler   = "Task cannot run: no handler for its tool"
	MsgTimedOut    = "Task timed out"
	codeInternal   = -32603
)

// RunnerConfig configures a [Runner]. Zero values take the defaults noted.
type RunnerConfig struct {
	Manager Manager
	// Publisher, when set, wakes waiting handlers as soon as their task
	// changes (input answered, cancel requested). Without it they poll.
	Publisher Publisher
	// Owner names this worker in leases; default a fresh random id.
	Owner string
	// Concurrency is the most handlers running at once (default 4). A
	// handler waiting for input in Exec.RequireInput gives its slot up until
	// the answers are in, so waiting tasks do not starve the others.
	Concurrency int
	// Queue is the in-memory backlog of submitted tasks (default
	// 16*Concurrency). Tasks that do not fit stay in the store and are picked
	// up by the next scan.
	Queue int
	// Lease is the lease duration (default 30s); Heartbeat renews it (default
	// Lease/3).
	Lease, Heartbeat time.Duration
	// Poll is how often a handler waiting for input re-reads its task when
	// there is no Publisher (default 1s); with one, wake-ups replace polling
	// and the heartbeat is the fallback.
	Poll time.Duration
	// Scan is how often lapsed leases are recovered and expired tasks swept
	// (default 10s); ScanBatch bounds one recovery pass (default 1000).
	Scan      time.Duration
	ScanBatch int
	// TakeOverAtStart makes Run treat every lease as dead at start: right
	// for a single-node store, whose previous leases can only belong to a
	// dead process. Leave it false when replicas share the store.
	TakeOverAtStart bool
	// Logger receives background errors; default slog.Default().
	Logger *slog.Logger
}

// Runner executes tasks with bounded concurrency, renews their leases,
// passes cancelation through the context, supports input rounds and
// recovers orphaned tasks. Register handlers with Handle before Run.
type Runner struct {
	cfg   RunnerConfig
	m     Manager
	queue chan job
	slots chan struct{} // one token per running (not waiting) handler

	mu       sync.Mutex
	running  map[string]*Exec
	handlers map[string]Handler
}

type job struct {
	id    string
	token int64
	asOf  time.Time
}

// NewRunner returns a runner for cfg.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	if cfg.Manager == nil {
		return nil, fmt.Errorf("%w: runner needs a manager", ErrInvalid)
	}
	if cfg.Owner == "" {
		cfg.Owner = "worker-" + NewID()
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 16 * cfg.Concurrency
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Heartbeat <= 0 || cfg.Heartbeat >= cfg.Lease {
		cfg.Heartbeat = cfg.Lease / 3
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Scan <= 0 {
		cfg.Scan = 10 * time.Second
	}
	if cfg.ScanBatch <= 0 {
		cfg.ScanBatch = 1000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Runner{
		cfg:      cfg,
		m:        cfg.Manager,
		handlers: make(map[string]Handler),
		queue:    make(chan job, cfg.Queue),
		slots:    make(chan struct{}, cfg.Concurrency),
		running:  make(map[string]*Exec),
	}, nil
}

// Manager is the task manager the runner executes from (its store).
func (r *Runner) Manager() Manager { return r.m }

// Publisher is the publisher the runner was configured with, or nil.
func (r *Runner) Publisher() Publisher { return r.cfg.Publisher }

// Handle registers (or replaces) the handler for a tool. Call it before
// Submit for that tool; it is safe while the runner runs (a reloaded tool
// set registers its task tools again).
func (r *Runner) Handle(tool string, h Handler) {
	if h.Run == nil {
		panic("tasks: Handle with nil Run")
	}
	r.mu.Lock()
	r.handlers[tool] = h
	r.mu.Unlock()
}

// handler returns the handler registered for a tool.
func (r *Runner) handler(tool string) (Handler, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.handlers[tool]
	return h, ok
}

// Owner returns the lease owner name of this runner.
func (r *Runner) Owner() string { return r.cfg.Owner }

// Submit creates a task for a registered tool (durably, through the
// manager) and queues it for execution. The returned task is the handle for
// CreateTaskResult. Idempotent is taken from the handler.
func (r *Runner) Submit(ctx context.Context, nt NewTask) (Task, error) {
	h, ok := r.handler(nt.ToolName)
	if !ok {
		return Task{}, fmt.Errorf("submit task: %w: no handler for tool %q", ErrInvalid, nt.ToolName)
	}
	nt.Idempotent = h.Idempotent
	t, err := r.m.Create(ctx, nt)
	if err != nil {
		return Task{}, fmt.Errorf("submit task: %w", err)
	}
	select {
	case r.queue <- job{id: t.ID}:
	default: // backlog full: the task waits in the store for a scan
	}
	return t, nil
}

// RecoverStats counts what one recovery pass did.
type RecoverStats struct {
	Requeued, Failed, Cancelled int
}

// Recover handles tasks whose lease lapsed at asOf (all of a dead worker's
// tasks, and never-started ones): a task with cancelation intent is
// cancelled; a never-started task, or one whose handler is idempotent, is
// queued to run again (it needs Run active to proceed); any other is failed
// with [MsgInterrupted]; a task of an unknown tool fails with [MsgNoHandler].
// Each takeover is a fenced claim, so two recoverers never both act. One
// pass looks at up to ScanBatch tasks, oldest first; it blocks while the
// backlog is full, so call it while Run is active.
func (r *Runner) Recover(ctx context.Context, asOf time.Time) (RecoverStats, error) {
	return r.recover(ctx, asOf, true)
}

// recover is Recover; with block false a full backlog ends the pass (the
// rest waits for the next scan) instead of waiting for workers.
func (r *Runner) recover(ctx context.Context, asOf time.Time, block bool) (RecoverStats, error) {
	var st RecoverStats
	orphans, err := r.m.Orphans(ctx, asOf, r.cfg.ScanBatch)
	if err != nil {
		return st, fmt.Errorf("recover tasks: %w", err)
	}
	for _, o := range orphans {
		h, known := r.handler(o.ToolName)
		if known && !o.CancelRequested && (o.LeaseToken == 0 || h.Idempotent) {
			j := job{id: o.ID, token: o.LeaseToken, asOf: asOf}
			if !block {
				select {
				case r.queue <- j:
					st.Requeued++
					continue
				default:
					return st, nil
				}
			}
			select {
			case r.queue <- j:
				st.Requeued++
			case <-ctx.Done():
				return st, context.Cause(ctx)
			}
			continue
		}
		t, err := r.m.Claim(ctx, Claim{TaskID: o.ID, Owner: r.cfg.Owner, Token: o.LeaseToken, AsOf: asOf, For: r.cfg.Lease})
		if err != nil {
			continue // someone else acted on it, or it is gone
		}
		l := t.Lease()
		switch {
		case o.CancelRequested:
			err = r.m.Finish(ctx, l, Cancelled, nil, cancelledMessage)
			st.Cancelled++
		case !known:
			err = r.m.Finish(ctx, l, Failed, internalError("No handler for tool"), MsgNoHandler)
			st.Failed++
		default:
			err = r.m.Finish(ctx, l, Failed, internalError("Task interrupted"), MsgInterrupted)
			st.Failed++
		}
		if err != nil {
			r.cfg.Logger.Error("tasks: recovery could not finish task", "task", o.ID, "err", err)
		}
	}
	return st, nil
}

// Run executes queued tasks until ctx is done, then stops the running
// handlers (their contexts end with cause [ErrShutdown]), releases the leases
// of unfinished tasks and returns. It also scans periodically for lapsed
// leases (Recover) and expired tasks (Sweep).
func (r *Runner) Run(ctx context.Context) error {
	base, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { // dispatcher: take a job, then wait for a free slot
		for {
			var j job
			select {
			case <-ctx.Done():
				return
			case j = <-r.queue:
			}
			select {
			case <-ctx.Done():
				return // the job's task stays in the store for recovery
			case r.slots <- struct{}{}:
				wg.Go(func() { r.runJob(ctx, base, j) })
			}
		}
	})
	unsubscribe := func() {}
	if r.cfg.Publisher != nil {
		var ch <-chan string
		ch, unsubscribe = r.cfg.Publisher.Subscribe(ctx)
		wg.Go(func() {
			for id := range ch {
				r.mu.Lock()
				x := r.running[id]
				r.mu.Unlock()
				if x != nil {
					x.poke()
				}
			}
		})
	}
	wg.Go(func() {
		if r.cfg.TakeOverAtStart {
			// Every lease belongs to a dead process: take them all over,
			// waiting for workers as needed.
			r.scan(ctx, farFuture, true)
		}
		tick := time.NewTicker(r.cfg.Scan)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				r.scan(ctx, time.Now(), false)
			}
		}
	})
	<-ctx.Done()
	stop(ErrShutdown)
	unsubscribe() // ends the wake-up loop whatever the publisher does with ctx
	wg.Wait()
	return nil
}

func (r *Runner) scan(ctx context.Context, asOf time.Time, block bool) {
	if _, err := r.recover(ctx, asOf, block); err != nil && ctx.Err() == nil {
		r.cfg.Logger.Error("tasks: recovery scan failed", "err", err)
	}
	if _, err := r.m.Sweep(ctx, time.Now()); err != nil && ctx.Err() == nil {
		r.cfg.Logger.Error("tasks: sweep failed", "err", err)
	}
}

func internalError(msg string) json.RawMessage {
	b, _ := json.Marshal(RPCError{Code: codeInternal, Message: msg})
	return b
}

// runJob claims and runs one task while holding a slot, which it frees at
// the end (unless the handler gave it up while waiting and could not get it
// back); ctx stops claiming, base stops handlers.
func (r *Runner) runJob(ctx, base context.Context, j job) {
	holding := true
	defer func() {
		if holding {
			<-r.slots
		}
	}()
	t, err := r.m.Claim(ctx, Claim{TaskID: j.id, Owner: r.cfg.Owner, Token: j.token, AsOf: j.asOf, For: r.cfg.Lease})
	if err != nil {
		if !errors.Is(err, ErrClaimed) && !leaseGone(err) && ctx.Err() == nil {
			r.cfg.Logger.Error("tasks: claim failed; the next scan retries", "task", j.id, "err", err)
		}
		return // taken, finished or gone
	}
	h, ok := r.handler(t.ToolName)
	if !ok {
		r.finish(t.Lease(), Failed, internalError("No handler for tool"), MsgNoHandler)
		return
	}
	holding = r.execute(base, t, h)
}

// finish records a terminal state with a context that outlives shutdown.
func (r *Runner) finish(l Lease, s Status, payload json.RawMessage, msg string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.m.Finish(ctx, l, s, payload, msg); err != nil && !errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrNotFound) {
		r.cfg.Logger.Error("tasks: could not record task outcome", "task", l.TaskID, "status", s, "err", err)
	}
}

// farFuture is the asOf of a takeover at start: later than any lease, early
// enough for int64 nanoseconds.
var farFuture = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)

var errLeaseLost = fmt.Errorf("tasks: worker %w", ErrLeaseLost)

// execute runs the handler and records the outcome. It reports whether the
// run still holds its slot.
func (r *Runner) execute(base context.Context, t Task, h Handler) (holding bool) {
	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	if h.Timeout > 0 {
		var c context.CancelFunc
		ctx, c = context.WithTimeoutCause(ctx, h.Timeout, errTimeout)
		defer c()
	}
	x := &Exec{r: r, task: t, lease: t.Lease(), cancel: cancel, changed: make(chan struct{}), wake: make(chan struct{}, 1), holding: true}
	defer func() { holding = x.holding }()
	x.latest = t.Clone()
	r.mu.Lock()
	r.running[t.ID] = x
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.running, t.ID)
		r.mu.Unlock()
	}()
	if t.CancelRequested {
		cancel(ErrCancelRequested)
	}

	monitorDone := make(chan struct{})
	stopMonitor := make(chan struct{})
	go func() {
		defer close(monitorDone)
		x.monitor(stopMonitor)
	}()

	result, runErr := safeRun(ctx, h, x)
	close(stopMonitor)
	<-monitorDone

	l := x.lease
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errLeaseLost):
		// Someone else owns the task now, or it is gone: record nothing.
	case runErr == nil:
		if !json.Valid(result) {
			r.cfg.Logger.Error("tasks: handler returned invalid JSON", "task", t.ID, "tool", t.ToolName)
			r.finish(l, Failed, internalError("Internal error"), "Tool execution failed: Internal error")
			return
		}
		r.finish(l, Completed, result, "")
	case x.cancelSeen() || errors.Is(cause, ErrCancelRequested):
		r.finish(l, Cancelled, nil, cancelledMessage)
	case errors.Is(cause, ErrShutdown):
		ctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		if err := r.m.Release(ctx, l); err != nil && !errors.Is(err, ErrLeaseLost) {
			r.cfg.Logger.Error("tasks: could not release lease", "task", t.ID, "err", err)
		}
	case errors.Is(cause, errTimeout):
		r.finish(l, Failed, internalError(MsgTimedOut), MsgTimedOut)
	default:
		var re *RPCError
		if errors.As(runErr, &re) {
			b, err := json.Marshal(re)
			if err != nil || (re.Data != nil && !json.Valid(re.Data)) {
				b = internalError("Internal error")
			}
			r.finish(l, Failed, b, "Tool execution failed: "+re.Message)
			return
		}
		r.cfg.Logger.Error("tasks: handler failed", "task", t.ID, "tool", t.ToolName, "err", runErr)
		r.finish(l, Failed, internalError("Internal error"), "Tool execution failed: Internal error")
	}
	return // holding is set by the deferred read of x.holding
}

// safeRun turns a handler panic into an error.
func safeRun(ctx context.Context, h Handler, x *Exec) (res json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("tasks: handler panic: %v", p)
		}
	}()
	return h.Run(ctx, x)
}

// Exec is a running task as its handler sees it. Its methods are meant for
// the handler's own goroutine (one call at a time).
type Exec struct {
	r      *Runner
	task   Task
	lease  Lease
	cancel context.CancelCauseFunc
	wake   chan struct{}

	holding bool // owns a runner slot; only the handler goroutine touches it

	mu        sync.Mutex
	latest    Task
	changed   chan struct{} // closed and replaced when latest changes
	waiting   bool
	cancelled bool
}

// Task returns the task as claimed (id, owner, tool, params, ...).
func (x *Exec) Task() Task { return x.task.Clone() }

// Params returns the task's params (the original call).
func (x *Exec) Params() json.RawMessage { return cloneRaw(x.task.Params) }

// SetStatusMessage publishes a progress message on the task.
func (x *Exec) SetStatusMessage(ctx context.Context, msg string) error {
	return x.check(x.r.m.SetStatusMessage(ctx, x.lease, msg))
}

// RequireInput asks the client for input and waits until every key has an
// answer, returning the answers by key. Keys answered earlier in this task's
// life (a re-run) return their recorded answers without asking again. It
// returns early with the context's cause on cancelation or shutdown.
func (x *Exec) RequireInput(ctx context.Context, requests map[string]json.RawMessage, msg string) (map[string]json.RawMessage, error) {
	t, err := x.r.m.RequireInput(ctx, x.lease, requests, msg)
	if err = x.check(err); err != nil {
		return nil, err
	}
	x.observe(t)
	defer x.setWaiting(false)
	for {
		x.mu.Lock()
		snap, changed := x.latest, x.changed
		x.mu.Unlock()
		if snap.CancelRequested {
			x.cancel(ErrCancelRequested)
			return nil, ErrCancelRequested
		}
		out := make(map[string]json.RawMessage, len(requests))
		for k := range requests {
			if v, ok := snap.InputResponses[k]; ok {
				out[k] = cloneRaw(v)
			}
		}
		if len(out) == len(requests) {
			if err := x.reacquire(ctx); err != nil {
				return nil, err
			}
			return out, nil
		}
		x.setWaiting(true)
		if x.holding { // waiting is not running: let another task use the slot
			<-x.r.slots
			x.holding = false
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// reacquire takes a runner slot back before the handler resumes work.
func (x *Exec) reacquire(ctx context.Context) error {
	if x.holding {
		return nil
	}
	select {
	case x.r.slots <- struct{}{}:
		x.holding = true
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// check turns a lost lease into cancelation of the run.
func (x *Exec) check(err error) error {
	if leaseGone(err) {
		x.cancel(errLeaseLost)
	}
	return err
}

// leaseGone reports whether err means this worker may no longer act on the
// task: taken over, finished elsewhere (cancelled directly) or swept.
func leaseGone(err error) bool {
	return errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrIllegalTransition)
}

func (x *Exec) observe(t Task) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.latest = t
	if t.CancelRequested {
		x.cancelled = true
	}
	close(x.changed)
	x.changed = make(chan struct{})
}

func (x *Exec) setWaiting(w bool) {
	x.mu.Lock()
	started := w && !x.waiting
	x.waiting = w
	x.mu.Unlock()
	if started {
		x.poke() // switch the monitor to the input poll interval now
	}
}

func (x *Exec) cancelSeen() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.cancelled
}

func (x *Exec) poke() {
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// monitor renews the lease and refreshes the task snapshot: every Heartbeat,
// every Poll while the handler waits for input, and at once on a wake-up.
func (x *Exec) monitor(stop <-chan struct{}) {
	cfg := x.r.cfg
	for {
		x.mu.Lock()
		d := cfg.Heartbeat
		if x.waiting && cfg.Publisher == nil && cfg.Poll < d {
			d = cfg.Poll
		}
		x.mu.Unlock()
		timer := time.NewTimer(d)
		select {
		case <-stop:
			timer.Stop()
			return
		case <-x.wake:
			timer.Stop()
		case <-timer.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Lease)
		t, err := x.r.m.Heartbeat(ctx, x.lease, cfg.Lease)
		cancel()
		if err != nil {
			if leaseGone(err) {
				x.cancel(errLeaseLost)
				return
			}
			cfg.Logger.Warn("tasks: heartbeat failed", "task", x.lease.TaskID, "err", err)
			continue
		}
		x.observe(t)
		if t.CancelRequested {
			x.cancel(ErrCancelRequested)
		}
	}
}
