// Package audit keeps a record of every tools/call and every task state
// change: who called which tool of which API, what the call did at each of
// its three levels (the upstream HTTP status, the JSON-RPC error, the tool's
// isError), how long it took and on which replica. Records go to a [Sink]:
// JSON lines on stdout or in a file, or a table of the task store, which
// [Store.List] queries and [Format] prints for `mcpgate audit`.
//
// Invariants:
//
//   - Credentials never enter a record. A record has no field for headers,
//     tokens or URLs: the caller is its subject, the upstream call its
//     method, path template and status. The arguments are kept as a digest
//     (SHA-256 of their RFC 8785 canonical form, the same hash that binds a
//     sealed requestState) and, only with Options.IncludeArguments, as JSON
//     whose members with credential-like names (authorization, password,
//     secret, token, api_key, cookie, …) are replaced by "[redacted]".
//   - Recording never blocks a call: records go into a bounded buffer that
//     one goroutine writes out in batches. When the buffer is full, or one
//     subject already holds its share of it (Options.MaxPerSubject, so that
//     a caller flooding a slow sink cannot push the others' records out),
//     the record is dropped and counted ([Recorder.Dropped]); a batch the
//     sink refuses is counted too ([Recorder.Failed]) and logged, never
//     retried.
//   - A nil *Recorder and a nil *Entry are valid and do nothing, so a
//     gateway without auditing pays one nil check per call.
//   - Records are written in the order they were finished on one replica;
//     Store.List returns the newest first.
package audit

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/mrtr"
)

// Kind is what a record is about.
type Kind string

// The kinds of record.
const (
	KindToolCall Kind = "tools/call"
	KindTask     Kind = "task"
)

// Outcome sums a record up, for filtering.
type Outcome string

// The outcomes.
const (
	OK        Outcome = "ok"         // the tool answered without isError (a task: completed)
	ToolError Outcome = "tool_error" // the tool answered with isError (a task: failed)
	RPCError  Outcome = "rpc_error"  // the call ended with a JSON-RPC error
	Refused   Outcome = "refused"    // a policy or a quota refused it before any upstream call
	Cancelled Outcome = "cancelled"  // a task was cancelled
	Pending   Outcome = "pending"    // a task changed to working or input_required
	// InputRequired: the call paused to ask the user (an MRTR round, such as
	// a confirmation); the retry that carries the answer has its own record.
	InputRequired Outcome = "input_required"
	// TaskCreated: the call was answered with a task; the task's changes
	// have their own records.
	TaskCreated Outcome = "task"
)

// Record is one audit record. Its JSON form is the line written by the
// stdout and file sinks and the document kept by the stores.
type Record struct {
	Time    time.Time `json:"time"`
	Kind    Kind      `json:"kind"`
	Replica string    `json:"replica,omitempty"`
	Subject string    `json:"subject,omitempty"`
	API     string    `json:"api,omitempty"`
	Tool    string    `json:"tool,omitempty"`
	// Method and Path are the upstream operation: the HTTP method and the
	// path template (never the URL, which can carry secrets and arguments).
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	// ArgumentsSHA256 is the base64url SHA-256 of the arguments' RFC 8785
	// canonical form ({} for none); arguments that are not valid JSON are
	// hashed as they are, with the prefix "raw:".
	ArgumentsSHA256 string `json:"arguments_sha256,omitempty"`
	// Arguments are kept only with Options.IncludeArguments, redacted.
	Arguments    json.RawMessage `json:"arguments,omitempty"`
	Confirmation *Confirmation   `json:"confirmation,omitempty"`
	// RefusedBy names what refused the call: "policy" or "quota".
	RefusedBy  string    `json:"refused_by,omitempty"`
	HTTPStatus int       `json:"http_status,omitempty"`
	RPCError   *RPCErr   `json:"rpc_error,omitempty"`
	IsError    bool      `json:"is_error,omitempty"`
	Outcome    Outcome   `json:"outcome"`
	DurationMS float64   `json:"duration_ms"`
	TaskID     string    `json:"task_id,omitempty"`
	TaskStatus string    `json:"task_status,omitempty"`
	TraceID    string    `json:"trace_id,omitempty"`
	recorded   time.Time // for the duration; not part of the record
}

// Confirmation is the user confirmation a call asked for and its answer.
type Confirmation struct {
	Asked  string `json:"asked"`  // the question, as shown to the user
	Answer string `json:"answer"` // accept, decline, cancel, or "" when no answer came back
}

