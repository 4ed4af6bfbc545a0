package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
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
	MsgInDoubt     = "Task interrupted: its worker stopped after sending the request, which may or may not have reached the API, and the operation is not safe to repeat; check whether it took effect before calling the tool again"
	MsgNoHandler   = "Task cannot run: no handler for its tool"
	MsgTimedOut    = "Task timed out"
	codeInternal   = -32603
)

// DefaultShutdownGrace is RunnerConfig.ShutdownGrace when zero.
const DefaultShutdownGrace = 30 * time.Second

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
	// (default 10s); ScanBatch bounds one recovery pass (default 1000). At
	// start, Run recovers in passes until no lapsed task is left.
	Scan      time.Duration
	ScanBatch int
	// Checkpointing declares that every handler of this runner records its
	// stage with [Exec.Checkpoint] before it does anything that must not be
	// repeated (as the gateway's task tools do). Recovery then re-runs a
	// started task that recorded no stage: its handler did nothing
	// irreversible yet. Without it such a task is re-run only when its
	// handler is Idempotent.
	Checkpointing bool
	// Secrets, when set, keeps a secret with each task, sealed in the store
	// (see [Secrets]); nil keeps none.
	Secrets *Secrets
	// ShutdownGrace is how long Run, once its context is done, lets the
	// running handlers finish before it stops them and releases their
	// leases (default 30s; negative: no grace). Handlers waiting for input
	// are stopped at once: their answers are recorded, so a re-run replays
	// them.
	ShutdownGrace time.Duration
	// MaxActivePerOwner bounds the tasks in progress (working or
	// input_required) one owner may have: past it Submit fails with
	// [ErrTooManyActive], so that one caller cannot queue its work ahead
	// of everyone else's. 0: no bound. The count is the store's, so the
	// bound holds across replicas, up to one task per replica submitting
	// for the same owner at the same moment (submissions are serialized per
	// owner within a process only).
	MaxActivePerOwner int
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

	draining chan struct{} // closed when Run begins to shut down

	mu       sync.Mutex
	running  map[string]*Exec
	queued   map[string]bool // ids in queue: recovery does not queue them twice
	handlers map[string]Handler

	// active counts an owner's tasks in progress (MaxActivePerOwner);
	// owners serializes each owner's submissions around that count.
	active ActiveCounter
	owners [64]sync.Mutex
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
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	active, _ := cfg.Manager.(ActiveCounter)
	if cfg.MaxActivePerOwner > 0 && active == nil {
		return nil, fmt.Errorf("%w: MaxActivePerOwner needs a manager that counts tasks in progress (ActiveCounter)", ErrInvalid)
	}
	return &Runner{
		active:   active,
		draining: make(chan struct{}),
		cfg:      cfg,
		m:        cfg.Manager,
		handlers: make(map[string]Handler),
		queue:    make(chan job, cfg.Queue),
		slots:    make(chan struct{}, cfg.Concurrency),
		running:  make(map[string]*Exec),
		queued:   make(map[string]bool),
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
	if err := r.cfg.Secrets.seal(ctx, &nt); err != nil {
		return Task{}, fmt.Errorf("submit task: %w", err)
	}
	if max := r.cfg.MaxActivePerOwner; max > 0 {
		mu := r.ownerLock(nt.Owner)
		mu.Lock()
		defer mu.Unlock()
		n, err := r.active.CountActive(ctx, nt.Owner)
		if err != nil {
			return Task{}, fmt.Errorf("submit task: %w", err)
		}
		if n >= max {
			return Task{}, fmt.Errorf("submit task: %w: %d, the most one caller may have", ErrTooManyActive, n)
		}
	}
	t, err := r.m.Create(ctx, nt)
	if err != nil {
		return Task{}, fmt.Errorf("submit task: %w", err)
	}
	r.enqueue(ctx, job{id: t.ID}, false) // backlog full: the task waits in the store for a scan
	return t, nil
}

// ownerLock is the mutex that serializes one owner's submissions (one of
// a fixed set, by hash: bounded memory whatever the number of owners).
func (r *Runner) ownerLock(p Principal) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(p.Tenant))
	h.Write([]byte{0})
	h.Write([]byte(p.Subject))
	return &r.owners[h.Sum32()%uint32(len(r.owners))]
}

// enqueue puts j in the backlog unless it is there already. With block it
// waits for room (or ctx); otherwise a full backlog refuses the job. It
// reports whether this call queued j.
func (r *Runner) enqueue(ctx context.Context, j job, block bool) (bool, error) {
	r.mu.Lock()
	if r.queued[j.id] {
		r.mu.Unlock()
		return false, nil
	}
	r.queued[j.id] = true
	r.mu.Unlock()
	sent := false
	var err error
	if block {
		select {
		case r.queue <- j:
			sent = true
		case <-ctx.Done():
			err = context.Cause(ctx)
		}
	} else {
		select {
		case r.queue <- j:
			sent = true
		default:
		}
	}
	if !sent {
		r.mu.Lock()
		delete(r.queued, j.id)
		r.mu.Unlock()
	}
	return sent, err
}

