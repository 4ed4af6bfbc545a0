package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpgate/mcpgate/tasks"
)

var owner = tasks.Principal{Subject: "alice", Tenant: "acme"}

type rig struct {
	t   *testing.T
	m   *tasks.Memory
	r   *tasks.Runner
	bus *tasks.Bus
}

// newRig builds a runner on a memory manager; call inside a synctest bubble.
func newRig(t *testing.T, withBus bool, cfg tasks.RunnerConfig) *rig {
	var bus *tasks.Bus
	opts := tasks.Options{}
	if withBus {
		bus = tasks.NewBus(64)
		opts.Publisher = bus
		cfg.Publisher = bus
	}
	m := tasks.NewMemory(1000, opts)
	cfg.Manager = m
	if cfg.Owner == "" {
		cfg.Owner = "w1"
	}
	r, err := tasks.NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, m: m, r: r, bus: bus}
}

func (g *rig) start() {
	stop, done := g.run()
	g.t.Cleanup(func() { stop(); <-done })
}

// run starts the runner; stop ends its context, done closes when Run
// returned.
func (g *rig) run() (stop func(), done <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan struct{})
	go func() { g.r.Run(ctx); close(ch) }()
	return cancel, ch
}

func (g *rig) submit(tool string, params string) tasks.Task {
	g.t.Helper()
	tk, err := g.r.Submit(context.Background(), tasks.NewTask{Owner: owner, ToolName: tool, Params: json.RawMessage(params)})
	if err != nil {
		g.t.Fatal(err)
	}
	return tk
}

// await polls until the task reaches a status, failing after a long fake time.
func (g *rig) await(id string, want tasks.Status) tasks.Task {
	g.t.Helper()
	for range 1000 {
		synctest.Wait()
		tk, err := g.m.Get(context.Background(), owner, id)
		if err != nil {
			g.t.Fatal(err)
		}
		if tk.Status == want {
			return tk
		}
		time.Sleep(100 * time.Millisecond)
	}
	tk, _ := g.m.Get(context.Background(), owner, id)
	g.t.Fatalf("task %s is %s (%q), want %s", id, tk.Status, tk.StatusMessage, want)
	return tk
}

func handler(fn func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error)) tasks.Handler {
	return tasks.Handler{Run: fn}
}

