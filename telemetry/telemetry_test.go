package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is an OTLP/HTTP trace receiver: it decodes what the exporter
// sends with the OTLP protobuf types and keeps the spans and raw bodies.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	spans  []*tracepb.Span
	bodies [][]byte
	attrs  map[string]string // resource attributes of the last export
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("export to %s as %q", req.URL.Path, req.Header.Get("Content-Type"))
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				t.Error(err)
				return
			}
			body = zr
		}
		raw, _ := io.ReadAll(body)
		var msg coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &msg); err != nil {
			t.Errorf("undecodable export: %v", err)
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, raw)
		for _, rs := range msg.ResourceSpans {
			r.attrs = map[string]string{}
			for _, kv := range rs.GetResource().GetAttributes() {
				r.attrs[kv.Key] = kv.Value.GetStringValue()
			}
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) byName(name string) *tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.spans {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// gateway is a minimal MCP endpoint wired the way the gateway wires the
// telemetry: Handler around it, StartRequest with the request's _meta,
// StartToolCall around the upstream call through Transport.
func gateway(t *testing.T, tr *Tracer, upstream string) *httptest.Server {
	client := &http.Client{Transport: tr.Transport(http.DefaultTransport)}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string         `json:"name"`
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if err := json.NewDecoder(req.Body).Decode(&msg); err != nil {
			t.Error(err)
			return
		}
		ctx, span := tr.StartRequest(req.Context(), Request{
			Method: msg.Method, ID: string(msg.ID), ProtocolVersion: "2026-07-28", Target: msg.Params.Name, Meta: metaOf(msg.Params.Meta),
		})
		tctx, tool := tr.StartToolCall(ctx, Tool{Name: msg.Params.Name, API: "petstore", Method: "GET", Path: "/pets/{petId}"})
		up, _ := http.NewRequestWithContext(tctx, "GET", upstream+"/pets/2?api_key=SECRET-KEY", nil)
		resp, err := client.Do(up)
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
		tool.End(Outcome{ToolError: resp.StatusCode >= 400})
		span.End(Outcome{ToolError: resp.StatusCode >= 400})
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	})
	srv := httptest.NewServer(tr.Handler(h))
	t.Cleanup(srv.Close)
	return srv
}

// metaOf reads the reserved trace keys of a decoded _meta.
func metaOf(m map[string]any) Meta {
	s := func(k string) string { v, _ := m[k].(string); return v }
	return Meta{Traceparent: s("traceparent"), Tracestate: s("tracestate"), Baggage: s("baggage")}
}

// TestTraceChainToUpstream: a client sends traceparent in _meta; the
// exported spans form one chain under it (MCP request → tool call →
// upstream client span), the upstream receives the same trace id, and no
// span carries the upstream API key.
func TestTraceChainToUpstream(t *testing.T) {
	rcv := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_SERVICE_NAME", "")

	var gotTraceparent []string
	var mu sync.Mutex
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotTraceparent = append(gotTraceparent, r.Header.Get("traceparent"))
		mu.Unlock()
		w.Write([]byte(`{"id":2}`))
	}))
	defer upstream.Close()

	tr, err := New(context.Background(), Config{ServiceVersion: "1.2.3", Replica: "r1"})
	if err != nil || tr == nil {
		t.Fatalf("New: %v, %v", tr, err)
	}
	gw := gateway(t, tr, upstream.URL)

	const clientTrace, clientSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	headerTrace := "4bf92f3577b34da6a3ce929d0e0e4736"
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"getPet","arguments":{"petId":2},
		"_meta":{"traceparent":"00-` + clientTrace + `-` + clientSpan + `-01","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	req, _ := http.NewRequest("POST", gw.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("traceparent", "00-"+headerTrace+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	if len(gotTraceparent) != 1 || !strings.HasPrefix(gotTraceparent[0], "00-"+clientTrace+"-") {
		t.Fatalf("upstream got traceparent %q, want trace %s", gotTraceparent, clientTrace)
	}
	mcpSpan, toolSpan, upSpan, httpSpan := rcv.byName("tools/call getPet"), rcv.byName("execute_tool getPet"), rcv.byName("GET"), rcv.byName("POST /mcp")
	if mcpSpan == nil || toolSpan == nil || upSpan == nil || httpSpan == nil {
		t.Fatalf("missing spans: mcp %v tool %v upstream %v http %v", mcpSpan != nil, toolSpan != nil, upSpan != nil, httpSpan != nil)
	}
	hexID := func(b []byte) string { return hex.EncodeToString(b) }
	for _, s := range []*tracepb.Span{mcpSpan, toolSpan, upSpan} {
		if hexID(s.TraceId) != clientTrace {
			t.Errorf("span %q in trace %s, want %s", s.Name, hexID(s.TraceId), clientTrace)
		}
	}
	if hexID(mcpSpan.ParentSpanId) != clientSpan || hexID(toolSpan.ParentSpanId) != hexID(mcpSpan.SpanId) ||
		hexID(upSpan.ParentSpanId) != hexID(toolSpan.SpanId) {
		t.Errorf("not one chain: mcp parent %s, tool parent %s (mcp %s), upstream parent %s (tool %s)",
			hexID(mcpSpan.ParentSpanId), hexID(toolSpan.ParentSpanId), hexID(mcpSpan.SpanId), hexID(upSpan.ParentSpanId), hexID(toolSpan.SpanId))
	}
	if !strings.HasSuffix(gotTraceparent[0], "-"+hexID(upSpan.SpanId)+"-01") {
		t.Errorf("upstream parent %s is not the client span %s", gotTraceparent[0], hexID(upSpan.SpanId))
	}
	// The HTTP span continues the header trace and is linked from the MCP span.
	if hexID(httpSpan.TraceId) != headerTrace || len(mcpSpan.Links) != 1 || hexID(mcpSpan.Links[0].SpanId) != hexID(httpSpan.SpanId) {
		t.Errorf("http span trace %s; mcp links %v", hexID(httpSpan.TraceId), mcpSpan.Links)
	}
	if mcpSpan.Kind != tracepb.Span_SPAN_KIND_SERVER || upSpan.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("kinds: mcp %v upstream %v", mcpSpan.Kind, upSpan.Kind)
	}
	for k, want := range map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "getPet", "gen_ai.operation.name": "execute_tool",
		"mcp.protocol.version": "2026-07-28", "jsonrpc.request.id": "7", "network.transport": "tcp",
	} {
		if got := attr(mcpSpan, k); got != want {
			t.Errorf("mcp span %s = %q, want %q", k, got, want)
		}
	}
	if got := attr(upSpan, "http.request.method"); got != "GET" {
		t.Errorf("upstream span http.request.method = %q", got)
	}
	if got := attr(upSpan, "url.full"); !strings.HasSuffix(got, "/pets/2?api_key=REDACTED") {
		t.Errorf("upstream span url.full = %q, want the query value redacted", got)
	}
	for _, b := range rcv.bodies {
		if bytes.Contains(b, []byte("SECRET-KEY")) {
			t.Fatal("an exported span carries the upstream API key")
		}
	}
	if rcv.attrs["service.name"] != "mcpgate" || rcv.attrs["service.version"] != "1.2.3" || rcv.attrs["service.instance.id"] != "r1" {
		t.Errorf("resource %v", rcv.attrs)
	}
}

