package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// discard is an exporter that drops spans (the cost of tracing on without
// the network).
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

const benchTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// hop is a gateway-like MCP endpoint on loopback in front of an upstream:
// it serves a tools/call-shaped request with the telemetry of tr (none at
// all when spans is false) and calls the upstream.
type hop struct {
	gw    *httptest.Server
	front *http.Transport
	close func()
}

func newHop(b *testing.B, upstream string, tr *Tracer, spans bool) *hop {
	base := &http.Transport{MaxIdleConnsPerHost: 8}
	client := &http.Client{Transport: base}
	if spans {
		client.Transport = tr.Transport(base)
	}
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		var req, tool Span
		if spans {
			ctx, req = tr.StartRequest(ctx, Request{Method: "tools/call", ID: "1", ProtocolVersion: "2026-07-28", Target: "getPet", Meta: Meta{Traceparent: benchTraceparent}})
			ctx, tool = tr.StartToolCall(ctx, Tool{Name: "getPet", API: "petstore", Method: "GET", Path: "/pets/{petId}"})
		}
		up, _ := http.NewRequestWithContext(ctx, "GET", upstream+"/pets/2", nil)
		resp, err := client.Do(up)
		if err != nil {
			b.Error(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		tool.End(Outcome{})
		req.End(Outcome{})
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	})
	if spans {
		h = tr.Handler(h)
	}
	gw := httptest.NewServer(h)
	front := &http.Transport{MaxIdleConnsPerHost: 8}
	return &hop{gw: gw, front: front, close: func() {
		front.CloseIdleConnections()
		gw.Close()
		base.CloseIdleConnections()
	}}
}

const hopBody = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getPet","arguments":{"petId":2}}}`

// do makes one request through the hop and returns its wall time.
func (h *hop) do(b *testing.B) time.Duration {
	req := mustRequest(b, h.gw.URL, hopBody)
	start := time.Now()
	resp, err := h.front.RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return time.Since(start)
}

func benchUpstream() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":2,"name":"rex"}`)
	}))
}

func tracerOn(b *testing.B) *Tracer {
	on, err := New(context.Background(), Config{Exporter: discard{}, Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { on.Shutdown(context.Background()) })
	return on
}

// BenchmarkToolCallHop drives a tools/call-shaped request through the hop:
// "absent" has no telemetry at all, "off" every wrapper and span call with
// tracing off (a nil Tracer), "on" the same with tracing on (spans exported
// to a discarding exporter through the batch processor).
func BenchmarkToolCallHop(b *testing.B) {
	upstream := benchUpstream()
	defer upstream.Close()
	on := tracerOn(b)
	for _, bc := range []struct {
		name  string
		tr    *Tracer
		spans bool
	}{{"absent", nil, false}, {"off", nil, true}, {"on", on, true}} {
		b.Run(bc.name, func(b *testing.B) {
			h := newHop(b, upstream.URL, bc.tr, bc.spans)
			defer h.close()
			b.ReportAllocs()
			for b.Loop() {
				h.do(b)
			}
		})
	}
}

// BenchmarkHopRatios alternates the three variants request by request, so
// that the drift of a shared machine hits them alike, and reports the
// ratios of their median times (stalls of a shared machine swamp means):
// off/absent (the cost of tracing off, goal ≤ 1.02) and on/absent.
func BenchmarkHopRatios(b *testing.B) {
	upstream := benchUpstream()
	defer upstream.Close()
	absent, off, on := newHop(b, upstream.URL, nil, false), newHop(b, upstream.URL, nil, true), newHop(b, upstream.URL, tracerOn(b), true)
	defer absent.close()
	defer off.close()
	defer on.close()
	hops := []*hop{absent, off, on}
	times := make([][]time.Duration, len(hops))
	for i := 0; b.Loop(); i++ {
		for j := range hops { // rotate the order: none always goes first
			k := (i + j) % len(hops)
			times[k] = append(times[k], hops[k].do(b))
		}
	}
	ma := float64(median(times[0]))
	b.ReportMetric(float64(median(times[1]))/ma, "off/absent")
	b.ReportMetric(float64(median(times[2]))/ma, "on/absent")
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func mustRequest(b *testing.B, url, body string) *http.Request {
	req, err := http.NewRequest("POST", url+"/mcp", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// BenchmarkSpanCalls measures the telemetry calls of one tools/call alone
// (request span, tool span, wrapper construction excluded), off and on.
func BenchmarkSpanCalls(b *testing.B) {
	on, err := New(context.Background(), Config{Exporter: discard{}, Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	defer on.Shutdown(context.Background())
	for _, bc := range []struct {
		name string
		tr   *Tracer
	}{{"off", nil}, {"on", on}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ctx, req := bc.tr.StartRequest(context.Background(), Request{Method: "tools/call", ID: "1", Target: "getPet", Meta: Meta{Traceparent: benchTraceparent}})
				_, tool := bc.tr.StartToolCall(ctx, Tool{Name: "getPet", API: "petstore"})
				tool.End(Outcome{})
				req.End(Outcome{})
			}
		})
	}
}
