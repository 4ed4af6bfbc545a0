package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/policy"
	"github.com/mcpgate/mcpgate/quota"
	"github.com/mcpgate/mcpgate/telemetry"
)

// ops are the operators' features, each nil when it is off: tracing, the
// audit record, the policy and the quotas. They are applied to every call
// in one place (pipeline.go) and observed in one place (observe.go).
type ops struct {
	tracer *telemetry.Tracer
	audit  *audit.Recorder
	policy *policy.Policy
	quota  *quota.Limiter
	sweep  func(context.Context, time.Time) (int64, error) // the shared quota bank's sweep, when there is one

	// exporter, set before build, replaces the OTLP exporter (benchmarks).
	exporter sdktrace.SpanExporter
}

// setupOps builds what the settings turn on.
func (g *Gateway) setupOps(ctx context.Context) error {
	replica := g.cfg.Replica
	if replica == "" {
		replica, _ = os.Hostname()
	}
	var err error
	if g.ops.tracer, err = telemetry.New(ctx, telemetry.Config{Tracing: g.cfg.Tracing, ServiceVersion: Version(), Replica: replica,
		Exporter: g.ops.exporter}); err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	if len(g.cfg.Policy) > 0 {
		if g.ops.policy, err = policy.Compile(g.cfg.Policy); err != nil {
			return err
		}
	}
	if len(g.cfg.Quotas) > 0 {
		opts := quota.Options{FailClosed: g.cfg.QuotaFailClosed}
		if g.backend.Quotas != nil {
			bank, err := g.backend.Quotas(ctx)
			if err != nil {
				return fmt.Errorf("quotas: %w", err)
			}
			opts.Bank = bank
			if s, ok := bank.(interface {
				Sweep(context.Context, time.Time) (int64, error)
			}); ok {
				g.ops.sweep = s.Sweep
			}
		}
		if g.ops.quota, err = quota.New(g.cfg.Quotas, opts); err != nil {
			return err
		}
	}
	if a := g.cfg.Audit; a.Sink != "" {
		var st audit.Store
		if a.Sink == "store" {
			if g.backend.Audit == nil {
				return fmt.Errorf("audit sink store: the %s store keeps no audit records; use stdout, file:PATH or a sqlite or postgres store", g.backend.Location)
			}
			if st, err = g.backend.Audit(ctx); err != nil {
				return fmt.Errorf("audit: %w", err)
			}
		}
		sink, err := audit.ParseSink(a.Sink, os.Stdout, st)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		g.ops.audit = audit.NewRecorder(sink, audit.Options{Replica: replica, IncludeArguments: a.IncludeArguments,
			Retention: max(a.Retention, 0), Logger: g.logger})
		g.metrics.watchAudit(g.ops.audit)
	}
	return nil
}

// close flushes the audit record, returns leased quota tokens and sends
// the last spans.
func (o *ops) close(ctx context.Context) error {
	var errs []error
	if o.audit != nil {
		errs = append(errs, o.audit.Close(ctx))
	}
	if o.quota != nil {
		errs = append(errs, o.quota.Close(ctx))
	}
	if o.tracer != nil {
		errs = append(errs, o.tracer.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// sweepQuotas deletes the shared quota buckets nobody used for long, every
// few minutes until ctx ends (a replica's sweep is enough for all).
func (o *ops) sweepQuotas(ctx context.Context, logger *slog.Logger) {
	if o.sweep == nil {
		return
	}
	t := time.NewTicker(5 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if _, err := o.sweep(ctx, now); err != nil && ctx.Err() == nil {
				logger.Warn("quotas: sweeping the shared buckets failed", "err", err)
			}
		}
	}
}

// auditTask records a task's state change made by its worker.
func (o *ops) auditTask(req *mcp.TaskRequest, st *servedTool, status string, isError bool, traceID string) {
	if o.audit == nil || req.TaskID == "" {
		return
	}
	o.audit.Task(audit.TaskChange{Subject: req.Principal.Subject, API: st.api.cfg.Name, Tool: req.Name, TaskID: req.TaskID,
		Status: status, IsError: isError, TraceID: traceID})
}
