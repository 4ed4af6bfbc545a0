package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcpgate/mcpgate/quota"
)

// The cost of the operators' features on BenchmarkToolCallHTTP's call
// (getPet over HTTP to the demo API). Compare the variants of one
// benchmark side by side in one run, interleaved (see the report's
// commands), never with timings of another run.

// BenchmarkToolCallTracing: tracing absent (the default), switched off
// (tracing: true with OTEL_SDK_DISABLED=true), on but sampling nothing
// (OTEL_TRACES_SAMPLER=always_off), on with an in-memory exporter, and on
// with the real OTLP/HTTP exporter sending to a local receiver.
func BenchmarkToolCallTracing(b *testing.B) {
	b.Run("absent", func(b *testing.B) {
		clearOTelEnv(b)
		benchToolCall(b, newDemoB(b, false))
	})
	b.Run("off", func(b *testing.B) {
		clearOTelEnv(b)
		b.Setenv("OTEL_SDK_DISABLED", "true")
		g := newOpsB(b, Config{Tracing: true}, nil)
		if g.ops.tracer != nil {
			b.Fatal("OTEL_SDK_DISABLED=true left tracing on")
		}
		benchToolCall(b, g)
	})
	b.Run("unsampled", func(b *testing.B) {
		clearOTelEnv(b)
		b.Setenv("OTEL_TRACES_SAMPLER", "always_off")
		exp := &countingExporter{}
		benchToolCall(b, newOpsB(b, Config{}, exp))
		if n := exp.spans.Load(); n != 0 {
			b.Fatalf("always_off exported %d spans", n)
		}
	})
	b.Run("on", func(b *testing.B) {
		clearOTelEnv(b)
		exp := &countingExporter{}
		benchToolCall(b, newOpsB(b, Config{}, exp))
		if exp.spans.Load() == 0 && b.N > 2048 {
			b.Fatal("tracing on exported no span")
		}
	})
	b.Run("otlp", func(b *testing.B) {
		clearOTelEnv(b)
		var bytes atomic.Int64
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, _ := io.Copy(io.Discard, r.Body)
			bytes.Add(n)
		}))
		b.Cleanup(rcv.Close) // after the gateway's Close, which sends the last spans
		b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
		benchToolCall(b, newOpsB(b, Config{}, nil))
		if bytes.Load() == 0 && b.N > 2048 {
			b.Fatal("the OTLP receiver got nothing")
		}
	})
}

// clearOTelEnv unsets (for the benchmark) every variable that could
// switch tracing on or off behind its back.
func clearOTelEnv(b *testing.B) {
	for _, v := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"} {
		b.Setenv(v, "")
	}
}

// countingExporter is an in-memory exporter that counts and drops spans.
type countingExporter struct{ spans atomic.Int64 }

func (e *countingExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.spans.Add(int64(len(spans)))
	return nil
}

func (e *countingExporter) Shutdown(context.Context) error { return nil }

// newOpsB builds a demo gateway from cfg (memory store unless cfg names
// one) with exp, when set, as its span exporter.
func newOpsB(b *testing.B, cfg Config, exp sdktrace.SpanExporter) *Gateway {
	b.Helper()
	cfg.Demo = true
	if cfg.Store == "" {
		cfg.Store = "memory"
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		b.Fatal(err)
	}
	g := newGateway(cfg, discardLogger())
	g.ops.exporter = exp
	if err := g.build(b.Context()); err != nil {
		g.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	return g
}

// BenchmarkToolCallQuota: no quota, one quota in memory, and with
// MCPGATE_TEST_POSTGRES one quota shared through PostgreSQL (against the
// same call on a PostgreSQL store without a quota): with the default
// lease (5 % of the limit, at most 100 tokens per bank round trip), and
// with a lease of one token, a bank round trip per call (the worst case).
// The limit is never reached.
func BenchmarkToolCallQuota(b *testing.B) {
	rules := []quota.Rule{{Per: quota.PerCaller, Limit: 1 << 40, Window: time.Minute}}
	b.Run("none", func(b *testing.B) { benchToolCall(b, newOpsB(b, Config{}, nil)) })
	b.Run("memory", func(b *testing.B) { benchToolCall(b, newOpsB(b, Config{Quotas: rules}, nil)) })
	dsn := os.Getenv("MCPGATE_TEST_POSTGRES")
	if dsn == "" {
		return
	}
	b.Run("postgres-none", func(b *testing.B) { benchToolCall(b, newOpsB(b, Config{Store: pgSchemaB(b, dsn)}, nil)) })
	b.Run("postgres", func(b *testing.B) {
		g := newOpsB(b, Config{Store: pgSchemaB(b, dsn), Quotas: rules}, nil)
		if g.backend.Quotas == nil || g.ops.quota == nil {
			b.Fatal("the quota is not shared through PostgreSQL")
		}
		benchToolCall(b, g)
	})
	b.Run("postgres-lease1", func(b *testing.B) {
		g := newOpsB(b, Config{Store: pgSchemaB(b, dsn), Quotas: rules}, nil)
		bank, err := g.backend.Quotas(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		if g.ops.quota, err = quota.New(rules, quota.Options{Bank: bank, MaxLease: 1}); err != nil {
			b.Fatal(err)
		}
		benchToolCall(b, g)
	})
}

// pgSchemaB is a store location on a fresh schema of the database at dsn,
// dropped after the benchmark.
func pgSchemaB(b *testing.B, dsn string) string {
	b.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	schema := fmt.Sprintf("bench_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}