// TestHeaderTraceContext: without _meta, the HTTP headers' trace goes on to
// the upstream.
func TestHeaderTraceContext(t *testing.T) {
	rcv := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", rcv.URL+"/v1/traces")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_SERVICE_NAME", "from-env")
	var got string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Get("traceparent") }))
	defer upstream.Close()
	tr, err := New(context.Background(), Config{})
	if err != nil || tr == nil {
		t.Fatalf("New: %v, %v", tr, err)
	}
	gw := gateway(t, tr, upstream.URL)
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest("POST", gw.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}`))
	req.Header.Set("traceparent", "00-"+trace+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "00-"+trace+"-") {
		t.Fatalf("upstream traceparent %q, want trace %s", got, trace)
	}
	if s := rcv.byName("tools/call x"); s == nil || hex.EncodeToString(s.TraceId) != trace {
		t.Fatalf("mcp span %v", s)
	}
	if rcv.attrs["service.name"] != "from-env" {
		t.Fatalf("OTEL_SERVICE_NAME did not win: %v", rcv.attrs)
	}
}

func TestEnabled(t *testing.T) {
	tests := []struct {
		env     map[string]string
		tracing bool
		want    bool
		err     string
	}{
		{env: nil, want: false},
		{env: nil, tracing: true, want: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, want: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, want: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, want: false},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "TRUE"}, tracing: true, want: false},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, tracing: true, want: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, tracing: true, err: "OTEL_TRACES_EXPORTER=zipkin"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, tracing: true, err: "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, tracing: true, err: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": "x"}, want: true},
	}
	for _, tt := range tests {
		got, err := Enabled(Config{Tracing: tt.tracing, Getenv: func(k string) string { return tt.env[k] }})
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%v: error %v, want %q", tt.env, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%v tracing=%v: %v, %v; want %v", tt.env, tt.tracing, got, err, tt.want)
		}
	}
}

func TestOffIsNil(t *testing.T) {
	tr, err := New(context.Background(), Config{Getenv: func(string) string { return "" }})
	if err != nil || tr != nil {
		t.Fatalf("off: %v, %v", tr, err)
	}
	h := http.NotFoundHandler()
	rt := http.DefaultTransport
	if tr.Transport(rt) != rt {
		t.Fatal("Transport wrapped when off")
	}
	if _, ok := tr.Handler(h).(http.HandlerFunc); !ok {
		t.Fatal("Handler wrapped when off")
	}
	ctx := context.Background()
	for _, start := range []func() (context.Context, Span){
		func() (context.Context, Span) { return tr.StartRequest(ctx, Request{Method: "tools/call"}) },
		func() (context.Context, Span) { return tr.StartToolCall(ctx, Tool{Name: "x"}) },
		func() (context.Context, Span) { return tr.StartRound(ctx, "x", 1) },
		func() (context.Context, Span) { return tr.StartTaskRun(ctx, TaskRun{ID: "t"}) },
		func() (context.Context, Span) { return tr.StartStore(ctx, Store{System: "sqlite"}) },
	} {
		c, s := start()
		if c != ctx || s != (Span{}) {
			t.Fatal("a span started when off")
		}
		s.End(Outcome{RPCCode: -32602})
	}
	if Traceparent(ctx) != "" || TraceID(ctx) != "" || tr.Shutdown(ctx) != nil {
		t.Fatal("off has a trace")
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:p@api.example.com/v1/pets/2?api_key=abc&x=1#frag": "https://api.example.com/v1/pets/2?api_key=REDACTED&x=REDACTED",
		"http://h/p?flag":     "http://h/p?flag=REDACTED",
		"http://h/p":          "http://h/p",
		"::not a url?token=1": "REDACTED",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