func TestRunnerOutcomes(t *testing.T) {
	ok := `{"resultType":"complete","content":[{"type":"text","text":"Report ready"}],"isError":false}`
	toolErr := `{"resultType":"complete","content":[{"type":"text","text":"Upstream rejected the quarter: Q5"}],"isError":true}`
	for _, tc := range []struct {
		name       string
		run        func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error)
		timeout    time.Duration
		status     tasks.Status
		result     string
		errJSON    string
		msgHas     string
		msgHasNoth string
	}{
		{name: "Completed", run: func(context.Context, *tasks.Exec) (json.RawMessage, error) { return json.RawMessage(ok), nil },
			status: tasks.Completed, result: ok},
		{name: "ToolErrorIsCompleted", run: func(context.Context, *tasks.Exec) (json.RawMessage, error) { return json.RawMessage(toolErr), nil },
			status: tasks.Completed, result: toolErr},
		{name: "ProtocolError", run: func(context.Context, *tasks.Exec) (json.RawMessage, error) {
			return nil, &tasks.RPCError{Code: -32602, Message: "API rate limit exceeded"}
		}, status: tasks.Failed, errJSON: `{"code":-32602,"message":"API rate limit exceeded"}`, msgHas: "API rate limit exceeded"},
		{name: "WrappedProtocolError", run: func(context.Context, *tasks.Exec) (json.RawMessage, error) {
			return nil, errors.Join(errors.New("ctx"), &tasks.RPCError{Code: -32000, Message: "upstream down", Data: json.RawMessage(`{"retry":true}`)})
		}, status: tasks.Failed, errJSON: `{"code":-32000,"message":"upstream down","data":{"retry":true}}`},
		{name: "InternalErrorDoesNotLeak", run: func(context.Context, *tasks.Exec) (json.RawMessage, error) {
			return nil, errors.New("dial tcp 10.0.0.7:5432: password=hunter2")
		}, status: tasks.Failed, errJSON: `{"code":-32603,"message":"Internal error"}`, msgHasNoth: "hunter2"},
		{name: "Panic", run: func(context.Context, *tasks.Exec) (json.RawMessage, error) { panic("secret state") },
			status: tasks.Failed, errJSON: `{"code":-32603,"message":"Internal error"}`, msgHasNoth: "secret"},
		{name: "InvalidResult", run: func(context.Context, *tasks.Exec) (json.RawMessage, error) { return json.RawMessage(`{nope`), nil },
			status: tasks.Failed, errJSON: `{"code":-32603,"message":"Internal error"}`},
		{name: "Timeout", timeout: time.Minute, run: func(ctx context.Context, _ *tasks.Exec) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, status: tasks.Failed, errJSON: `{"code":-32603,"message":"Task timed out"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, false, tasks.RunnerConfig{Logger: discard()})
				g.r.Handle("tool", tasks.Handler{Run: tc.run, Timeout: tc.timeout})
				g.start()
				tk := g.await(g.submit("tool", `{}`).ID, tc.status)
				if string(tk.Result) != tc.result || string(tk.Error) != tc.errJSON {
					t.Fatalf("result=%s error=%s", tk.Result, tk.Error)
				}
				if !strings.Contains(tk.StatusMessage, tc.msgHas) || tc.msgHasNoth != "" && strings.Contains(tk.StatusMessage, tc.msgHasNoth) {
					t.Fatalf("status message %q", tk.StatusMessage)
				}
				if tk.LeaseOwner != "" {
					t.Fatalf("lease kept after finish: %+v", tk)
				}
			})
		})
	}
}

func TestRunnerSubmitUnknownTool(t *testing.T) {
	m := tasks.NewMemory(10, tasks.Options{})
	r, _ := tasks.NewRunner(tasks.RunnerConfig{Manager: m})
	if _, err := r.Submit(t.Context(), tasks.NewTask{Owner: owner, ToolName: "nope"}); !errors.Is(err, tasks.ErrInvalid) {
		t.Fatalf("submit unknown tool: %v", err)
	}
	if m.Len() != 0 {
		t.Fatal("task created for unknown tool")
	}
}

// TestRunnerMaxActivePerOwner: past its bound an owner's submissions are
// refused, even many at once, while another owner's go through; a task
// that ends makes room.
func TestRunnerMaxActivePerOwner(t *testing.T) {
	m := tasks.NewMemory(1000, tasks.Options{})
	r, err := tasks.NewRunner(tasks.RunnerConfig{Manager: m, MaxActivePerOwner: 3})
	if err != nil {
		t.Fatal(err)
	}
	r.Handle("build", handler(func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) { return nil, nil }))
	var wg sync.WaitGroup
	var created, refused atomic.Int32
	var first atomic.Value
	for range 20 {
		wg.Go(func() {
			tk, err := r.Submit(t.Context(), tasks.NewTask{Owner: owner, ToolName: "build"})
			switch {
			case err == nil:
				created.Add(1)
				first.CompareAndSwap(nil, tk.ID)
			case errors.Is(err, tasks.ErrTooManyActive):
				refused.Add(1)
			default:
				t.Errorf("submit: %v", err)
			}
		})
	}
	wg.Wait()
	if created.Load() != 3 || refused.Load() != 17 {
		t.Fatalf("20 submissions at once: %d created, %d refused; want 3 and 17", created.Load(), refused.Load())
	}
	if _, err := r.Submit(t.Context(), tasks.NewTask{Owner: tasks.Principal{Subject: "someone else"}, ToolName: "build"}); err != nil {
		t.Fatalf("another owner: %v", err)
	}
	if err := m.Cancel(t.Context(), owner, first.Load().(string)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Submit(t.Context(), tasks.NewTask{Owner: owner, ToolName: "build"}); err != nil {
		t.Fatalf("after a task ended: %v", err)
	}
	if _, err := tasks.NewRunner(tasks.RunnerConfig{Manager: noCounter{m}, MaxActivePerOwner: 3}); !errors.Is(err, tasks.ErrInvalid) {
		t.Errorf("a manager that cannot count: %v", err)
	}
}

// noCounter is a manager without CountActive.
type noCounter struct{ tasks.Manager }

func TestRunnerCancel(t *testing.T) {
	for _, withBus := range []bool{false, true} {
		name := map[bool]string{false: "Polling", true: "Publisher"}[withBus]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, withBus, tasks.RunnerConfig{Lease: 30 * time.Second})
				var cause atomic.Value
				started := make(chan struct{})
				g.r.Handle("slow_compute", handler(func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
					close(started)
					<-ctx.Done()
					cause.Store(context.Cause(ctx))
					return nil, ctx.Err()
				}))
				g.start()
				tk := g.submit("slow_compute", `{"seconds":600}`)
				<-started
				t0 := time.Now()
				if err := g.m.Cancel(context.Background(), owner, tk.ID); err != nil {
					t.Fatal(err)
				}
				done := g.await(tk.ID, tasks.Cancelled)
				if c, _ := cause.Load().(error); !errors.Is(c, tasks.ErrCancelRequested) {
					t.Fatalf("handler saw cause %v", c)
				}
				took := time.Since(t0)
				if withBus && took > time.Second || !withBus && took > 11*time.Second {
					t.Fatalf("cancel took %v", took)
				}
				if done.StatusMessage == "" {
					t.Fatal("no status message")
				}
			})
		})
	}
}

func TestRunnerInputRounds(t *testing.T) {
	for _, withBus := range []bool{false, true} {
		name := map[bool]string{false: "Polling", true: "Publisher"}[withBus]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, withBus, tasks.RunnerConfig{Poll: 500 * time.Millisecond})
				g.r.Handle("multi_input", handler(func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
					got, err := x.RequireInput(ctx, map[string]json.RawMessage{
						"name":  json.RawMessage(`{"method":"elicitation/create","params":{"message":"Name?"}}`),
						"color": json.RawMessage(`{"method":"elicitation/create","params":{"message":"Color?"}}`),
					}, "Need two answers")
					if err != nil {
						return nil, err
					}
					if err := x.SetStatusMessage(ctx, "50% done"); err != nil {
						return nil, err
					}
					more, err := x.RequireInput(ctx, map[string]json.RawMessage{"ok": json.RawMessage(`{"method":"elicitation/create"}`)}, "Confirm?")
					if err != nil {
						return nil, err
					}
					out, _ := json.Marshal(map[string]any{"content": []any{}, "structuredContent": map[string]json.RawMessage{
						"name": got["name"], "color": got["color"], "ok": more["ok"]}})
					return out, nil
				}))
				g.start()
				tk := g.submit("multi_input", `{}`)
				polled := g.await(tk.ID, tasks.InputRequired)
				if len(polled.InputRequests) != 2 || polled.StatusMessage != "Need two answers" {
					t.Fatalf("first poll: %+v", polled)
				}
				ctx := context.Background()
				must(t, g.m.Update(ctx, owner, tk.ID, map[string]json.RawMessage{"name": json.RawMessage(`"Ada"`), "bogus": json.RawMessage(`1`)}))
				synctest.Wait()
				time.Sleep(2 * time.Second)
				synctest.Wait()
				polled, _ = g.m.Get(ctx, owner, tk.ID)
				if polled.Status != tasks.InputRequired || len(polled.InputRequests) != 1 || polled.InputRequests["color"] == nil {
					t.Fatalf("after partial answer: %+v", polled)
				}
				must(t, g.m.Update(ctx, owner, tk.ID, map[string]json.RawMessage{"color": json.RawMessage(`"blue"`), "name": json.RawMessage(`"Eve"`)}))
				polled = g.await(tk.ID, tasks.InputRequired)
				if polled.InputRequests["ok"] == nil || len(polled.InputRequests) != 1 {
					t.Fatalf("second round: %+v", polled)
				}
				must(t, g.m.Update(ctx, owner, tk.ID, map[string]json.RawMessage{"ok": json.RawMessage(`true`)}))
				done := g.await(tk.ID, tasks.Completed)
				want := `{"content":[],"structuredContent":{"color":"blue","name":"Ada","ok":true}}`
				if string(done.Result) != want {
					t.Fatalf("result %s, want %s", done.Result, want)
				}
			})
		})
	}
}

func TestRunnerCancelWhileWaitingForInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, true, tasks.RunnerConfig{})
		g.r.Handle("confirm_delete", handler(func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			_, err := x.RequireInput(ctx, map[string]json.RawMessage{"confirm": json.RawMessage(`{}`)}, "")
			return nil, err
		}))
		g.start()
		tk := g.submit("confirm_delete", `{}`)
		g.await(tk.ID, tasks.InputRequired)
		must(t, g.m.Cancel(context.Background(), owner, tk.ID))
		g.await(tk.ID, tasks.Cancelled)
	})
}

func TestRunnerBoundedConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, false, tasks.RunnerConfig{Concurrency: 2, Queue: 2, Scan: time.Second})
		var running, peak atomic.Int32
		release := make(chan struct{})
		g.r.Handle("job", handler(func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			defer running.Add(-1)
			select {
			case <-release:
				return json.RawMessage(`{}`), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}))
		g.start()
		var ids []string
		for range 7 { // more than Concurrency+Queue: the rest wait in the store
			ids = append(ids, g.submit("job", `{}`).ID)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if running.Load() != 2 {
			t.Fatalf("%d running, want 2", running.Load())
		}
		close(release)
		for _, id := range ids {
			g.await(id, tasks.Completed)
		}
		if peak.Load() != 2 {
			t.Fatalf("peak concurrency %d, want 2", peak.Load())
		}
	})
}

func TestRunnerRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, false, tasks.RunnerConfig{})
		ctx := context.Background()
		var reruns atomic.Int32
		ok := handler(func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			reruns.Add(1)
			return json.RawMessage(`{"content":[]}`), nil
		})
		g.r.Handle("idem", tasks.Handler{Run: ok.Run, Idempotent: true})
		g.r.Handle("once", ok)
		// The state a dead worker left behind.
		mk := func(tool string, idem, claim bool) tasks.Task {
			tk, err := g.m.Create(ctx, tasks.NewTask{Owner: owner, ToolName: tool, Idempotent: idem})
			must(t, err)
			if claim {
				tk, err = g.m.Claim(ctx, tasks.Claim{TaskID: tk.ID, Owner: "dead", For: time.Minute})
				must(t, err)
			}
			return tk
		}
		idemStarted := mk("idem", true, true)
		onceStarted := mk("once", false, true)
		onceNever := mk("once", false, false)
		unknown := mk("gone_tool", false, true)
		cancelWanted := mk("idem", true, true)
		must(t, g.m.Cancel(ctx, owner, cancelWanted.ID))
		waiting := mk("once", false, true)
		_, err := g.m.RequireInput(ctx, waiting.Lease(), map[string]json.RawMessage{"q": json.RawMessage(`{}`)}, "")
		must(t, err)

		g.start()
		g.await(onceNever.ID, tasks.Completed)
		// The dead worker's leases look live for a minute: nothing else is
		// touched until they lapse.
		for _, tk := range []tasks.Task{idemStarted, onceStarted, unknown, cancelWanted, waiting} {
			if got, _ := g.m.Get(ctx, owner, tk.ID); got.LeaseOwner != "dead" || got.Status.Terminal() {
				t.Fatalf("a live lease was taken over: %+v", got)
			}
		}
		g.await(idemStarted.ID, tasks.Completed)
		for _, id := range []string{onceStarted.ID, waiting.ID} {
			tk := g.await(id, tasks.Failed)
			if tk.StatusMessage != tasks.MsgInterrupted || !strings.Contains(string(tk.Error), "-32603") {
				t.Fatalf("interrupted task: %+v", tk)
			}
		}
		if tk := g.await(unknown.ID, tasks.Failed); tk.StatusMessage != tasks.MsgNoHandler {
			t.Fatalf("unknown tool: %q", tk.StatusMessage)
		}
		g.await(cancelWanted.ID, tasks.Cancelled)
		if reruns.Load() != 2 {
			t.Fatalf("%d runs, want 2 (idempotent re-run + never started)", reruns.Load())
		}
		if o, _ := g.m.Orphans(ctx, time.Now().Add(1000*time.Hour), 0); len(o) != 0 {
			t.Fatalf("%d tasks still orphaned", len(o))
		}
	})
}

func TestRunnerShutdownReleasesLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, false, tasks.RunnerConfig{})
		var cause atomic.Value
		g.r.Handle("slow", handler(func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			<-ctx.Done()
			cause.Store(context.Cause(ctx))
			return nil, ctx.Err()
		}))
		cancel, done := g.run()
		tk := g.submit("slow", `{}`)
		synctest.Wait()
		cancel()
		<-done
		got, _ := g.m.Get(context.Background(), owner, tk.ID)
		if got.Status != tasks.Working || got.LeaseOwner != "" || got.LeaseToken != 1 {
			t.Fatalf("after shutdown: %+v", got)
		}
		if c, _ := cause.Load().(error); !errors.Is(c, tasks.ErrShutdown) {
			t.Fatalf("cause %v", c)
		}
	})
}

func TestRunnerFencedAfterTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, false, tasks.RunnerConfig{Lease: 30 * time.Second, Logger: discard()})
		var mu sync.Mutex
		var cause error
		g.r.Handle("slow", handler(func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			<-ctx.Done()
			mu.Lock()
			cause = context.Cause(ctx)
			mu.Unlock()
			return json.RawMessage(`{"late":true}`), nil
		}))
		g.start()
		tk := g.submit("slow", `{}`)
		synctest.Wait()
		cur, _ := g.m.Get(context.Background(), owner, tk.ID)
		// Another replica takes the task over (as if this one had stalled).
		other, err := g.m.Claim(context.Background(), tasks.Claim{TaskID: tk.ID, Owner: "w2", Token: cur.LeaseToken, AsOf: time.Now().Add(time.Hour), For: time.Hour})
		must(t, err)
		time.Sleep(time.Minute) // next heartbeat notices
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if !errors.Is(cause, tasks.ErrLeaseLost) {
			t.Fatalf("handler cause %v", cause)
		}
		got, _ := g.m.Get(context.Background(), owner, tk.ID)
		if got.Status != tasks.Working || got.LeaseOwner != "w2" || got.LeaseToken != other.LeaseToken || got.Result != nil {
			t.Fatalf("fenced worker wrote: %+v", got)
		}
	})
}

func TestBusDropsForSlowSubscriber(t *testing.T) {
	bus := tasks.NewBus(2)
	ctx, cancel := context.WithCancel(t.Context())
	slow, _ := bus.Subscribe(ctx)
	fast, stopFast := bus.Subscribe(t.Context())
	for i := range 5 {
		bus.Publish(ctx, string(rune('a'+i)))
		if got := <-fast; got != string(rune('a'+i)) {
			t.Fatalf("fast got %q", got)
		}
	}
	if bus.Dropped() != 3 || len(slow) != 2 {
		t.Fatalf("dropped %d, buffered %d", bus.Dropped(), len(slow))
	}
	stopFast()
	stopFast() // idempotent
	if _, open := <-fast; open {
		t.Fatal("fast channel open after cancel")
	}
	cancel()
	for range slow { // drains the two buffered events, then closes
	}
	bus.Publish(t.Context(), "z") // no subscribers: no panic, no block
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRunnerRerunReplaysAnsweredInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, false, tasks.RunnerConfig{})
		ctx := context.Background()
		var asked atomic.Int32
		g.r.Handle("ask", tasks.Handler{Idempotent: true, Run: func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			asked.Add(1)
			got, err := x.RequireInput(ctx, map[string]json.RawMessage{"name": json.RawMessage(`{}`)}, "Name?")
			if err != nil {
				return nil, err
			}
			return json.Marshal(map[string]json.RawMessage{"name": got["name"]})
		}})
		// A dead worker asked; the client answered while no worker was alive.
		tk, err := g.m.Create(ctx, tasks.NewTask{Owner: owner, ToolName: "ask", Idempotent: true})
		must(t, err)
		tk, err = g.m.Claim(ctx, tasks.Claim{TaskID: tk.ID, Owner: "dead", For: time.Minute})
		must(t, err)
		_, err = g.m.RequireInput(ctx, tk.Lease(), map[string]json.RawMessage{"name": json.RawMessage(`{}`)}, "Name?")
		must(t, err)
		must(t, g.m.Update(ctx, owner, tk.ID, map[string]json.RawMessage{"name": json.RawMessage(`"Ada"`)}))
		g.start()
		done := g.await(tk.ID, tasks.Completed)
		if string(done.Result) != `{"name":"Ada"}` || asked.Load() != 1 {
			t.Fatalf("result %s after %d runs", done.Result, asked.Load())
		}
	})
}

func TestRunnerSweepsExpiredTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, false, tasks.RunnerConfig{Scan: 10 * time.Second})
		g.r.Handle("x", handler(func(context.Context, *tasks.Exec) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }))
		g.start()
		short, err := g.r.Submit(context.Background(), tasks.NewTask{Owner: owner, ToolName: "x", TTL: time.Minute})
		must(t, err)
		keep := g.submit("x", `{}`)
		g.await(short.ID, tasks.Completed)
		time.Sleep(time.Minute + 11*time.Second)
		synctest.Wait()
		if g.m.Len() != 1 {
			t.Fatalf("%d tasks stored, want 1", g.m.Len())
		}
		g.await(keep.ID, tasks.Completed)
	})
}

func TestRunnerScanDoesNotWaitForBusyWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, false, tasks.RunnerConfig{Concurrency: 1, Queue: 1, Scan: 10 * time.Second})
		release := make(chan struct{})
		g.r.Handle("block", handler(func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			select {
			case <-release:
				return json.RawMessage(`{}`), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}))
		g.r.Handle("x", handler(func(context.Context, *tasks.Exec) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }))
		g.start()
		blocker := g.submit("block", `{}`)
		synctest.Wait()
		var rest []string
		for range 3 { // one fits the backlog, two wait in the store
			rest = append(rest, g.submit("x", `{}`).ID)
		}
		short, err := g.r.Submit(context.Background(), tasks.NewTask{Owner: owner, ToolName: "x", TTL: time.Minute})
		must(t, err)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if _, err := g.m.Get(context.Background(), owner, short.ID); !errors.Is(err, tasks.ErrNotFound) {
			t.Fatalf("expired task: %v", err)
		}
		if g.m.Len() != 4 {
			t.Fatalf("sweep did not run while workers were busy: %d tasks stored", g.m.Len())
		}
		close(release)
		g.await(blocker.ID, tasks.Completed)
		for _, id := range rest {
			g.await(id, tasks.Completed)
		}
	})
}

func TestRunnerWaitingForInputFreesItsSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, true, tasks.RunnerConfig{Concurrency: 1})
		var running, peak atomic.Int32
		track := func() func() {
			n := running.Add(1)
			if n > peak.Load() {
				peak.Store(n)
			}
			return func() { running.Add(-1) }
		}
		g.r.Handle("ask", handler(func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			done := track()
			got, err := func() (map[string]json.RawMessage, error) {
				done()
				defer func() { done = track() }()
				return x.RequireInput(ctx, map[string]json.RawMessage{"q": json.RawMessage(`{}`)}, "")
			}()
			defer done()
			if err != nil {
				return nil, err
			}
			time.Sleep(time.Second) // work after the answer, holding the slot again
			return got["q"], nil
		}))
		g.r.Handle("plain", handler(func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			defer track()()
			time.Sleep(time.Second)
			return json.RawMessage(`{}`), nil
		}))
		g.start()
		ask := g.submit("ask", `{}`)
		g.await(ask.ID, tasks.InputRequired)
		plain := g.submit("plain", `{}`)
		g.await(plain.ID, tasks.Completed) // ran while ask waited
		must(t, g.m.Update(context.Background(), owner, ask.ID, map[string]json.RawMessage{"q": json.RawMessage(`"yes"`)}))
		other := g.submit("plain", `{}`)
		if got := g.await(ask.ID, tasks.Completed); string(got.Result) != `"yes"` {
			t.Fatalf("result %s", got.Result)
		}
		g.await(other.ID, tasks.Completed)
		if peak.Load() != 1 {
			t.Fatalf("peak %d handlers running with Concurrency 1", peak.Load())
		}
	})
}

// A crash can leave more tasks than the backlog holds: Run starts its
// workers first, takes every one over, keeps serving new submissions
// meanwhile, and stops when told to.
func TestRunnerStartsWithMoreOrphansThanItsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, false, tasks.RunnerConfig{Concurrency: 2, Queue: 3, ScanBatch: 10, Logger: discard()})
		var runs atomic.Int32
		g.r.Handle("x", tasks.Handler{Idempotent: true, Run: func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			runs.Add(1)
			time.Sleep(time.Second)
			return json.RawMessage(`{}`), nil
		}})
		ctx := context.Background()
		var ids []string
		for i := range 40 {
			tk, err := g.m.Create(ctx, tasks.NewTask{Owner: owner, ToolName: "x", Idempotent: true})
			must(t, err)
			if i%2 == 0 { // half were running when their worker died
				tk, err = g.m.Claim(ctx, tasks.Claim{TaskID: tk.ID, Owner: "dead", For: time.Second})
				must(t, err)
			}
			ids = append(ids, tk.ID)
		}
		time.Sleep(2 * time.Second) // the dead worker's leases lapse
		cancel, done := g.run()
		fresh := g.submit("x", `{}`)
		for _, id := range append(ids, fresh.ID) {
			g.await(id, tasks.Completed)
		}
		if n := runs.Load(); n != 41 {
			t.Fatalf("%d runs for 41 tasks (each must run exactly once)", n)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("Run did not return after its context ended")
		}
	})
}

// Stopping while recovery at start still waits for room in the backlog
// ends at once.
func TestRunnerStopsDuringRecoveryAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, false, tasks.RunnerConfig{Concurrency: 1, Queue: 1, Logger: discard()})
		g.r.Handle("block", tasks.Handler{Run: func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}})
		for range 20 {
			_, err := g.m.Create(context.Background(), tasks.NewTask{Owner: owner, ToolName: "block"})
			must(t, err)
		}
		cancel, done := g.run()
		synctest.Wait() // one runs, one waits in the backlog, recovery waits for room
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("Run did not return while recovery waited for the backlog")
		}
	})
}

// On shutdown a running task gets the grace period to finish, with its
// lease renewed meanwhile (no other runner can take it), and nothing new is
// started.
func TestRunnerShutdownLetsTasksFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, false, tasks.RunnerConfig{Lease: 30 * time.Second, ShutdownGrace: 2 * time.Minute})
		g.r.Handle("work", handler(func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			select {
			case <-time.After(90 * time.Second): // three lease periods
				return json.RawMessage(`{"done":true}`), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}))
		cancel, done := g.run()
		tk := g.submit("work", `{}`)
		synctest.Wait()
		start := time.Now()
		cancel()
		synctest.Wait()
		late := g.submit("work", `{}`) // arrives while shutting down
		time.Sleep(60 * time.Second)
		cur, _ := g.m.Get(context.Background(), owner, tk.ID)
		if _, err := g.m.Claim(context.Background(), tasks.Claim{TaskID: tk.ID, Owner: "w2", Token: cur.LeaseToken, For: time.Minute}); !errors.Is(err, tasks.ErrClaimed) {
			t.Fatalf("another runner claimed a task that was finishing during the grace period: %v", err)
		}
		<-done
		if took := time.Since(start); took != 90*time.Second {
			t.Errorf("Run returned %v after its context ended, want when the task finished (90s)", took)
		}
		if got, _ := g.m.Get(context.Background(), owner, tk.ID); got.Status != tasks.Completed || string(got.Result) != `{"done":true}` {
			t.Fatalf("the running task did not finish: %+v", got)
		}
		if got, _ := g.m.Get(context.Background(), owner, late.ID); got.Status != tasks.Working || got.LeaseToken != 0 {
			t.Fatalf("a task submitted during shutdown was started: %+v", got)
		}
	})
}

// A task still running when the grace period ends is stopped and its lease
// released (not failed), so the next runner takes it over at once.
func TestRunnerShutdownGraceEndsWithRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, false, tasks.RunnerConfig{ShutdownGrace: 5 * time.Second, Logger: discard()})
		var cause atomic.Value
		g.r.Handle("forever", tasks.Handler{Idempotent: true, Run: func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			<-ctx.Done()
			cause.Store(context.Cause(ctx))
			return nil, context.Cause(ctx)
		}})
		cancel, done := g.run()
		tk := g.submit("forever", `{}`)
		synctest.Wait()
		start := time.Now()
		cancel()
		<-done
		if took := time.Since(start); took != 5*time.Second {
			t.Errorf("Run returned %v after its context ended, want the 5s grace", took)
		}
		if c, _ := cause.Load().(error); !errors.Is(c, tasks.ErrShutdown) {
			t.Fatalf("handler cause %v, want ErrShutdown", c)
		}
		got, _ := g.m.Get(context.Background(), owner, tk.ID)
		if got.Status != tasks.Working || got.LeaseOwner != "" || got.Result != nil {
			t.Fatalf("after the grace period: %+v (want working, released, no result)", got)
		}
		// The next runner resumes it without waiting for a lease to lapse.
		next, err := tasks.NewRunner(tasks.RunnerConfig{Manager: g.m, Owner: "next", Logger: discard()})
		must(t, err)
		next.Handle("forever", tasks.Handler{Idempotent: true, Run: func(context.Context, *tasks.Exec) (json.RawMessage, error) {
			return json.RawMessage(`{"resumed":true}`), nil
		}})
		nctx, ncancel := context.WithCancel(context.Background())
		defer ncancel()
		go next.Run(nctx)
		synctest.Wait()
		if got, _ := g.m.Get(context.Background(), owner, tk.ID); got.Status != tasks.Completed || string(got.Result) != `{"resumed":true}` {
			t.Fatalf("the next runner did not resume the released task at once: %+v", got)
		}
	})
}

// A handler waiting for input does not hold the shutdown up: it is stopped
// at once and its lease released, the question still outstanding.
func TestRunnerShutdownStopsWaitingTasksAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, true, tasks.RunnerConfig{ShutdownGrace: time.Hour})
		var cause atomic.Value
		g.r.Handle("ask", handler(func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			_, err := x.RequireInput(ctx, map[string]json.RawMessage{"q": json.RawMessage(`{}`)}, "Sure?")
			cause.Store(context.Cause(ctx))
			return nil, err
		}))
		cancel, done := g.run()
		tk := g.submit("ask", `{}`)
		g.await(tk.ID, tasks.InputRequired)
		start := time.Now()
		cancel()
		<-done
		if took := time.Since(start); took != 0 {
			t.Errorf("shutdown waited %v for a task waiting for input", took)
		}
		if c, _ := cause.Load().(error); !errors.Is(c, tasks.ErrShutdown) {
			t.Fatalf("handler cause %v", c)
		}
		got, _ := g.m.Get(context.Background(), owner, tk.ID)
		if got.Status != tasks.InputRequired || got.LeaseOwner != "" || len(got.InputRequests) != 1 {
			t.Fatalf("after shutdown: %+v", got)
		}
	})
}

// Recovery decides from where each task's handler stood when its worker
// died: fresh and resumable tasks run again (a re-run finds the
// checkpoint), tasks in doubt run again only when idempotent and otherwise
// fail saying exactly why, and a task without a stage counts as fresh only
// when the runner's handlers checkpoint.
func TestRunnerRecoveryByStage(t *testing.T) {
	for _, tc := range []struct {
		name          string
		checkpointing bool
		idempotent    bool
		stage         tasks.Stage
		want          tasks.Status
		msg           string
	}{
		{"FreshRuns", false, false, tasks.StageFresh, tasks.Completed, ""},
		{"ResumableResumes", false, false, tasks.StageResumable, tasks.Completed, ""},
		{"InDoubtFails", true, false, tasks.StageInDoubt, tasks.Failed, tasks.MsgInDoubt},
		{"InDoubtIdempotentRuns", true, true, tasks.StageInDoubt, tasks.Completed, ""},
		{"NoStageFails", false, false, tasks.StageNone, tasks.Failed, tasks.MsgInterrupted},
		{"NoStageCheckpointingRuns", true, false, tasks.StageNone, tasks.Completed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, false, tasks.RunnerConfig{Checkpointing: tc.checkpointing, Logger: discard()})
				var resumedFrom atomic.Value
				g.r.Handle("op", tasks.Handler{Idempotent: tc.idempotent, Run: func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
					resumedFrom.Store(string(x.Task().Checkpoint))
					return json.RawMessage(`{"content":[]}`), nil
				}})
				ctx := context.Background()
				tk, err := g.m.Create(ctx, tasks.NewTask{Owner: owner, ToolName: "op", Idempotent: tc.idempotent})
				must(t, err)
				tk, err = g.m.Claim(ctx, tasks.Claim{TaskID: tk.ID, Owner: "dead", For: time.Second})
				must(t, err)
				var data json.RawMessage
				if tc.stage == tasks.StageResumable {
					data = json.RawMessage(`{"location":"/reports/7"}`)
				}
				if tc.stage != tasks.StageNone {
					must(t, g.m.Checkpoint(ctx, tk.Lease(), tc.stage, data))
				}
				time.Sleep(2 * time.Second) // the dead worker's lease lapses
				g.start()
				got := g.await(tk.ID, tc.want)
				if got.StatusMessage != tc.msg {
					t.Fatalf("status message %q, want %q", got.StatusMessage, tc.msg)
				}
				if tc.want == tasks.Failed {
					if resumedFrom.Load() != nil || !strings.Contains(string(got.Error), "-32603") {
						t.Fatalf("failed task: ran %v, error %s", resumedFrom.Load(), got.Error)
					}
					return
				}
				if from, _ := resumedFrom.Load().(string); from != string(data) {
					t.Fatalf("the re-run found checkpoint %q, want %q", from, data)
				}
			})
		})
	}
}

// A handler records its stage through Exec.Checkpoint; a lost lease stops
// it like any other write.
func TestExecCheckpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, false, tasks.RunnerConfig{Logger: discard()})
		step := make(chan struct{})
		errs := make(chan error, 2)
		g.r.Handle("op", handler(func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			errs <- x.Checkpoint(ctx, tasks.StageResumable, json.RawMessage(`{"n":1}`))
			<-step
			errs <- x.Checkpoint(ctx, tasks.StageInDoubt, nil)
			return nil, context.Cause(ctx)
		}))
		g.start()
		tk := g.submit("op", `{}`)
		must(t, <-errs)
		cur, _ := g.m.Get(context.Background(), owner, tk.ID)
		if cur.Stage != tasks.StageResumable || string(cur.Checkpoint) != `{"n":1}` {
			t.Fatalf("after Checkpoint: %q %s", cur.Stage, cur.Checkpoint)
		}
		_, err := g.m.Claim(context.Background(), tasks.Claim{TaskID: tk.ID, Owner: "w2", Token: cur.LeaseToken, AsOf: time.Now().Add(time.Hour), For: time.Hour})
		must(t, err)
		close(step)
		if err := <-errs; !errors.Is(err, tasks.ErrLeaseLost) {
			t.Fatalf("checkpoint after a takeover: %v", err)
		}
	})
}
