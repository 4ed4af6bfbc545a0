package gateway

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestStoreSpans: with tracing on, the task store's operations are client
// spans in the trace of the call that made them (db.system.name sqlite),
// and the runner's background scans start no trace of their own.
func TestStoreSpans(t *testing.T) {
	exp := keptSpans{tracetest.NewInMemoryExporter()}
	cfg, err := Config{Demo: true, Store: "sqlite:" + filepath.Join(t.TempDir(), "t.db")}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	g := newGateway(cfg, discardLogger())
	g.ops.exporter = exp
	if err := g.build(t.Context()); err != nil {
		g.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	stop := g.startRunner(ctx)
	defer func() { cancel(); stop() }()

	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	c := taskClient(g, "demo-token")
	resp, err := c.Do(context.Background(), "tools/call", map[string]any{"name": "createReport", "arguments": map[string]any{"kind": "inventory"},
		"_meta": map[string]any{"traceparent": "00-" + trace + "-00f067aa0ba902b7-01"}})
	if err != nil || resp.Error != nil || !strings.Contains(string(resp.Result), `"taskId"`) {
		t.Fatalf("createReport: %v %+v %s", err, resp.Error, resp.Result)
	}
	if err := g.ops.tracer.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var create bool
	for _, s := range exp.GetSpans() {
		var system string
		for _, a := range s.Attributes {
			if a.Key == "db.system.name" {
				system = a.Value.AsString()
			}
		}
		if system == "" {
			continue
		}
		if !s.Parent.IsValid() {
			t.Errorf("store span %q starts a trace of its own", s.Name)
		}
		if s.Name == "create tasks" && s.SpanContext.TraceID().String() == trace && system == "sqlite" {
			create = true
		}
	}
	if !create {
		t.Errorf("no \"create tasks\" span in the call's trace among %d spans", len(exp.GetSpans()))
	}
}

// keptSpans keeps its spans when the tracer shuts down (the in-memory
// exporter forgets them then).
type keptSpans struct{ *tracetest.InMemoryExporter }

func (keptSpans) Shutdown(context.Context) error { return nil }
