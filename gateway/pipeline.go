package gateway

import (
	"context"
	"errors"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
	"github.com/mcpgate/mcpgate/policy"
	"github.com/mcpgate/mcpgate/proxy"
	"github.com/mcpgate/mcpgate/telemetry"
)

// A servedTool is one tool as the gateway serves it: its API, its two names
// (as the document gave it and as served), its compiled endpoint and what
// is decided once for it.
type servedTool struct {
	api     *api
	gen     *openapi.Tool // as generated from the API's document
	tool    *openapi.Tool // as served: the name prefixed when several APIs are
	ep      *proxy.Endpoint
	def     mcp.Tool
	task    bool // a long-running operation, served as a task tool
	confirm bool // the settings ask the user to confirm its calls
	policy  *policy.Tool

	// handler is an ordinary tool's whole way, from the first step to the
	// upstream; discovery's call goes through it too.
	handler mcp.ToolHandler
	// connect, for an API whose users connect their own accounts, asks a
	// caller without a grant to connect first.
	connect func(mcp.ToolHandler) mcp.ToolHandler
	// run is a task tool's worker side (taskRun).
	run func(context.Context, *mcp.TaskRequest) (*mcp.CallToolResult, error)
}

// serveTool compiles one tool of an API.
func (g *Gateway) serveTool(a *api, gen, t *openapi.Tool) (*servedTool, error) {
	ep, err := a.proxyFor(t).Endpoint(t)
	if err != nil {
		return nil, err
	}
	for _, w := range ep.Warnings() {
		g.logger.Debug("tool warning", "tool", t.Name, "warning", w)
	}
	an := t.Annotations
	st := &servedTool{api: a, gen: gen, tool: t, ep: ep, def: mcpTool(t), task: a.isTaskTool(gen), confirm: g.needsConfirm(t),
		policy: &policy.Tool{Name: t.Name, API: a.cfg.Name, Method: t.Route.Method, Path: t.Route.Path, Annotations: policy.Annotations{
			Title: an.Title, ReadOnlyHint: an.ReadOnlyHint, DestructiveHint: an.DestructiveHint,
			IdempotentHint: an.IdempotentHint, OpenWorldHint: an.OpenWorldHint}}}
	if !st.task {
		st.handler = g.toolHandler(st)
	}
	if a.cfg.Credentials.Mode == "oauth" {
		// Outermost: a caller who has not connected an account at the API
		// is asked to (a URL-mode round) before anything else; the retry
		// after connecting starts the call afresh.
		if st.connect, err = g.conn.Decorator(a.connectName()); err != nil {
			return nil, err
		}
		if st.handler != nil {
			st.handler = st.connect(st.handler)
		}
	}
	return st, nil
}

// register adds st to a tool set: an ordinary tool, or a task tool whose
// Prepare takes the steps before a task is created and whose Run runs the
// task with the definition it was created with (taskDefinition).
func (g *Gateway) register(ts *mcp.ToolSet, st *servedTool) error {
	if !st.task {
		return ts.Add(&st.def, st.handler)
	}
	st.run = g.taskRun(st.api, st.ep)
	name := st.tool.Name
	return ts.AddTask(&mcp.TaskTool{Tool: st.def, Support: mcp.TaskOptional, Idempotent: !st.tool.Route.Mutating,
		Prepare: g.taskPrepare(st),
		Run: func(ctx context.Context, req *mcp.TaskRequest) (*mcp.CallToolResult, error) {
			def := g.taskDefinition(req.ToolsVersion, name)
			if def == nil || def.run == nil {
				def = st
			}
			if req.TaskID == "" { // run inline, inside its tools/call: observed as that call
				return def.run(ctx, req)
			}
			return g.runTask(ctx, def, req)
		}})
}

// runTask runs a task in a worker, in a span of its own, with an audit
// record of each state change it makes.
func (g *Gateway) runTask(ctx context.Context, st *servedTool, req *mcp.TaskRequest) (*mcp.CallToolResult, error) {
	ctx, sp := g.ops.tracer.StartTaskRun(ctx, telemetry.TaskRun{ID: req.TaskID, Tool: req.Name})
	traceID := telemetry.TraceID(ctx)
	g.ops.auditTask(req, st, "working", false, traceID)
	res, err := st.run(ctx, req)
	status := "completed"
	switch {
	case ctx.Err() != nil:
		status = "cancelled"
	case err != nil:
		status = "failed"
	}
	g.ops.auditTask(req, st, status, res != nil && res.IsError, traceID)
	sp.End(telemetry.Outcome{Err: err, ToolError: res != nil && res.IsError})
	return res, err
}