// dequeued forgets that id is in the backlog.
func (r *Runner) dequeued(id string) {
	r.mu.Lock()
	delete(r.queued, id)
	r.mu.Unlock()
}

// recoverStats counts what one recovery pass did.
type recoverStats struct {
	listed, requeued, failed, cancelled int
}

func (st recoverStats) acted() int { return st.requeued + st.failed + st.cancelled }

// rerunnable reports whether recovery may run o again, from where its
// handler stands: a task never started, one whose handler did nothing
// irreversible yet (fresh, or no stage with a Checkpointing runner) or
// recorded how to resume, and any task of an Idempotent handler.
func (r *Runner) rerunnable(o *Task, h Handler) bool {
	switch {
	case o.LeaseToken == 0 || h.Idempotent:
		return true
	case o.Stage == StageFresh || o.Stage == StageResumable:
		return true
	case o.Stage == StageNone:
		return r.cfg.Checkpointing
	}
	return false // in doubt
}

// recover handles tasks whose lease lapsed at asOf (all of a dead worker's
// tasks, and never-started ones): a task with cancelation intent is
// cancelled; a rerunnable one is queued to run again; one in doubt is
// failed with [MsgInDoubt], any other with [MsgInterrupted]; a task of an
// unknown tool fails with [MsgNoHandler]. Each takeover is a fenced
// claim, so two recoverers never both act. One pass looks at up to
// ScanBatch tasks, oldest first. With block it waits for room in the
// backlog (the workers must be running); without, a full backlog ends the
// pass and the rest waits for the next one.
func (r *Runner) recover(ctx context.Context, asOf time.Time, block bool) (recoverStats, error) {
	var st recoverStats
	orphans, err := r.m.Orphans(ctx, asOf, r.cfg.ScanBatch)
	if err != nil {
		return st, fmt.Errorf("recover tasks: %w", err)
	}
	st.listed = len(orphans)
	for _, o := range orphans {
		h, known := r.handler(o.ToolName)
		if known && !o.CancelRequested && r.rerunnable(&o, h) {
			r.mu.Lock()
			already := r.queued[o.ID]
			r.mu.Unlock()
			if already {
				continue
			}
			queued, err := r.enqueue(ctx, job{id: o.ID, token: o.LeaseToken, asOf: asOf}, block)
			if err != nil {
				return st, err
			}
			if !queued {
				return st, nil // backlog full (or queued meanwhile): the next pass goes on
			}
			st.requeued++
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
			st.cancelled++
		case !known:
			err = r.m.Finish(ctx, l, Failed, internalError("No handler for tool"), MsgNoHandler)
			st.failed++
		case o.Stage == StageInDoubt:
			err = r.m.Finish(ctx, l, Failed, internalError("Task interrupted: the request may have reached the API"), MsgInDoubt)
			st.failed++
		default:
			err = r.m.Finish(ctx, l, Failed, internalError("Task interrupted"), MsgInterrupted)
			st.failed++
		}
		if err != nil {
			r.cfg.Logger.Error("tasks: recovery could not finish task", "task", o.ID, "err", err)
		}
	}
	return st, nil
}

// Run executes queued tasks until ctx is done, then shuts down: it stops
// taking work (queued tasks stay in the store for whoever runs next), stops
// the handlers waiting for input at once, lets the running ones finish for
// up to ShutdownGrace (renewing their leases), then stops the rest (their
// contexts end with cause [ErrShutdown]), releases the leases of every
// unfinished task so that another runner resumes it without waiting for the
// lease to lapse, and returns. Its workers start first; then it takes over
// the tasks whose lease lapsed (at once, and every Scan) and sweeps expired
// ones. Call Run once.
func (r *Runner) Run(ctx context.Context) error {
	base, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	var wg, jobs sync.WaitGroup
	dispatching := make(chan struct{})
	go func() { // dispatcher: take a job, then wait for a free slot
		defer close(dispatching)
		for {
			var j job
			select {
			case <-ctx.Done():
				return
			case j = <-r.queue:
				r.dequeued(j.id)
			}
			select {
			case <-ctx.Done():
				return // the job's task stays in the store for recovery
			case r.slots <- struct{}{}:
				jobs.Go(func() { r.runJob(ctx, base, j) })
			}
		}
	}()
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
	wg.Go(func() { r.recovery(ctx) })
	<-ctx.Done()
	<-dispatching // no job starts after this
	r.drain(&jobs, stop)
	unsubscribe() // ends the wake-up loop whatever the publisher does with ctx
	wg.Wait()
	return nil
}

