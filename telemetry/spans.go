package telemetry

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Meta is the trace context a request carries in its _meta.
type Meta struct {
	Traceparent string
	Tracestate  string
	Baggage     string
}

// metaCarrier reads a Meta as a propagation carrier.
type metaCarrier Meta

func (m metaCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return m.Traceparent
	case "tracestate":
		return m.Tracestate
	case "baggage":
		return m.Baggage
	}
	return ""
}

func (metaCarrier) Set(string, string) {}

func (metaCarrier) Keys() []string { return []string{"traceparent", "tracestate", "baggage"} }

// Request describes an MCP request as it starts.
type Request struct {
	Method string // the JSON-RPC method, e.g. tools/call
	// ID is the JSON-RPC id as text ("" for a notification).
	ID              string
	ProtocolVersion string
	// Target is the tool name of a tools/call, the prompt name of a
	// prompts/get ("" otherwise): part of the span name.
	Target      string
	ResourceURI string
	SessionID   string // legacy (2025-11-25) sessions only
	Stdio       bool   // served over stdio rather than HTTP
	Meta        Meta
}

// Span is a span in progress; the zero Span (tracing off) does nothing.
type Span struct{ s trace.Span }

// Outcome is how the traced operation ended.
type Outcome struct {
	Err           error // a failure of the operation itself (transport, store)
	RPCCode       int   // the JSON-RPC error code the request ended with (0: none)
	ToolError     bool  // the tool result had isError
	InputRequired bool  // the handler paused for input (an MRTR round)
}

// End ends the span with its outcome (status, error.type and, for a
// JSON-RPC error, rpc.response.status_code).
func (s Span) End(o Outcome) {
	if s.s == nil {
		return
	}
	switch {
	case o.RPCCode != 0:
		code := strconv.Itoa(o.RPCCode)
		s.s.SetAttributes(semconv.RPCResponseStatusCode(code), semconv.ErrorTypeKey.String(code))
		s.s.SetStatus(codes.Error, "JSON-RPC error "+code)
	case o.Err != nil:
		s.s.RecordError(o.Err)
		s.s.SetAttributes(semconv.ErrorType(o.Err))
		s.s.SetStatus(codes.Error, o.Err.Error())
	case o.ToolError:
		s.s.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
		s.s.SetStatus(codes.Error, "tool error")
	}
	if o.InputRequired {
		s.s.SetAttributes(attribute.Bool("mcpgate.input_required", true))
	}
	s.s.End()
}

// StartRequest starts the server span of an MCP request, named
// "{mcp.method.name} {target}". Its parent is the trace context of the
// request's _meta when that is valid (the HTTP span, if any, is then
// linked), else the span already in ctx (from Handler).
func (t *Tracer) StartRequest(ctx context.Context, r Request) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs, semconv.McpMethodNameKey.String(r.Method), semconv.JSONRPCProtocolVersion("2.0"))
	if r.ID != "" {
		attrs = append(attrs, semconv.JSONRPCRequestID(r.ID))
	}
	if r.ProtocolVersion != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(r.ProtocolVersion))
	}
	if r.SessionID != "" {
		attrs = append(attrs, semconv.McpSessionID(r.SessionID))
	}
	if r.ResourceURI != "" {
		attrs = append(attrs, semconv.McpResourceURI(r.ResourceURI))
	}
	switch r.Method {
	case "tools/call":
		attrs = append(attrs, semconv.GenAIOperationNameExecuteTool)
		if r.Target != "" {
			attrs = append(attrs, semconv.GenAIToolName(r.Target))
		}
	case "prompts/get":
		if r.Target != "" {
			attrs = append(attrs, semconv.GenAIPromptName(r.Target))
		}
	}
	if r.Stdio {
		attrs = append(attrs, semconv.NetworkTransportPipe)
	} else {
		attrs = append(attrs, semconv.NetworkTransportTCP, semconv.NetworkProtocolName("http"))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...)}
	if r.Meta.Traceparent != "" {
		outer := trace.SpanContextFromContext(ctx)
		mctx := t.prop.Extract(ctx, metaCarrier(r.Meta))
		if sc := trace.SpanContextFromContext(mctx); sc.IsValid() && !sc.Equal(outer) {
			ctx = mctx
			if outer.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: outer}))
			}
		}
	}
	name := r.Method
	if r.Target != "" {
		name += " " + r.Target
	}
	ctx, s := t.tracer.Start(ctx, name, opts...)
	return ctx, Span{s}
}

// Tool describes the tool a call runs.
type Tool struct {
	Name   string
	API    string
	Method string // the upstream HTTP method
	Path   string // the upstream path template
}

