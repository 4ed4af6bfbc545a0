package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpgate/mcpgate/tasks"
)

// This file is the wire of the Tasks extension (io.modelcontextprotocol/tasks):
// task tools on tools/call, CreateTaskResult, tasks/get, tasks/update,
// tasks/cancel and notifications/tasks on listen streams. Task state and its
// transitions belong to package tasks; this file only maps them onto the
// protocol, authorizing every lookup by the request's principal.

// TaskSupport says whether a tool runs as a task.
type TaskSupport int

const (
	// TaskOptional tools run as a task when the request declared the
	// extension, and synchronously otherwise.
	TaskOptional TaskSupport = iota + 1
	// TaskRequired tools always run as a task; a request that did not declare
	// the extension gets -32021.
	TaskRequired
)

// TaskTool is a tool that can run as a durable task.
type TaskTool struct {
	Tool    Tool
	Support TaskSupport
	// Prepare, if set, runs synchronously on tools/call before a task is
	// created. It may pause with RequireInput (a multi round-trip request
	// that completes before the task exists), reject the call with an
	// *Error, or answer it with a result of its own (a refusal the model
	// reads, as a tool error) instead of creating a task. The input
	// responses it gathered reach Run.
	Prepare func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error)
	// Run does the work: in a worker for a task, inline otherwise. A plain
	// error is a tool error (the task completes with isError); an *Error is a
	// protocol error (the task fails with it).
	Run func(ctx context.Context, req *TaskRequest) (*CallToolResult, error)
	// Idempotent lets recovery re-run the task after its worker died;
	// otherwise such a task fails.
	Idempotent bool
	// Timeout bounds one run (0: none).
	Timeout time.Duration
}

// TaskRequest is what a task tool's Run sees.
type TaskRequest struct {
	// TaskID is the task's id; empty when running synchronously.
	TaskID    string
	Name      string
	Arguments json.RawMessage
	Principal Principal
	// ToolsVersion is the version of the tool set that was in service when
	// the task was created (see Server.ToolsVersion): after a reload, Run
	// may look up the definition the task was created with. Empty when the
	// tool runs synchronously (the current set) or for older tasks.
	ToolsVersion string

	exec      *tasks.Exec
	responses map[string]json.RawMessage
	sync      *Request // the call it runs inside, when run synchronously
}

// Progress sends notifications/progress for the call the tool runs inside,
// when it runs synchronously and the client asked for progress; in a task
// it does nothing (tasks/get tells where a task stands).
func (r *TaskRequest) Progress(progress, total float64, message string) error {
	if r.sync == nil {
		return nil
	}
	return r.sync.Progress(progress, total, message)
}

// Bind decodes the arguments into v.
func (r *TaskRequest) Bind(v any) error { return bindArguments(r.Arguments, v) }

