package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Tracing through the real binary (issue 18): an OTLP/HTTP receiver in the
// test decodes what the gateway's exporter sends, a recording upstream
// shows the trace context the gateway propagated.

// otlpSink is an OTLP/HTTP trace receiver: every export is decoded with the
// OTLP protobuf types and its spans kept.
type otlpSink struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	exports int
	got     chan struct{} // a token after each export (capacity 1)
	errs    []string      // malformed exports
}

func newOTLPSink(t *testing.T) *otlpSink {
	s := &otlpSink{got: make(chan struct{}, 1)}
	s.Server = httptest.NewServer(http.HandlerFunc(s.export))
	t.Cleanup(s.Close)
	return s
}

func (s *otlpSink) export(w http.ResponseWriter, r *http.Request) {
	spans, err := decodeExport(r)
	s.mu.Lock()
	if err != nil {
		s.errs = append(s.errs, err.Error())
	}
	s.spans = append(s.spans, spans...)
	s.exports++
	s.mu.Unlock()
	select {
	case s.got <- struct{}{}:
	default:
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// decodeExport reads one OTLP/HTTP protobuf export request.
func decodeExport(r *http.Request) ([]*tracepb.Span, error) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		return nil, &exportError{"export to " + r.URL.Path + " as " + r.Header.Get("Content-Type")}
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &msg); err != nil {
		return nil, err
	}
	var spans []*tracepb.Span
	for _, rs := range msg.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			spans = append(spans, ss.Spans...)
		}
	}
	return spans, nil
}

type exportError struct{ msg string }

func (e *exportError) Error() string { return e.msg }

// inTrace returns the spans received so far in trace id (hex).
func (s *otlpSink) inTrace(id string) []*tracepb.Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*tracepb.Span
	for _, sp := range s.spans {
		if hex.EncodeToString(sp.TraceId) == id {
			out = append(out, sp)
		}
	}
	return out
}

// waitTrace waits until the spans named by names have all arrived in trace
// id, and returns them by name.
func (s *otlpSink) waitTrace(t *testing.T, id string, names ...string) map[string]*tracepb.Span {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		got := map[string]*tracepb.Span{}
		for _, sp := range s.inTrace(id) {
			got[sp.Name] = sp
		}
		missing := 0
		for _, n := range names {
			if got[n] == nil {
				missing++
			}
		}
		if missing == 0 {
			return got
		}
		select {
		case <-s.got:
		case <-deadline.C:
			t.Fatalf("trace %s: after 20s the receiver has %d spans of it (%v), want %v", id, len(got), spanNames(got), names)
		}
	}
}

func spanNames(m map[string]*tracepb.Span) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	return out
}

func (s *otlpSink) received() (exports, spans int, errs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exports, len(s.spans), append([]string(nil), s.errs...)
}

// otlpEnv points the gateway's exporter at the sink and exports every
// 100 ms (instead of the SDK's 5 s).
func otlpEnv(sink *otlpSink, more ...string) []string {
	return append([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.URL, "OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_SERVICE_NAME=mcpgate-e2e"}, more...)
}

// headerTransport adds fixed headers to every request the client sends.
type headerTransport struct {
	h    http.Header
	next http.RoundTripper
}

func (ht headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range ht.h {
		r.Header[k] = v
	}
	return ht.next.RoundTrip(r)
}

// The MCP request span, the tool span and the upstream span of getItem.
var itemSpans = []string{"tools/call getItem", "execute_tool getItem", "GET"}

// checkChain checks that the three spans are one chain under parent (hex;
// "" to skip the first link) and that the upstream received the trace.
func checkChain(t *testing.T, spans map[string]*tracepb.Span, parent string, rec *recorder, trace string) {
	t.Helper()
	id := func(b []byte) string { return hex.EncodeToString(b) }
	req, tool, up := spans[itemSpans[0]], spans[itemSpans[1]], spans[itemSpans[2]]
	if parent != "" && id(req.ParentSpanId) != parent {
		t.Errorf("the MCP request span's parent is %s, want the client's span %s", id(req.ParentSpanId), parent)
	}
	if id(tool.ParentSpanId) != id(req.SpanId) || id(up.ParentSpanId) != id(tool.SpanId) {
		t.Errorf("not one chain: request %s; tool %s under %s; upstream %s under %s",
			id(req.SpanId), id(tool.SpanId), id(tool.ParentSpanId), id(up.SpanId), id(up.ParentSpanId))
	}
	if req.Kind != tracepb.Span_SPAN_KIND_SERVER || up.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("span kinds: request %v, upstream %v", req.Kind, up.Kind)
	}
	got := rec.last(t, "/items/").Header.Get("Traceparent")
	parts := strings.Split(got, "-")
	if len(parts) != 4 || parts[1] != trace {
		t.Fatalf("the upstream received traceparent %q, want trace %s", got, trace)
	}
	if parts[2] != id(up.SpanId) {
		t.Errorf("the upstream's parent span is %s, want the upstream client span %s", parts[2], id(up.SpanId))
	}
}

