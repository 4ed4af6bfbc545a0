package telemetry_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/mcpgate/mcpgate/telemetry"
)

func Example() {
	ctx := context.Background()
	// On when OTEL_EXPORTER_OTLP_ENDPOINT (or …_TRACES_ENDPOINT) is set or
	// Tracing is true; nil (off) otherwise.
	tr, err := telemetry.New(ctx, telemetry.Config{Tracing: true, ServiceVersion: "1.0.0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tr.Shutdown(ctx)

	upstream := &http.Client{Transport: tr.Transport(http.DefaultTransport)} // propagates to the API
	_ = upstream
	handler := tr.Handler(http.NotFoundHandler()) // continues the HTTP headers' trace
	_ = handler

	// Per request: continue the client's trace from _meta.
	ctx, req := tr.StartRequest(ctx, telemetry.Request{
		Method: "tools/call", ID: "1", Target: "getPet",
		Meta: telemetry.Meta{Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
	})
	ctx, tool := tr.StartToolCall(ctx, telemetry.Tool{Name: "getPet", API: "petstore", Method: "GET", Path: "/pets/{petId}"})
	fmt.Println(telemetry.TraceID(ctx))
	tool.End(telemetry.Outcome{})
	req.End(telemetry.Outcome{ToolError: false})
	// Output: 0af7651916cd43dd8448eb211c80319c
}

func ExampleTracer_off() {
	var tr *telemetry.Tracer // tracing off: every call is a nil check
	ctx, span := tr.StartRequest(context.Background(), telemetry.Request{Method: "tools/call"})
	span.End(telemetry.Outcome{RPCCode: -32602})
	fmt.Println(telemetry.TraceID(ctx) == "", tr.Transport(http.DefaultTransport) == http.DefaultTransport)
	// Output: true true
}
