package gateway

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcpgate/mcpgate/mcp"
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
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_requests_total", Help: "MCP requests by JSON-RPC method (Mcp-Method header) and HTTP status.",
		}, []string{"method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mcpgate_request_duration_seconds", Help: "Time to answer an MCP request (a stream's whole life for listen).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"method"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_tool_calls_total", Help: `Tool calls by tool and outcome: "ok", "tool_error" (isError: upstream errors, invalid arguments) or "error" (a protocol error).`,
		}, []string{"tool", "outcome"}),
		toolTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mcpgate_tool_call_duration_seconds", Help: "Time of a tool call, the upstream round trip included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"tool"}),
	}
	m.registry.MustRegister(m.requests, m.latency, m.toolCalls, m.toolTime,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// handler serves the metrics.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// instrument counts the requests reaching the MCP endpoint. The method
// label is the Mcp-Method header only when known says the server answers
// that method: a client must not be able to mint label values (each one
// is a time series kept forever).
func (m *metrics) instrument(next http.Handler, known func(method string) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		method := r.Header.Get(mcp.HeaderMethod)
		if method == "" || !known(method) {
			method = "other" // legacy requests, notifications, unknown methods, malformed input
		}
		m.requests.WithLabelValues(method, strconv.Itoa(sw.status)).Inc()
		m.latency.WithLabelValues(method).Observe(time.Since(start).Seconds())
	})
}

// tool counts the calls of one tool.
func (m *metrics) tool(name string, next mcp.ToolHandler) mcp.ToolHandler {
	ok, toolErr, protoErr := m.toolCalls.WithLabelValues(name, "ok"), m.toolCalls.WithLabelValues(name, "tool_error"), m.toolCalls.WithLabelValues(name, "error")
	hist := m.toolTime.WithLabelValues(name)
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		res, err := next(ctx, req)
		switch {
		case err != nil:
			protoErr.Inc() // pauses for input (MRTR) included
		case res != nil && res.IsError:
			toolErr.Inc()
		default:
			ok.Inc()
		}
		hist.Observe(time.Since(start).Seconds())
		return res, err
	}
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