// TestTracingMeta: the client sends its trace context in _meta only; the
// receiver gets the MCP request span (a child of the client's span), the
// tool span and the upstream span in the client's trace, the upstream
// receives that trace id, and the call's audit record names it.
func TestTracingMeta(t *testing.T) {
	sink, rec := newOTLPSink(t), newRecorder(t)
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	g := startRecorded(t, rec, otlpEnv(sink), "--audit-sink", "file:"+file)
	cs := connectHTTP(t, g.URL, connectOptions{Bearer: clientBearer})
	const trace, parent = "5b8aa5a2d2c872e8321cf37308d69df2", "051581bf3cb55c13"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "getItem", Arguments: map[string]any{"id": "t1"},
		Meta: sdk.Meta{"traceparent": "00-" + trace + "-" + parent + "-01"}})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, "getItem", res)
	spans := sink.waitTrace(t, trace, itemSpans...)
	checkChain(t, spans, parent, rec, trace)
	if a := attrOf(spans["tools/call getItem"], "gen_ai.tool.name"); a != "getItem" {
		t.Errorf("gen_ai.tool.name = %q", a)
	}
	if _, _, errs := sink.received(); len(errs) > 0 {
		t.Errorf("malformed exports: %v", errs)
	}
	g.stop(t)
	recs := auditCLI(t, "--file", file)
	if len(recs) != 1 || recs[0].TraceID != trace {
		t.Errorf("audit records %+v: want one, in trace %s", recs, trace)
	}
	// The call's log line names the trace too, so logs, audit and spans meet.
	if !regexp.MustCompile(`msg="tool call" .*trace_id=` + trace).MatchString(g.Log.String()) {
		t.Errorf("the tool call's log line does not name trace %s:\n%s", trace, g.Log)
	}
}

// TestTracingHeaders: the trace context comes in the HTTP headers only
// (traceparent on the POST); the same chain results.
func TestTracingHeaders(t *testing.T) {
	sink, rec := newOTLPSink(t), newRecorder(t)
	g := startRecorded(t, rec, otlpEnv(sink))
	const trace, parent = "a3ce929d0e0e47364bf92f3577b34da6", "00f067aa0ba902b7"
	h := http.Header{"Traceparent": {"00-" + trace + "-" + parent + "-01"}}
	cs := connectHTTP(t, g.URL, connectOptions{Bearer: clientBearer, Wrap: func(rt http.RoundTripper) http.RoundTripper {
		return headerTransport{h, rt}
	}})
	wantOK(t, "getItem", call(t, cs, "getItem", map[string]any{"id": "t2"}))
	spans := sink.waitTrace(t, trace, itemSpans...)
	// The HTTP server span continues the header's context; the MCP
	// request span is its child.
	checkChain(t, spans, "", rec, trace)
	var httpSpan *tracepb.Span
	for _, sp := range sink.inTrace(trace) {
		if hex.EncodeToString(sp.ParentSpanId) == parent {
			httpSpan = sp
		}
	}
	if httpSpan == nil || !bytes.Equal(spans["tools/call getItem"].ParentSpanId, httpSpan.SpanId) {
		t.Errorf("the MCP request span is not under the HTTP span that continues the header's context (%v)", httpSpan)
	}
}

// TestTracingDisabled: OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none
// wins over the endpoint and --tracing: calls succeed, no trace context
// goes upstream, nothing is exported (the gateway flushes its spans when
// it stops, so stopping it first makes the check final).
func TestTracingDisabled(t *testing.T) {
	for _, off := range []string{"OTEL_SDK_DISABLED=true", "OTEL_TRACES_EXPORTER=none"} {
		t.Run(off, func(t *testing.T) {
			sink, rec := newOTLPSink(t), newRecorder(t)
			g := startRecorded(t, rec, otlpEnv(sink, off), "--tracing")
			cs := connectHTTP(t, g.URL, connectOptions{Bearer: clientBearer})
			wantOK(t, "getItem", call(t, cs, "getItem", map[string]any{"id": "t3"}))
			if tp := rec.last(t, "/items/").Header.Get("Traceparent"); tp != "" {
				t.Errorf("tracing off, yet the upstream received traceparent %q", tp)
			}
			g.stop(t)
			if exports, spans, _ := sink.received(); exports != 0 || spans != 0 {
				t.Fatalf("tracing off, yet the receiver got %d exports (%d spans)", exports, spans)
			}
		})
	}
}

func attrOf(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}