// RPCErr is the JSON-RPC error a call ended with.
type RPCErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Options configure a [Recorder].
type Options struct {
	// Replica names this process in every record (for example the host name).
	Replica string
	// IncludeArguments keeps the (redacted) arguments in tools/call records.
	IncludeArguments bool
	// Buffer is the number of records waiting to be written, at most
	// (default 4096); past it records are dropped and counted.
	Buffer int
	// MaxPerSubject is the share of the buffer one subject may hold
	// (default an eighth of Buffer).
	MaxPerSubject int
	// Retention, for a [Store] sink, is how long records are kept; older
	// ones are deleted every SweepEvery (default: a twentieth of the
	// retention, between a minute and an hour). Zero keeps them forever.
	Retention  time.Duration
	SweepEvery time.Duration
	// WriteTimeout bounds one batch write (default 10s).
	WriteTimeout time.Duration
	// Logger receives write failures (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Recorder writes records to a sink in the background. Close it to flush.
type Recorder struct {
	sink Sink
	opts Options
	now  func() time.Time

	mu      sync.Mutex // guards closed (no send on a closed queue) and pending
	closed  bool
	queue   chan Record
	pending map[string]int // queued records per subject
	done    chan struct{}

	dropped, failed, written atomic.Uint64
}

// maxBatch is the number of records written in one sink call, at most.
const maxBatch = 256

// NewRecorder starts a recorder writing to sink.
func NewRecorder(sink Sink, opts Options) *Recorder {
	if opts.Buffer <= 0 {
		opts.Buffer = 4096
	}
	if opts.MaxPerSubject <= 0 {
		opts.MaxPerSubject = max(opts.Buffer/8, 1)
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SweepEvery <= 0 {
		opts.SweepEvery = min(max(opts.Retention/20, time.Minute), time.Hour)
	}
	r := &Recorder{sink: sink, opts: opts, now: opts.Now, queue: make(chan Record, opts.Buffer),
		pending: make(map[string]int), done: make(chan struct{})}
	if r.now == nil {
		r.now = time.Now
	}
	go r.run()
	return r
}

// Dropped is the number of records dropped because the buffer was full.
func (r *Recorder) Dropped() uint64 { return r.dropped.Load() }

// Failed is the number of records the sink refused to write.
func (r *Recorder) Failed() uint64 { return r.failed.Load() }

// Written is the number of records written.
func (r *Recorder) Written() uint64 { return r.written.Load() }

// Call describes a tools/call as it starts.
type Call struct {
	Subject string
	API     string
	Tool    string
	Method  string
	Path    string // the path template
	// Arguments are the raw arguments; they are hashed (and with
	// IncludeArguments copied, redacted) when the call starts, so the
	// caller may reuse the buffer afterwards.
	Arguments json.RawMessage
	TraceID   string
}

// Start begins the record of a tools/call. Finish it with [Entry.Finish].
// On a nil Recorder it returns nil, and every Entry method then does
// nothing.
func (r *Recorder) Start(c Call) *Entry {
	if r == nil {
		return nil
	}
	now := r.now()
	e := &Entry{r: r, rec: Record{
		Time: now.UTC(), Kind: KindToolCall, Replica: r.opts.Replica,
		Subject: c.Subject, API: c.API, Tool: c.Tool, Method: c.Method, Path: c.Path,
		ArgumentsSHA256: digest(c.Arguments), TraceID: c.TraceID, recorded: now,
	}}
	if r.opts.IncludeArguments {
		e.rec.Arguments = redactArguments(c.Arguments)
	}
	return e
}

// digest is the arguments digest of a Record.
func digest(args json.RawMessage) string {
	if h, err := mrtr.HashArguments(args); err == nil {
		return h
	}
	sum := sha256.Sum256(args)
	return "raw:" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// Entry is the record of one call in progress. Its methods may be called
// from the goroutines that serve the call, one at a time.
type Entry struct {
	r    *Recorder
	mu   sync.Mutex
	rec  Record
	done bool
}

// Confirm records the confirmation asked and the answer ("" when none came
// back).
func (e *Entry) Confirm(asked, answer string) {
	e.set(func(r *Record) { r.Confirmation = &Confirmation{Asked: asked, Answer: answer} })
}

// Upstream records the upstream's HTTP status (the last one, when the call
// polled).
func (e *Entry) Upstream(status int) {
	e.set(func(r *Record) { r.HTTPStatus = status })
}

// Refuse records that a policy ("policy") or a quota ("quota") refused the
// call.
func (e *Entry) Refuse(by string) {
	e.set(func(r *Record) { r.RefusedBy = by })
}

// set changes the record in progress (nothing on a nil Entry).
func (e *Entry) set(f func(*Record)) {
	if e == nil {
		return
	}
	e.mu.Lock()
	f(&e.rec)
	e.mu.Unlock()
}

// Result is how a call ended: rpcErr for a JSON-RPC error (nil otherwise),
// isError for a tool result with isError.
type Result struct {
	RPCError *RPCErr
	IsError  bool
	// InputRequired: the call paused to ask the user; Task: it was
	// answered with a task.
	InputRequired, Task bool
}

// Finish completes the record and queues it; later calls do nothing.
func (e *Entry) Finish(res Result) {
	if e == nil {
		return
	}
	e.mu.Lock()
	if e.done {
		e.mu.Unlock()
		return
	}
	e.done = true
	rec := e.rec
	e.mu.Unlock()
	rec.RPCError, rec.IsError = res.RPCError, res.IsError
	switch {
	case rec.RefusedBy != "":
		rec.Outcome = Refused
	case res.RPCError != nil:
		rec.Outcome = RPCError
	case res.InputRequired:
		rec.Outcome = InputRequired
	case res.Task:
		rec.Outcome = TaskCreated
	case res.IsError:
		rec.Outcome = ToolError
	default:
		rec.Outcome = OK
	}
	rec.DurationMS = float64(e.r.now().Sub(rec.recorded).Microseconds()) / 1000
	e.r.enqueue(rec)
}

// TaskChange describes a task state change.
type TaskChange struct {
	Subject string
	API     string
	Tool    string
	TaskID  string
	// Status is the task's new status (working, input_required, completed,
	// failed, cancelled).
	Status string
	// IsError is set for a completed task whose result is a tool error.
	IsError bool
	TraceID string
}

// Task records a task state change.
func (r *Recorder) Task(c TaskChange) {
	if r == nil {
		return
	}
	now := r.now()
	rec := Record{
		Time: now.UTC(), Kind: KindTask, Replica: r.opts.Replica,
		Subject: c.Subject, API: c.API, Tool: c.Tool,
		TaskID: c.TaskID, TaskStatus: c.Status, IsError: c.IsError, TraceID: c.TraceID,
	}
	switch c.Status {
	case "completed":
		rec.Outcome = OK
		if c.IsError {
			rec.Outcome = ToolError
		}
	case "failed":
		rec.Outcome = ToolError
	case "cancelled":
		rec.Outcome = Cancelled
	default:
		rec.Outcome = Pending
	}
	r.enqueue(rec)
}

// enqueue queues rec without blocking; a full buffer, or a full share of
// it for rec's subject, drops it.
func (r *Recorder) enqueue(rec Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.pending[rec.Subject] >= r.opts.MaxPerSubject {
		r.dropped.Add(1)
		return
	}
	select {
	case r.queue <- rec:
		r.pending[rec.Subject]++
	default:
		r.dropped.Add(1)
	}
}

// dequeued releases the buffer shares of a batch taken from the queue.
func (r *Recorder) dequeued(batch []Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range batch {
		s := batch[i].Subject
		if r.pending[s]--; r.pending[s] <= 0 {
			delete(r.pending, s)
		}
	}
}

// run writes queued records in batches and sweeps an expiring store.
func (r *Recorder) run() {
	defer close(r.done)
	var sweep <-chan time.Time
	store, _ := r.sink.(Store)
	if store != nil && r.opts.Retention > 0 {
		t := time.NewTicker(r.opts.SweepEvery)
		defer t.Stop()
		sweep = t.C
		r.sweep(store)
	}
	batch := make([]Record, 0, maxBatch)
	for {
		select {
		case rec, ok := <-r.queue:
			if !ok {
				return
			}
			batch = append(batch[:0], rec)
		fill:
			for len(batch) < maxBatch {
				select {
				case rec, ok := <-r.queue:
					if !ok {
						break fill
					}
					batch = append(batch, rec)
				default:
					break fill
				}
			}
			r.dequeued(batch)
			r.write(batch)
		case <-sweep:
			r.sweep(store)
		}
	}
}

func (r *Recorder) write(batch []Record) {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.WriteTimeout)
	defer cancel()
	if err := r.sink.Write(ctx, batch); err != nil {
		r.failed.Add(uint64(len(batch)))
		r.opts.Logger.Error("audit: records lost: the sink refused them", "records", len(batch), "err", err)
		return
	}
	r.written.Add(uint64(len(batch)))
}

func (r *Recorder) sweep(store Store) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := store.Sweep(ctx, r.now().Add(-r.opts.Retention)); err != nil {
		r.opts.Logger.Warn("audit: sweep of expired records failed", "err", err)
	}
}

// Close writes the queued records, stops the recorder and closes the sink.
// Records finished after Close are dropped.
func (r *Recorder) Close(ctx context.Context) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.queue)
	}
	r.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return r.sink.Close()
}

// entryKey is the context key of the Entry of the call being served.
type entryKey struct{}

// WithEntry returns ctx carrying e, for [Transport] and deeper layers.
func WithEntry(ctx context.Context, e *Entry) context.Context {
	if e == nil {
		return ctx
	}
	return context.WithValue(ctx, entryKey{}, e)
}

// EntryFrom returns the Entry in ctx, or nil.
func EntryFrom(ctx context.Context) *Entry {
	e, _ := ctx.Value(entryKey{}).(*Entry)
	return e
}

// Transport wraps an upstream RoundTripper so that the status of every
// response to a request whose context carries an Entry is recorded in it.
// It reads nothing else from the request or the response.
func Transport(next http.RoundTripper) http.RoundTripper {
	return roundTripper{next}
}

type roundTripper struct{ next http.RoundTripper }

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		EntryFrom(req.Context()).Upstream(resp.StatusCode)
	}
	return resp, err
}
