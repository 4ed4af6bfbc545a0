package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// discard is an exporter that drops spans (the cost of tracing on without
// the network).
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

const benchTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// BenchmarkToolCallHop drives a tools/call-shaped request through a
// gateway-like HTTP endpoint to an upstream, both on loopback: "absent" has
// no telemetry at all, "off" every wrapper and span call with tracing off
// (a nil Tracer), "on" the same with tracing on (spans exported to a
// discarding exporter through the batch processor). Compare off and on to
// absent within one run.
func BenchmarkToolCallHop(b *testing.B) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":2,"name":"rex"}`)
	}))
	defer upstream.Close()
	on, err := New(context.Background(), Config{Exporter: discard{}, Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	defer on.Shutdown(context.Background())
	var off *Tracer
	for _, bc := range []struct {
		name  string
		tr    *Tracer
		spans bool
	}{
		{"absent", nil, false},
		{"off", off, true},
		{"on", on, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			base := &http.Transport{MaxIdleConnsPerHost: 8}
			defer base.CloseIdleConnections()
			client := &http.Client{Transport: base}
			if bc.spans {
				client.Transport = bc.tr.Transport(base)
			}
			var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx := r.Context()
				var req, tool Span
				if bc.spans {
					ctx, req = bc.tr.StartRequest(ctx, Request{Method: "tools/call", ID: "1", ProtocolVersion: "2026-07-28", Target: "getPet", Meta: Meta{Traceparent: benchTraceparent}})
					ctx, tool = bc.tr.StartToolCall(ctx, Tool{Name: "getPet", API: "petstore", Method: "GET", Path: "/pets/{petId}"})
				}
				up, _ := http.NewRequestWithContext(ctx, "GET", upstream.URL+"/pets/2", nil)
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
			if bc.spans {
				h = bc.tr.Handler(h)
			}
			gw := httptest.NewServer(h)
			defer gw.Close()
			front := &http.Transport{MaxIdleConnsPerHost: 8}
			defer front.CloseIdleConnections()
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getPet","arguments":{"petId":2}}}`
			b.ReportAllocs()
			for b.Loop() {
				resp, err := front.RoundTrip(mustRequest(b, gw.URL, body))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
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
