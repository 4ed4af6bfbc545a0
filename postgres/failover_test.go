package postgres_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/postgres"
	"github.com/mcpgate/mcpgate/tasks"
)

// TestRunnerFailover: three replicas (Manager + Runner each) share one
// database. Replica A starts an idempotent task and then dies without a
// word: its connections are gone, so it neither heartbeats nor releases.
// Once A's lease lapses, the recovery scans of B and C both see the orphan;
// exactly one of them claims it (fenced, token 2) and runs it to completion.
func TestRunnerFailover(t *testing.T) {
	schema := newSchema(t)
	quiet := slog.New(slog.DiscardHandler)
	started := make(chan struct{})
	var runsB, runsC atomic.Int32
	type replica struct {
		m *postgres.Manager
		r *tasks.Runner
	}
	newReplica := func(name string, run func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error)) replica {
		m := open(t, schema, postgres.Options{MaxConns: 3})
		r, err := tasks.NewRunner(tasks.RunnerConfig{
			Manager: m, Owner: name, Lease: time.Second, Scan: 50 * time.Millisecond, Logger: quiet,
		})
		if err != nil {
			t.Fatal(err)
		}
		r.Handle("report", tasks.Handler{Idempotent: true, Run: run})
		return replica{m, r}
	}
	a := newReplica("A", func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
		close(started)
		<-ctx.Done() // hangs until the process "dies"
		return nil, context.Cause(ctx)
	})
	survivor := func(name string, runs *atomic.Int32) func(context.Context, *tasks.Exec) (json.RawMessage, error) {
		return func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(`{"content":[{"type":"text","text":"done by ` + name + `"}]}`), nil
		}
	}
	b := newReplica("B", survivor("B", &runsB))
	c := newReplica("C", survivor("C", &runsC))

	ctxA, stopA := context.WithCancel(t.Context())
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	defer stopA()
	wg.Go(func() { a.r.Run(ctxA) })

	tk, err := a.r.Submit(t.Context(), tasks.NewTask{Owner: owner, ToolName: "report"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("replica A never started the task")
	}
	a.m.Close() // A dies: no heartbeat, no release, its lease will lapse
	wg.Go(func() { b.r.Run(ctx) })
	wg.Go(func() { c.r.Run(ctx) })

	var got tasks.Task
	waitFor(t, "a survivor to complete the task", 20*time.Second, func() bool {
		got, err = b.m.Get(t.Context(), owner, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Status.Terminal()
	})
	if got.Status != tasks.Completed || got.LeaseToken != 2 {
		t.Fatalf("task after failover: %+v", got)
	}
	if n := runsB.Load() + runsC.Load(); n != 1 {
		t.Fatalf("task ran %d times on the survivors (B %d, C %d), want exactly once", n, runsB.Load(), runsC.Load())
	}
	t.Logf("taken over and completed by a survivor: %s", got.Result)
}
