// Package telemetry traces mcpgate with OpenTelemetry: spans for the MCP
// request, the tool call, the upstream HTTP round trip, MRTR rounds, task
// runs and store operations, exported over OTLP/HTTP and configured by the
// standard OTEL_* environment variables.
//
// Tracing is on when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, or when [Config].Tracing asks
// for it (the exporter then sends to its default, http://localhost:4318);
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off whatever
// else is set. The exporter reads the other OTEL_EXPORTER_OTLP_* variables
// (headers, timeout, compression, certificates), the SDK OTEL_TRACES_SAMPLER
// and OTEL_BSP_*, the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
//
// Trace context comes from the request's _meta (traceparent, tracestate,
// baggage: the keys MCP reserves for it) or else from the HTTP headers
// ([Tracer.Handler]), and goes on to the upstream in W3C headers
// ([Tracer.Transport], an otelhttp transport). When both are present the
// MCP request span continues the _meta trace and links the HTTP span.
//
// Span names and attributes follow the OpenTelemetry semantic conventions
// (semconv v1.41): MCP (mcp.method.name, mcp.protocol.version,
// mcp.session.id, mcp.resource.uri, jsonrpc.request.id, gen_ai.tool.name,
// gen_ai.operation.name = execute_tool, rpc.response.status_code and
// error.type = the JSON-RPC code or tool_error), HTTP (otelhttp) and
// database (db.system.name, db.operation.name, db.collection.name).
// Attributes of this gateway's own are prefixed mcpgate.
//
// Invariants:
//
//   - Off costs nothing measurable: a nil *Tracer is the off state, every
//     method is a nil check, Handler and Transport return what they are
//     given, and a zero [Span] ends as a no-op.
//   - No secret leaves in a span: the query values and user info of every
//     URL attribute (url.full, url.query) are redacted before a span is
//     exported, and no header is recorded. Tool arguments are never
//     recorded.
//   - No package-level mutable state: the tracer provider and propagator
//     belong to the Tracer; the OpenTelemetry globals are left alone.
package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation is the instrumentation scope of mcpgate's spans.
const instrumentation = "github.com/mcpgate/mcpgate/telemetry"

// Config configures [New].
type Config struct {
	// Tracing turns tracing on without an OTEL_EXPORTER_OTLP_*ENDPOINT
	// (the exporter's default endpoint is then used). The OTEL_SDK_DISABLED
	// and OTEL_TRACES_EXPORTER=none switches still win.
	Tracing bool
	// ServiceName is service.name unless OTEL_SERVICE_NAME sets it
	// (default "mcpgate").
	ServiceName    string
	ServiceVersion string
	// Replica is service.instance.id (for example the host name).
	Replica string
	// Exporter replaces the OTLP/HTTP exporter (tests, benchmarks, other
	// backends). Tracing is then on unless switched off by the environment.
	Exporter sdktrace.SpanExporter
	// Getenv reads the environment (default os.Getenv). The OTLP exporter
	// itself always reads the process environment.
	Getenv func(string) string
}

// Tracer makes mcpgate's spans. A nil *Tracer is tracing off. It is safe
// for concurrent use.
type Tracer struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

// Enabled decides from cfg and the environment whether tracing is on; an
// unsupported exporter or protocol is an error naming the variable.
func Enabled(cfg Config) (bool, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false, nil
	case "", "otlp":
	default:
		return false, fmt.Errorf("telemetry: OTEL_TRACES_EXPORTER=%s: only otlp (or none) is supported", exp)
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		switch p := strings.TrimSpace(getenv(v)); p {
		case "", "http/protobuf":
		default:
			return false, fmt.Errorf("telemetry: %s=%s: only http/protobuf is supported", v, p)
		}
	}
	return cfg.Tracing || cfg.Exporter != nil ||
		getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
}

// New builds the tracer, or returns nil (tracing off) when [Enabled] says
// so. Shut it down to flush the last spans.
func New(ctx context.Context, cfg Config) (*Tracer, error) {
	on, err := Enabled(cfg)
	if err != nil || !on {
		return nil, err
	}
	exp := cfg.Exporter
	if exp == nil {
		if exp, err = otlptracehttp.New(ctx); err != nil {
			return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
		}
	}
	name := cfg.ServiceName
	if name == "" {
		name = "mcpgate"
	}
	ours := resource.NewSchemaless(semconv.ServiceName(name))
	if cfg.ServiceVersion != "" {
		ours, _ = resource.Merge(ours, resource.NewSchemaless(semconv.ServiceVersion(cfg.ServiceVersion)))
	}
	if cfg.Replica != "" {
		ours, _ = resource.Merge(ours, resource.NewSchemaless(semconv.ServiceInstanceID(cfg.Replica)))
	}
	fromEnv, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource from OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	res, err := resource.Merge(ours, fromEnv) // the environment wins
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithBatcher(redactingExporter{exp}),
	)
	return &Tracer{
		tp:     tp,
		tracer: tp.Tracer(instrumentation),
		prop:   propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}, nil
}

// Shutdown flushes the spans not yet exported and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: shutdown: %w", err)
	}
	return nil
}

// Handler wraps the MCP HTTP endpoint: it continues the trace of the HTTP
// headers (traceparent, tracestate, baggage) in an HTTP server span, the
// parent of the MCP request span unless _meta names another. Off, it
// returns h.
func (t *Tracer) Handler(h http.Handler) http.Handler {
	if t == nil {
		return h
	}
	return otelhttp.NewHandler(h, "mcp",
		otelhttp.WithTracerProvider(t.tp),
		otelhttp.WithPropagators(t.prop),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }))
}

// Transport wraps the upstream RoundTripper: each request gets an HTTP
// client span (a child of the tool call span in its context) and carries
// the trace context to the upstream in W3C headers. Off, it returns rt.
func (t *Tracer) Transport(rt http.RoundTripper) http.RoundTripper {
	if t == nil {
		return rt
	}
	return otelhttp.NewTransport(rt,
		otelhttp.WithTracerProvider(t.tp),
		otelhttp.WithPropagators(t.prop),
		// The HTTP conventions' name without a route template: the method.
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }))
}

// Traceparent is the W3C traceparent of the span in ctx ("" without one):
// what to keep with a task to link its run to the request that created it.
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// TraceID is the trace id of the span in ctx, in hex ("" without one), for
// an audit record.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}