// Input asks the client for input and returns the answers by key. In a task
// it moves the task to input_required and waits for tasks/update (keys are
// unique over the task's life: use fresh keys for new questions). Run
// synchronously, it pauses the request (a multi round-trip request) unless
// the answers already came with the retry.
func (r *TaskRequest) Input(ctx context.Context, requests map[string]InputRequest) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	missing := map[string]InputRequest{}
	for k, ir := range requests {
		if v, ok := r.responses[k]; ok {
			out[k] = v
		} else {
			missing[k] = ir
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	if r.exec == nil {
		return nil, RequireInput(missing, nil)
	}
	raw := make(map[string]json.RawMessage, len(missing))
	for k, ir := range missing {
		b, err := json.Marshal(ir)
		if err != nil {
			return nil, fmt.Errorf("mcp: encode input request %q: %w", k, err)
		}
		raw[k] = b
	}
	got, err := r.exec.RequireInput(ctx, raw, "Waiting for input")
	if err != nil {
		return nil, err
	}
	for k, v := range got {
		out[k] = v
	}
	return out, nil
}

// SetStatus publishes a status message on the task (no-op when synchronous).
func (r *TaskRequest) SetStatus(ctx context.Context, msg string) error {
	if r.exec == nil {
		return nil
	}
	return r.exec.SetStatusMessage(ctx, msg)
}

// TaskConfig enables the Tasks extension on a server.
type TaskConfig struct {
	// Runner executes tasks; its manager is the task store tasks/get,
	// tasks/update and tasks/cancel read, and its publisher, when it has
	// one, feeds notifications/tasks on listen streams. The caller runs it
	// (Runner.Run) for as long as the server serves.
	Runner *tasks.Runner
	// TTL is each task's retention (default 1 hour); PollInterval the
	// suggested poll interval (default 1 s).
	TTL, PollInterval time.Duration
}

type taskExt struct {
	srv     *Server
	cfg     TaskConfig
	manager tasks.Manager
}

// EnableTasks advertises the Tasks extension and serves tasks/get,
// tasks/update and tasks/cancel from the runner's manager. Call it before
// adding task tools.
func (s *Server) EnableTasks(cfg TaskConfig) error {
	if cfg.Runner == nil {
		return errors.New("mcp: EnableTasks needs a Runner")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = time.Hour
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	x := &taskExt{srv: s, cfg: cfg, manager: cfg.Runner.Manager()}
	s.mu.Lock()
	s.tasks = x
	s.mu.Unlock()
	s.registerExtension(ExtensionTasks, nil, map[string]extensionMethod{
		"tasks/get":    {handler: s.tasksGet, nameParam: "taskId"},
		"tasks/update": {handler: s.tasksUpdate, nameParam: "taskId"},
		"tasks/cancel": {handler: s.tasksCancel, nameParam: "taskId"},
	})
	if pub := cfg.Runner.Publisher(); pub != nil {
		ch, stop := pub.Subscribe(context.Background())
		s.onClose(stop)
		go func() {
			for id := range ch {
				s.listeners.publish(event{kind: evTask, id: id}) // to this process's listen streams
			}
		}()
	}
	return nil
}

// AddTaskTool registers a tool that runs as a task.
func (s *Server) AddTaskTool(t *TaskTool) error {
	if err := s.checkTaskTool(t); err != nil {
		return err
	}
	tt := *t
	s.handleTask(&tt)
	return s.addTool(&tt.Tool, nil, &tt)
}

func (s *Server) checkTaskTool(t *TaskTool) error {
	s.mu.Lock()
	x := s.tasks
	s.mu.Unlock()
	if x == nil {
		return fmt.Errorf("mcp: task tool %q: call EnableTasks first", t.Tool.Name)
	}
	if t.Run == nil || (t.Support != TaskOptional && t.Support != TaskRequired) {
		return fmt.Errorf("mcp: task tool %q needs Run and a Support", t.Tool.Name)
	}
	return nil
}

// handleTask registers t's name with the task runner. The handler runs a
// task with the definition its tool has when the task starts, so a tool
// set swapped in later (SetTools) takes effect for tasks that start after
// it; a task whose tool left the set fails.
func (s *Server) handleTask(t *TaskTool) {
	s.mu.Lock()
	x := s.tasks
	s.mu.Unlock()
	name := t.Tool.Name
	x.cfg.Runner.Handle(name, tasks.Handler{
		Idempotent: t.Idempotent,
		Timeout:    t.Timeout,
		Run: func(ctx context.Context, ex *tasks.Exec) (json.RawMessage, error) {
			e := s.lookupTool(name)
			if e == nil || e.task == nil {
				return nil, &tasks.RPCError{Code: CodeInvalidParams, Message: "Unknown tool: " + name}
			}
			return s.runTask(ctx, e.task, ex)
		},
	})
}

// taskParams is what a task stores to run (or re-run) its call.
type taskParams struct {
	Arguments      json.RawMessage            `json:"arguments,omitempty"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
	// ToolsVersion is the tool set in service when the task was created
	// (Server.ToolsVersion), so that its worker can run it with the
	// definition it was created with after a reload.
	ToolsVersion string `json:"toolsVersion,omitempty"`
}

// callTaskTool serves tools/call of a task tool.
func (s *Server) callTaskTool(ctx context.Context, c *call, t *TaskTool, name string, args json.RawMessage) ([]byte, *Error) {
	return s.callTaskToolAs(ctx, c, t, name, args, name, args)
}

// callTaskToolAs is callTaskTool for a call that a dispatcher (bound, with
// boundArgs) handed to the task tool name: a pause binds the dispatcher.
func (s *Server) callTaskToolAs(ctx context.Context, c *call, t *TaskTool, name string, args json.RawMessage, bound string, boundArgs json.RawMessage) ([]byte, *Error) {
	declared := c.req.Capabilities.HasExtension(ExtensionTasks) && !c.legacy
	if !declared && t.Support == TaskRequired && !c.legacy { // legacy sessions run task tools synchronously
		return nil, ErrMissingCapability("Tool "+name+" runs as a task: declare the "+ExtensionTasks+" extension", tasksCapability())
	}
	req := &CallToolRequest{Request: c.req, Name: name, Arguments: args}
	if t.Prepare != nil {
		res, err := t.Prepare(ctx, req)
		if err != nil {
			var ir *InputRequiredError
			if errors.As(err, &ir) {
				return s.pause(ctx, c, bound, boundArgs, ir)
			}
			return nil, s.toError(c.msg.method, err)
		}
		if res != nil { // answered without a task
			return s.toolOutcome(ctx, c, bound, boundArgs, res, nil)
		}
	}
	if !declared {
		res, err := t.Run(ctx, &TaskRequest{Name: name, Arguments: args, Principal: c.req.Principal, responses: c.req.InputResponses, sync: c.req})
		return s.toolOutcome(ctx, c, bound, boundArgs, res, err)
	}
	s.mu.Lock()
	x := s.tasks
	s.mu.Unlock()
	params, err := json.Marshal(taskParams{Arguments: args, InputResponses: c.req.InputResponses, ToolsVersion: s.ToolsVersion()})
	if err != nil {
		return nil, s.toError(c.msg.method, err)
	}
	task, err := x.cfg.Runner.Submit(ctx, tasks.NewTask{
		Owner:        taskPrincipal(c.req.Principal),
		ToolName:     name,
		Params:       params,
		TTL:          x.cfg.TTL,
		PollInterval: x.cfg.PollInterval,
	})
	if errors.Is(err, tasks.ErrTooManyActive) {
		// The caller's own bound: a result the model reads and acts on.
		return s.toolOutcome(ctx, c, bound, boundArgs, ToolError("You already have the most tasks in progress one caller may have: "+
			"wait for one to finish (tasks/get), or cancel one, then call "+name+" again."), nil)
	}
	if err != nil {
		return nil, s.toError(c.msg.method, err)
	}
	// The task is durably readable now: only then is its handle returned.
	return s.encodeResult(ResultTask, wireTaskOf(&task, false), false)
}

// runTask runs a task tool in a worker and returns its CallToolResult JSON.
func (s *Server) runTask(ctx context.Context, t *TaskTool, ex *tasks.Exec) (json.RawMessage, error) {
	task := ex.Task()
	var p taskParams
	if len(task.Params) > 0 {
		if err := json.Unmarshal(task.Params, &p); err != nil {
			return nil, &tasks.RPCError{Code: CodeInternalError, Message: "Internal error"}
		}
	}
	responses := map[string]json.RawMessage{}
	for k, v := range p.InputResponses {
		responses[k] = v
	}
	for k, v := range task.InputResponses {
		responses[k] = v
	}
	req := &TaskRequest{
		TaskID: task.ID, Name: task.ToolName, Arguments: p.Arguments, ToolsVersion: p.ToolsVersion,
		Principal: Principal{Subject: task.Owner.Subject, Tenant: task.Owner.Tenant},
		exec:      ex, responses: responses,
	}
	res, err := t.Run(ctx, req)
	if ctx.Err() != nil {
		// Cancelled by the client, or the runner is stopping: whatever the
		// handler made of its cancelled context is not the task's result.
		return nil, context.Cause(ctx)
	}
	if err != nil {
		var je *Error
		if errors.As(err, &je) {
			return nil, &tasks.RPCError{Code: je.Code, Message: je.Message, Data: je.Data}
		}
		res = ToolError(err.Error())
	}
	if res == nil {
		return nil, errors.New("task tool returned no result")
	}
	if res.Content == nil {
		res.Content = []Content{}
	}
	b, jerr := s.encodeResult(ResultComplete, res, false)
	if jerr != nil {
		return nil, jerr
	}
	return b, nil
}

func tasksCapability() ClientCapabilities {
	return ClientCapabilities{Extensions: map[string]json.RawMessage{ExtensionTasks: json.RawMessage("{}")}}
}

func taskPrincipal(p Principal) tasks.Principal {
	return tasks.Principal{Subject: p.Subject, Tenant: p.Tenant}
}

// errTaskNotFound is the one answer for unknown, expired and foreign ids.
func errTaskNotFound() *Error { return ErrInvalidParams("Task not found") }

// taskRequest checks the extension was declared and a task id was given.
func (s *Server) taskRequest(req *extensionRequest) (*taskExt, *Error) {
	if !req.Capabilities.HasExtension(ExtensionTasks) {
		return nil, ErrMissingCapability(req.Method+" needs the "+ExtensionTasks+" extension", tasksCapability())
	}
	if req.taskID == "" {
		return nil, ErrInvalidParams("Invalid params: taskId is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tasks, nil
}

func (s *Server) lookupTask(ctx context.Context, x *taskExt, p Principal, id string) (*tasks.Task, *Error) {
	t, err := x.manager.Get(ctx, taskPrincipal(p), id)
	if errors.Is(err, tasks.ErrNotFound) {
		return nil, errTaskNotFound()
	}
	if err != nil {
		return nil, s.toError("tasks/get", err)
	}
	return &t, nil
}

func (s *Server) tasksGet(ctx context.Context, req *extensionRequest) (json.RawMessage, error) {
	x, jerr := s.taskRequest(req)
	if jerr != nil {
		return nil, jerr
	}
	t, jerr := s.lookupTask(ctx, x, req.Principal, req.taskID)
	if jerr != nil {
		return nil, jerr
	}
	wt, jerr := s.deliverable(t, &req.Capabilities)
	if jerr != nil {
		return nil, jerr
	}
	b, jerr := s.encodeResult(ResultComplete, wt, false)
	if jerr != nil {
		return nil, jerr
	}
	return b, nil
}

func (s *Server) tasksUpdate(ctx context.Context, req *extensionRequest) (json.RawMessage, error) {
	x, jerr := s.taskRequest(req)
	if jerr != nil {
		return nil, jerr
	}
	var p struct {
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	if err := json.Unmarshal(req.params, &p); err != nil || p.InputResponses == nil {
		return nil, ErrInvalidParams("Invalid params: inputResponses must be an object")
	}
	for k, v := range p.InputResponses {
		if len(v) == 0 || v[0] != '{' {
			return nil, ErrInvalidParams("Invalid params: inputResponses[%q] must be an object", k)
		}
	}
	err := x.manager.Update(ctx, taskPrincipal(req.Principal), req.taskID, p.InputResponses)
	return s.ack(err)
}

func (s *Server) tasksCancel(ctx context.Context, req *extensionRequest) (json.RawMessage, error) {
	x, jerr := s.taskRequest(req)
	if jerr != nil {
		return nil, jerr
	}
	return s.ack(x.manager.Cancel(ctx, taskPrincipal(req.Principal), req.taskID))
}

func (s *Server) ack(err error) (json.RawMessage, error) {
	if errors.Is(err, tasks.ErrNotFound) {
		return nil, errTaskNotFound()
	}
	if err != nil {
		return nil, s.toError("tasks", err)
	}
	b, jerr := s.encodeResult(ResultComplete, struct{}{}, false)
	if jerr != nil {
		return nil, jerr
	}
	return b, nil
}

// wireTask is a Task or DetailedTask on the wire.
type wireTask struct {
	TaskID         string                     `json:"taskId"`
	Status         tasks.Status               `json:"status"`
	StatusMessage  string                     `json:"statusMessage,omitempty"`
	CreatedAt      string                     `json:"createdAt"`
	LastUpdatedAt  string                     `json:"lastUpdatedAt"`
	TTLMs          *int64                     `json:"ttlMs"`
	PollIntervalMs *int64                     `json:"pollIntervalMs,omitempty"`
	Result         json.RawMessage            `json:"result,omitempty"`
	Error          json.RawMessage            `json:"error,omitempty"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests,omitempty"`
}

const isoMillis = "2006-01-02T15:04:05.000Z07:00"

func wireTaskOf(t *tasks.Task, detailed bool) *wireTask {
	w := &wireTask{
		TaskID: t.ID, Status: t.Status, StatusMessage: t.StatusMessage,
		CreatedAt: t.CreatedAt.UTC().Format(isoMillis), LastUpdatedAt: t.LastUpdatedAt.UTC().Format(isoMillis),
	}
	if t.TTL > 0 {
		ms := t.TTL.Milliseconds()
		w.TTLMs = &ms
	}
	if t.PollInterval > 0 {
		ms := t.PollInterval.Milliseconds()
		w.PollIntervalMs = &ms
	}
	if detailed {
		switch t.Status {
		case tasks.Completed:
			w.Result = t.Result
		case tasks.Failed:
			w.Error = t.Error
		case tasks.InputRequired:
			w.InputRequests = t.InputRequests
		}
	}
	return w
}

// deliverable renders a task for delivery to a client, with the checks seed
// 004 asks for at delivery time: a stored result, error or input request
// that is not well formed fails with a fixed internal error (nothing of it
// reaches the client, the task is not changed), and outstanding input
// requests the client did not declare the capability for fail with -32021.
func (s *Server) deliverable(t *tasks.Task, caps *ClientCapabilities) (*wireTask, *Error) {
	w := wireTaskOf(t, true)
	bad := func(what string) (*wireTask, *Error) {
		s.logger.Error("mcp: stored task payload is not deliverable", "task", t.ID, "what", what)
		return nil, errInternal()
	}
	switch t.Status {
	case tasks.Completed:
		if !isObject(w.Result) {
			return bad("result")
		}
	case tasks.Failed:
		var e struct {
			Code    *int    `json:"code"`
			Message *string `json:"message"`
		}
		if !isObject(w.Error) || json.Unmarshal(w.Error, &e) != nil || e.Code == nil || e.Message == nil {
			return bad("error")
		}
	case tasks.InputRequired:
		if len(w.InputRequests) == 0 {
			return bad("inputRequests")
		}
		reqs := make(map[string]InputRequest, len(w.InputRequests))
		for k, raw := range w.InputRequests {
			var ir struct {
				Method string        `json:"method"`
				Params *ElicitParams `json:"params"`
			}
			if json.Unmarshal(raw, &ir) != nil || ir.Method == "" {
				return bad("inputRequests")
			}
			r := InputRequest{Method: ir.Method}
			if ir.Params != nil {
				r.Params = *ir.Params
			}
			reqs[k] = r
		}
		if missing, what := missingCapabilities(caps, reqs); missing != nil {
			return nil, ErrMissingCapability("This task waits for input that needs the client's "+what+" capability", *missing)
		}
	}
	return w, nil
}

func isObject(b json.RawMessage) bool { return len(b) > 0 && b[0] == '{' && json.Valid(b) }

// authorize keeps the task ids of a listen stream's filter that the
// stream's caller may see.
func (x *taskExt) authorize(ctx context.Context, r *Request, ids []string) []string {
	var ok []string
	for _, id := range ids {
		if _, err := x.manager.Get(ctx, taskPrincipal(r.Principal), id); err == nil {
			ok = append(ok, id)
		}
	}
	return ok
}

// notification renders a fresh notifications/tasks params for a task id of
// a listen stream; false when the caller may not see it or nothing may be
// delivered.
func (x *taskExt) notification(ctx context.Context, r *Request, id string) (json.RawMessage, bool) {
	t, err := x.manager.Get(ctx, taskPrincipal(r.Principal), id)
	if err != nil {
		return nil, false
	}
	w, jerr := x.srv.deliverable(&t, &r.Capabilities)
	if jerr != nil {
		return nil, false // suppressed; polling reports the problem
	}
	b, err := json.Marshal(w)
	return b, err == nil
}
