package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/policy"
	"github.com/mcpgate/mcpgate/telemetry"
)

// A toolCall is what the steps of one tools/call learn on its way (its
// API, its upstream method and path, its upstream status, a refusal, a
// confirmation), kept in the request's context for the observer, which
// counts, logs, audits and ends the trace of every call in one place, task
// tools and calls through discovery included.
type toolCall struct {
	tool, api    string
	method, path string
	status       int    // the upstream's last HTTP status, 0 before one
	refused      string // "policy" or "quota", when a step refused the call
	asked        bool   // the user was asked to confirm
	answer       string // accept, decline or cancel
	entry        *audit.Entry
	caller       *policy.Caller // built once per request, for policy and quotas
}

// toolCallKey holds the note of a call the observer did not see (see
// enter); the observer's own note travels in its observation.
type toolCallKey struct{}

func callOf(ctx context.Context) *toolCall {
	if ob, _ := ctx.Value(observedKey{}).(*observed); ob != nil && ob.call != nil {
		return ob.call
	}
	c, _ := ctx.Value(toolCallKey{}).(*toolCall)
	return c
}

// observer is the gateway's mcp.Observer.
type observer struct{ g *Gateway }

// observed is one request under observation; for a tools/call, call points
// at note, allocated with it.
type observed struct {
	span telemetry.Span
	call *toolCall
	note toolCall
}

type observedKey struct{}

// Begin tells the HTTP instrument which method the request was (a legacy
// request names it only in its body) and starts its observation, in the
// instrument's allocation when it has one free.
func (o observer) Begin(ctx context.Context, r *mcp.RequestInfo) context.Context {
	var ob *observed
	if in, ok := ctx.Value(instrumentedKey{}).(*instrumented); ok {
		in.method = r.Method
		if !in.used {
			in.used = true
			ob = &in.observed
		}
	}
	if ob == nil {
		ob = &observed{}
	}
	ctx, ob.span = o.g.ops.tracer.StartRequest(ctx, telemetry.Request{
		Method: r.Method, ID: string(r.ID), ProtocolVersion: r.ProtocolVersion, Target: r.Name,
		Stdio: r.Transport == "stdio",
		Meta:  telemetry.Meta{Traceparent: r.Trace.TraceParent, Tracestate: r.Trace.TraceState, Baggage: r.Trace.Baggage},
	})
	if r.Method == "tools/call" {
		ob.note.tool = r.Name
		ob.call = &ob.note
	}
	return context.WithValue(ctx, observedKey{}, ob)
}

func (o observer) End(ctx context.Context, r *mcp.RequestInfo, out mcp.Outcome) {
	ob, _ := ctx.Value(observedKey{}).(*observed)
	if ob == nil {
		return
	}
	ob.span.End(telemetry.Outcome{RPCCode: out.ErrorCode, ToolError: out.ToolError, InputRequired: out.ResultType == "input_required"})
	if c := ob.call; c != nil {
		o.g.endToolCall(ctx, c, r, out)
	}
}

// Outcomes of a tools/call, as metrics and logs name them.
const (
	outcomeOK       = "ok"
	outcomeToolErr  = "tool_error"     // isError: the upstream refused, invalid arguments, …
	outcomeRefused  = "refused"        // a policy or a quota refused it
	outcomeConfirm  = "input_required" // paused to ask the user (a confirmation, a connection)
	outcomeTask     = "task"           // answered with a task handle
	outcomeRPCError = "error"          // a JSON-RPC error
)

func outcomeOf(c *toolCall, out mcp.Outcome) string {
	switch {
	case out.ErrorCode != 0:
		return outcomeRPCError
	case out.ResultType == "input_required":
		return outcomeConfirm
	case out.ResultType == "task":
		return outcomeTask
	case c.refused != "":
		return outcomeRefused
	case out.ToolError:
		return outcomeToolErr
	}
	return outcomeOK
}

// endToolCall counts, logs and audits one finished tools/call.
func (g *Gateway) endToolCall(ctx context.Context, c *toolCall, r *mcp.RequestInfo, out mcp.Outcome) {
	outcome := outcomeOf(c, out)
	label := c.tool
	if !g.current().known(label) {
		label = "unknown" // a name no tool has must not become a label
	}
	g.metrics.toolCall(label, outcome, out.Duration)
	p := mcp.PrincipalFrom(ctx)
	if g.logger.Enabled(ctx, slog.LevelInfo) { // else the caller's name need not be hashed
		attrs := []slog.Attr{
			slog.String("tool", c.tool), slog.String("api", c.api), slog.String("outcome", outcome),
			slog.Int("upstream_status", c.status), slog.Duration("duration", out.Duration.Round(time.Microsecond)),
			slog.String("caller", g.callers.logName(p.Subject)),
		}
		if id := telemetry.TraceID(ctx); id != "" { // the audit record names it too
			attrs = append(attrs, slog.String("trace_id", id))
		}
		g.logger.LogAttrs(ctx, slog.LevelInfo, "tool call", attrs...)
	}
	if g.ops.audit == nil {
		return
	}
	e := c.entry
	if e == nil { // refused before a step knew the tool (unknown tool, bad params)
		e = g.ops.audit.Start(audit.Call{Subject: p.Subject, Tool: c.tool, TraceID: telemetry.TraceID(ctx)})
	}
	if c.asked {
		e.Confirm("confirm the call", c.answer)
	}
	if c.refused != "" {
		e.Refuse(c.refused)
	}
	res := audit.Result{IsError: out.ToolError, InputRequired: out.ResultType == "input_required", Task: out.ResultType == "task"}
	if out.ErrorCode != 0 {
		res.RPCError = &audit.RPCErr{Code: out.ErrorCode}
	}
	e.Finish(res)
}

// statusRecorder notes each upstream response's status in the call's note
// (for the log line and the audit record).
type statusRecorder struct{ next http.RoundTripper }

func (t statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if c := callOf(req.Context()); c != nil && resp != nil {
		c.status = resp.StatusCode
		c.entry.Upstream(resp.StatusCode)
	}
	return resp, err
}