// The way of a call, in order (every kind of tool, however reached):
//
//  1. enter: the call's observer note learns the tool; the audit entry starts.
//  2. policy: deny ends the call with a tool error; confirm asks the user
//     even when the settings would not.
//  3. confirm: the user confirms a destructive call (an MRTR round), or a
//     client that cannot ask is refused (confirm_fallback deny).
//  4. quota: a call over a limit ends with a tool error (after the
//     confirmation, so a round that only asks takes no token).
//  5. credentials: the credential this API gets (credentials.go).
//  6. dispatch: the proxy's request, or the task's creation.
//
// steps runs 1 to 4. It answers with a result (a refusal) or an error (a
// pause for input, a protocol error), or lets the call go on.
func (g *Gateway) steps(ctx context.Context, st *servedTool, req *mcp.CallToolRequest) (context.Context, *mcp.CallToolResult, error) {
	ctx, c := g.enter(ctx, st, req)
	var in *policy.Input // what rules and quotas read, when there are any
	if g.ops.policy != nil || g.ops.quota != nil {
		in = &policy.Input{Caller: g.policyCaller(ctx, req.Principal), Tool: st.policy, Args: req.Arguments}
	}
	confirm := st.confirm
	if g.ops.policy != nil {
		d := g.ops.policy.Decide(in)
		switch {
		case !d.Allowed():
			c.refused = "policy"
			g.logger.Info("a policy refused a call", "tool", st.tool.Name, "rule", d.Rule, "err", d.Err)
			return ctx, mcp.ToolError(policy.DeniedMessage), nil
		case d.Effect == policy.Confirm:
			confirm = true
		}
	}
	if confirm {
		if err := g.confirmCall(st, req, c); errors.Is(err, errDeclined) {
			return ctx, mcp.ToolError("The user did not allow this call; nothing was sent to the API."), nil
		} else if err != nil {
			return ctx, nil, err
		}
	}
	if g.ops.quota != nil {
		v, err := g.ops.quota.Allow(ctx, in)
		if err != nil {
			g.logger.Warn("quotas: the shared quota store failed", "err", err)
		}
		if !v.Allowed {
			c.refused = "quota"
			return ctx, mcp.ToolError(v.Message()), nil
		}
	}
	return ctx, nil, nil
}

// enter tells the call's note which tool it runs (a discovery call names
// the tool it calls) and starts its audit entry.
func (g *Gateway) enter(ctx context.Context, st *servedTool, req *mcp.CallToolRequest) (context.Context, *toolCall) {
	c := callOf(ctx)
	if c == nil { // a call the observer did not see (none is set)
		c = &toolCall{}
		ctx = context.WithValue(ctx, toolCallKey{}, c)
	}
	c.tool, c.api, c.method, c.path = st.tool.Name, st.api.cfg.Name, st.tool.Route.Method, st.tool.Route.Path
	if g.ops.audit != nil && c.entry == nil {
		c.entry = g.ops.audit.Start(audit.Call{Subject: req.Principal.Subject, API: st.api.cfg.Name, Tool: st.tool.Name,
			Method: st.tool.Route.Method, Path: st.tool.Route.Path, Arguments: req.Arguments, TraceID: telemetry.TraceID(ctx)})
	}
	return ctx, c
}

// policyCaller is the request's caller as rules see it, built once per
// request.
func (g *Gateway) policyCaller(ctx context.Context, p mcp.Principal) *policy.Caller {
	if g.ops.policy == nil && g.ops.quota == nil {
		return nil
	}
	if c := callOf(ctx); c != nil {
		if c.caller == nil {
			c.caller = &policy.Caller{Subject: p.Subject, Scopes: p.Scopes, Claims: p.Claims}
		}
		return c.caller
	}
	return &policy.Caller{Subject: p.Subject, Scopes: p.Scopes, Claims: p.Claims}
}

// toolHandler is an ordinary tool's whole way: the steps, the credential,
// the upstream call, in a tool span.
func (g *Gateway) toolHandler(st *servedTool) mcp.ToolHandler {
	dispatch := st.api.creds.bindTool(st.ep.Proxy().Handler(st.ep))
	span := telemetry.Tool{Name: st.tool.Name, API: st.api.cfg.Name, Method: st.tool.Route.Method, Path: st.tool.Route.Path}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, res, err := g.steps(ctx, st, req)
		if res != nil || err != nil {
			return res, err
		}
		if req.Round > 0 { // the retry of a paused call: one more MRTR round
			var round telemetry.Span
			ctx, round = g.ops.tracer.StartRound(ctx, st.tool.Name, req.Round)
			defer func() { round.End(telemetry.Outcome{Err: err, ToolError: res != nil && res.IsError}) }()
		}
		ctx, sp := g.ops.tracer.StartToolCall(ctx, span)
		res, err = dispatch(ctx, req)
		sp.End(telemetry.Outcome{Err: err, ToolError: res != nil && res.IsError})
		return res, err
	}
}

// taskPrepare is a task tool's way before its task exists: the steps, then
// the credential its worker will forward, kept for it.
func (g *Gateway) taskPrepare(st *servedTool) func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	keep := g.prepareTask(st.api, nil)
	prepare := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, res, err := g.steps(ctx, st, req)
		if res != nil || err != nil {
			return res, err
		}
		return nil, keep(ctx, req)
	}
	if st.connect != nil {
		prepare = st.connect(prepare)
	}
	// A result is a refusal (policy, quota, confirmation, a connect
	// question's answer): it answers the call as for an ordinary tool, and
	// no task is created.
	return prepare
}