// StartToolCall starts the span of a tool's execution (the GenAI
// execute_tool span, "execute_tool {name}"), the parent of its upstream
// round trips.
func (t *Tracer) StartToolCall(ctx context.Context, tool Tool) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(tool.Name), semconv.GenAIToolType("function")}
	if tool.API != "" {
		attrs = append(attrs, attribute.String("mcpgate.api", tool.API))
	}
	if tool.Method != "" {
		attrs = append(attrs, attribute.String("mcpgate.upstream.method", tool.Method), attribute.String("mcpgate.upstream.path", tool.Path))
	}
	ctx, s := t.tracer.Start(ctx, "execute_tool "+tool.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, Span{s}
}

// StartRound starts the span of one round of a multi round-trip request:
// round is 0 for the first call, n after n pauses (the verified
// requestState's round). End it with InputRequired when the handler paused
// again.
func (t *Tracer) StartRound(ctx context.Context, tool string, round int) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	ctx, s := t.tracer.Start(ctx, "mrtr.round "+tool, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		semconv.GenAIToolName(tool), attribute.Int("mcpgate.mrtr.round", round)))
	return ctx, Span{s}
}

// TaskRun describes one run of a durable task by a worker.
type TaskRun struct {
	ID   string
	Tool string
	// Attempt counts the runs of this task (1 for the first; more after a
	// take-over).
	Attempt int
	// Traceparent is the creating request's (see [Traceparent]); the run,
	// a trace of its own, links to it.
	Traceparent string
}

// StartTaskRun starts the root span of a task run ("task.run {tool}"),
// linked to the span of the request that created the task.
func (t *Tracer) StartTaskRun(ctx context.Context, r TaskRun) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		attribute.String("mcpgate.task.id", r.ID), semconv.GenAIToolName(r.Tool), attribute.Int("mcpgate.task.attempt", r.Attempt))}
	if r.Traceparent != "" {
		lctx := t.prop.Extract(context.Background(), metaCarrier{Traceparent: r.Traceparent})
		if sc := trace.SpanContextFromContext(lctx); sc.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
		}
	}
	ctx, s := t.tracer.Start(ctx, "task.run "+r.Tool, opts...)
	return ctx, Span{s}
}

// Store describes a store operation.
type Store struct {
	System     string // "postgresql" or "sqlite"
	Operation  string // e.g. "create", "update", "lease"
	Collection string // the table, e.g. "tasks"
}

// StartStore starts the client span of a store operation, named
// "{operation} {collection}".
func (t *Tracer) StartStore(ctx context.Context, op Store) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	ctx, s := t.tracer.Start(ctx, op.Operation+" "+op.Collection, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		semconv.DBSystemNameKey.String(op.System), semconv.DBOperationName(op.Operation), semconv.DBCollectionName(op.Collection)))
	return ctx, Span{s}
}

// redactingExporter strips query values (and user info) from the URL
// attributes of every span before the real exporter sees it: otelhttp
// records url.full with the query, where an upstream API key may travel.
type redactingExporter struct{ next sdktrace.SpanExporter }

func (e redactingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out, copied := spans, false
	for i, s := range spans {
		if attrs, changed := redactAttributes(s.Attributes()); changed {
			if !copied {
				out, copied = append([]sdktrace.ReadOnlySpan(nil), spans...), true
			}
			out[i] = redactedSpan{s, attrs}
		}
	}
	return e.next.ExportSpans(ctx, out)
}

func (e redactingExporter) Shutdown(ctx context.Context) error { return e.next.Shutdown(ctx) }

// redactedSpan is a recorded span with its attributes replaced.
type redactedSpan struct {
	sdktrace.ReadOnlySpan
	attrs []attribute.KeyValue
}

func (s redactedSpan) Attributes() []attribute.KeyValue { return s.attrs }

// redactAttributes returns attrs with URL query values redacted, and
// whether anything changed.
func redactAttributes(attrs []attribute.KeyValue) ([]attribute.KeyValue, bool) {
	var out []attribute.KeyValue
	for i, kv := range attrs {
		var red attribute.KeyValue
		switch kv.Key {
		case semconv.URLFullKey:
			v := kv.Value.AsString()
			if !strings.ContainsAny(v, "?#@") {
				continue
			}
			red = semconv.URLFull(redactURL(v))
		case semconv.URLQueryKey:
			red = semconv.URLQuery(redactQuery(kv.Value.AsString()))
		default:
			continue
		}
		if out == nil {
			out = append([]attribute.KeyValue(nil), attrs...)
		}
		out[i] = red
	}
	return out, out != nil
}

// redactURL keeps the scheme, host and path of u and the names of its query
// parameters; values, user info and the fragment go.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "REDACTED"
	}
	p.User = nil
	p.Fragment, p.RawFragment = "", ""
	p.RawQuery = redactQuery(p.RawQuery)
	return p.String()
}

// redactQuery replaces every parameter value of a raw query by REDACTED.
func redactQuery(q string) string {
	if q == "" {
		return ""
	}
	parts := strings.Split(q, "&")
	for i, kv := range parts {
		name, _, _ := strings.Cut(kv, "=")
		parts[i] = name + "=REDACTED"
	}
	return strings.Join(parts, "&")
}
