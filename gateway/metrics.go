package gateway

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpgate/mcpgate/mcp"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the gateway's Prometheus metrics, in a registry of its own
// (served at GET /metrics). Tool names are labels: they are public in
// tools/list anyway.
type metrics struct {
	registry  *prometheus.Registry
	requests  *prometheus.CounterVec   // by MCP method and HTTP status
	latency   *prometheus.HistogramVec // by MCP method
	toolCalls *prometheus.CounterVec   // by tool and outcome
	toolTime  *prometheus.HistogramVec // by tool
	reloads   *prometheus.CounterVec   // by result and class
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_requests_total", Help: "MCP requests over HTTP by JSON-RPC method (of both protocol eras; \"other\" for methods the server does not answer, notifications and malformed input) and HTTP status.",
		}, []string{"method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mcpgate_request_duration_seconds", Help: "Time to answer an MCP request (a stream's whole life for listen).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"method"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_tool_calls_total", Help: `Tool calls by tool and outcome: "ok", "tool_error" (isError: upstream errors, invalid arguments), "refused" (a policy or a quota), "input_required" (paused to ask the user, e.g. to confirm), "task" (answered with a task) or "error" (a JSON-RPC error). A tool name no tool has is counted as "unknown".`,
		}, []string{"tool", "outcome"}),
		toolTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mcpgate_tool_call_duration_seconds", Help: "Time of a tool call, the upstream round trip included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"tool"}),
	}
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpgate_reloads_total", Help: `Reloads of the APIs' documents by result ("applied", "refused" by the reload mode, "failed": the old tools keep serving, "unchanged") and class of change (breaking, additive, cosmetic).`,
	}, []string{"result", "class"})
	m.registry.MustRegister(m.requests, m.latency, m.toolCalls, m.toolTime, m.reloads,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// watchAudit exports what the audit recorder could not keep: records
// dropped because its buffer was full, and records its sink refused.
func (m *metrics) watchAudit(r *audit.Recorder) {
	m.registry.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "mcpgate_audit_records_dropped_total", Help: "Audit records dropped because the recorder's buffer was full (the sink is too slow, or one caller flooded its share).",
		}, func() float64 { return float64(r.Dropped()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "mcpgate_audit_records_failed_total", Help: "Audit records the sink refused to write (each failure is also logged).",
		}, func() float64 { return float64(r.Failed()) }))
}

// handler serves the metrics.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// instrument counts the requests reaching the MCP endpoint. The method
// is the one the observer saw (so a 2025-11-25 request, which names it only
// in its body, is counted by method too), and a label only when known says
// the server answers that method: a client must not be able to mint label
// values (each one is a time series kept forever). When principal is set,
// the caller it names (from the bearer token) goes into the same derived
// request: one copy of the request per call, not one per middleware.
func (m *metrics) instrument(next http.Handler, known func(method string) bool, principal func(*http.Request) (mcp.Principal, bool)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		in := &instrumented{Context: r.Context(), statusWriter: statusWriter{ResponseWriter: w, status: http.StatusOK}}
		var ctx context.Context = in
		if principal != nil {
			if p, ok := principal(r); ok {
				ctx = mcp.WithPrincipal(ctx, p)
			}
		}
		next.ServeHTTP(&in.statusWriter, r.WithContext(ctx))
		method := in.method
		if method == "" || !known(method) {
			method = "other"
		}
		m.requests.WithLabelValues(method, statusLabel(in.status)).Inc()
		m.latency.WithLabelValues(method).Observe(time.Since(start).Seconds())
	})
}

// toolCall counts one finished tools/call; tool is a name the tool set
// has, or "unknown".
func (m *metrics) toolCall(tool, outcome string, d time.Duration) {
	m.toolCalls.WithLabelValues(tool, outcome).Inc()
	m.toolTime.WithLabelValues(tool).Observe(d.Seconds())
}

// instrumented is what the instrument keeps for one HTTP request, in one
// allocation: the writer that records the status, the method the observer
// saw, and the observer's first observation (a request carries one
// JSON-RPC message; any other is observed apart). It is also the request's
// context, the request's own with itself as the value of instrumentedKey
// (as context.WithValue would make it, without another allocation).
type instrumented struct {
	context.Context
	statusWriter
	method   string
	observed observed
	used     bool // observed is taken
}

type instrumentedKey struct{}

func (in *instrumented) Value(key any) any {
	if key == (instrumentedKey{}) {
		return in
	}
	return in.Context.Value(key)
}

// statusLabel is the status as a label value, without formatting the
// statuses an MCP endpoint answers with.
func statusLabel(code int) string {
	switch code {
	case http.StatusOK:
		return "200"
	case http.StatusAccepted:
		return "202"
	case http.StatusBadRequest:
		return "400"
	case http.StatusUnauthorized:
		return "401"
	case http.StatusForbidden:
		return "403"
	case http.StatusNotFound:
		return "404"
	}
	return strconv.Itoa(code)
}

// statusWriter records the status a handler wrote. It keeps Flush working
// for SSE streams through Unwrap (http.ResponseController).
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// reload counts one reload.
func (m *metrics) reload(result, class string) { m.reloads.WithLabelValues(result, class).Inc() }