// drain is the shutdown: handlers waiting for input stop at once (see
// Exec.RequireInput), running ones get the grace period, then the rest are
// stopped; it returns once every job has recorded its outcome or released
// its lease.
func (r *Runner) drain(jobs *sync.WaitGroup, stop context.CancelCauseFunc) {
	close(r.draining)
	done := make(chan struct{})
	go func() { jobs.Wait(); close(done) }()
	r.mu.Lock()
	n := len(r.running)
	r.mu.Unlock()
	grace := max(r.cfg.ShutdownGrace, 0)
	if n > 0 && grace > 0 {
		r.cfg.Logger.Info("tasks: stopping; letting running tasks finish", "tasks", n, "grace", grace)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		r.mu.Lock()
		n = len(r.running)
		r.mu.Unlock()
		if n > 0 {
			r.cfg.Logger.Warn("tasks: grace period over: stopping the tasks still running; their leases are released for the next runner", "tasks", n)
		}
		stop(ErrShutdown)
		<-done
	}
	stop(ErrShutdown)
}

// recovery is Run's one recovery mechanism. At start, with the workers
// already running, it takes over every task whose lease has lapsed, in
// passes that wait for room in the backlog, until a pass finds no more (so
// a crash may leave more tasks than the backlog holds); live leases are
// left to their owners, who may be other processes. Then, every Scan, it
// takes over what lapsed since without waiting, and sweeps expired tasks.
func (r *Runner) recovery(ctx context.Context) {
	total := recoverStats{}
	for ctx.Err() == nil {
		st, err := r.recover(ctx, time.Now(), true)
		total.requeued, total.failed, total.cancelled = total.requeued+st.requeued, total.failed+st.failed, total.cancelled+st.cancelled
		if err != nil {
			if ctx.Err() == nil {
				r.cfg.Logger.Error("tasks: recovery at start failed; the next scan retries", "err", err)
			}
			break
		}
		if st.listed < r.cfg.ScanBatch || st.acted() == 0 {
			break
		}
	}
	r.cfg.Logger.Info("tasks: recovered at start", "requeued", total.requeued, "failed", total.failed, "cancelled", total.cancelled)
	r.sweep(ctx)
	tick := time.NewTicker(r.cfg.Scan)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			st, err := r.recover(ctx, time.Now(), false)
			if err != nil && ctx.Err() == nil {
				r.cfg.Logger.Error("tasks: recovery scan failed", "err", err)
			}
			if st.acted() > 0 {
				r.cfg.Logger.Info("tasks: took over tasks whose worker stopped renewing its lease",
					"requeued", st.requeued, "failed", st.failed, "cancelled", st.cancelled)
			}
			r.sweep(ctx)
		}
	}
}

func (r *Runner) sweep(ctx context.Context) {
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
	if ctx.Err() != nil {
		return // shutting down: the task stays in the store for the next runner
	}
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
	ctx = context.WithValue(ctx, execKey{}, x)
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

// execKey carries the running task's *Exec in its handler's context.
type execKey struct{}

// ExecFrom returns the running task whose handler ctx belongs to, or nil
// outside a task (a handler that also runs inline uses it to tell the two
// apart, and layers between the runner and the handler need not pass the
// Exec along).
func ExecFrom(ctx context.Context) *Exec {
	x, _ := ctx.Value(execKey{}).(*Exec)
	return x
}

// Task returns the task as claimed (id, owner, tool, params, ...).
func (x *Exec) Task() Task { return x.task.Clone() }

// Secret opens the secret kept with the task (see [Secrets]); nil when it
// has none. It fails when the secret cannot be opened: the runner has no
// Secrets, the sealing key is gone, or the record was altered or moved to
// another task's owner or tool.
func (x *Exec) Secret() ([]byte, error) {
	return x.r.cfg.Secrets.open(&x.task)
}

// Params returns the task's params (the original call).
func (x *Exec) Params() json.RawMessage { return cloneRaw(x.task.Params) }

// Checkpoint records durably where the handler stands (see [Stage]) and
// its progress record, which a re-run finds in Task().Checkpoint. Record
// StageInDoubt before doing what must not be repeated, and StageResumable
// with what a re-run needs to go on once it is known.
func (x *Exec) Checkpoint(ctx context.Context, stage Stage, data json.RawMessage) error {
	return x.check(x.r.m.Checkpoint(ctx, x.lease, stage, data))
}

// SetStatusMessage publishes a progress message on the task.
func (x *Exec) SetStatusMessage(ctx context.Context, msg string) error {
	return x.check(x.r.m.SetStatusMessage(ctx, x.lease, msg))
}

// RequireInput asks the client for input and waits until every key has an
// answer, returning the answers by key. Keys answered earlier in this task's
// life (a re-run) return their recorded answers without asking again. It
// returns early with the context's cause on cancelation, and with
// [ErrShutdown] as soon as the runner shuts down (a waiting task does not
// hold the shutdown up: its lease is released and a re-run replays the
// answers).
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
		case <-x.r.draining:
			x.cancel(ErrShutdown)
			return nil, ErrShutdown
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
