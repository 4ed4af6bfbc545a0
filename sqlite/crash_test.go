package sqlite_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/sqlite"
	"github.com/mcpgate/mcpgate/tasks"
)

// crashEnv names the database a re-executed test binary works on as the
// crash-test child.
const crashEnv = "MCPGATE_TASKS_CRASH_DB"

const crashTasks = 500

// crashLease is the child's lease: long enough that the test's cancels,
// right after the kill, still find the dead worker's leases live; short
// enough that the restarted runner soon takes its tasks over.
const crashLease = 3 * time.Second

// Tools of the crash test, by how they behave in the child: quick ones
// finish in milliseconds, slow ones never finish (they are working when the
// child dies), ask waits for input that never comes.
var crashTools = []struct {
	name       string
	idempotent bool
}{
	{"quick", true},
	{"quick_once", false},
	{"slow_idem", true},
	{"slow_once", false},
	{"ask", false},
}

func crashOwner(i int) tasks.Principal {
	return tasks.Principal{Subject: fmt.Sprintf("user-%d", i%3), Tenant: "tenant-" + fmt.Sprint(i%2)}
}

// crashChild is the server that gets killed: it submits crashTasks tasks,
// printing each handle once Submit returned, and runs them until SIGKILL.
func crashChild(path string) {
	ctx := context.Background()
	m, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	r, err := tasks.NewRunner(tasks.RunnerConfig{Manager: m, Owner: "child", Concurrency: 16, Queue: 32, Lease: crashLease,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	for _, tool := range crashTools {
		h := tasks.Handler{Idempotent: tool.idempotent}
		switch {
		case strings.HasPrefix(tool.name, "quick"):
			h.Run = func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
				time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
				return json.RawMessage(`{"content":[{"type":"text","text":"done"}],"isError":false}`), nil
			}
		case tool.name == "ask":
			h.Run = func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
				_, err := x.RequireInput(ctx, map[string]json.RawMessage{"confirm": json.RawMessage(`{"method":"elicitation/create"}`)}, "Confirm?")
				return json.RawMessage(`{"content":[]}`), err
			}
		default:
			h.Run = func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}
		}
		r.Handle(tool.name, h)
	}
	go r.Run(ctx)
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < crashTasks; i += 4 {
				tool := crashTools[i%len(crashTools)].name
				tk, err := r.Submit(ctx, tasks.NewTask{Owner: crashOwner(i), ToolName: tool, Params: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), TTL: time.Hour})
				mu.Lock()
				if err != nil {
					fmt.Fprintln(out, "ERROR", err)
				} else {
					fmt.Fprintln(out, "TASK", tk.ID, i)
				}
				out.Flush()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// Make "mid-flight" certain: every worker is inside a task that will not
	// finish (slow or waiting for input) before the parent is told to kill.
	for {
		var busy int
		if err := m.DB().QueryRow(`SELECT count(*) FROM tasks WHERE status IN ('working','input_required') AND lease_token > 0`).Scan(&busy); err != nil {
			fmt.Fprintln(out, "ERROR", err)
			out.Flush()
			os.Exit(2)
		}
		if busy >= 16 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Fprintln(out, "SUBMITTED")
	out.Flush()
	select {} // keep working until killed
}

func TestCrashRecovery(t *testing.T) {
	if path := os.Getenv(crashEnv); path != "" {
		crashChild(path)
		return
	}
	if testing.Short() {
		t.Skip("crash test re-executes the test binary")
	}
	path := filepath.Join(t.TempDir(), "tasks.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashRecovery$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	type handle struct {
		id string
		i  int
	}
	var handles []handle
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "TASK" {
			var i int
			fmt.Sscan(f[2], &i)
			handles = append(handles, handle{f[1], i})
		} else if len(f) > 0 && f[0] == "ERROR" {
			t.Fatalf("child: %s", sc.Text())
		} else if len(f) == 1 && f[0] == "SUBMITTED" {
			break
		}
	}
	if len(handles) != crashTasks {
		t.Fatalf("child handed out %d handles, want %d (scan: %v)", len(handles), crashTasks, sc.Err())
	}
	time.Sleep(time.Duration(rand.IntN(100)) * time.Millisecond) // heartbeats and quick tasks in flight
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	werr := cmd.Wait()
	killed = true
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v", werr)
	}

	// The state the dead server left: every handle answers get.
	ctx := t.Context()
	m := open(t, path, tasks.Options{})
	before := map[string]tasks.Task{}
	counts := map[tasks.Status]int{}
	var claimedOpen, neverStarted int
	for _, h := range handles {
		tk, err := m.Get(ctx, crashOwner(h.i), h.id)
		if err != nil {
			t.Fatalf("task %s (#%d) lost after SIGKILL: %v", h.id, h.i, err)
		}
		if tk.ToolName != crashTools[h.i%len(crashTools)].name {
			t.Fatalf("task %s has tool %s", h.id, tk.ToolName)
		}
		before[h.id] = tk
		counts[tk.Status]++
		if !tk.Status.Terminal() {
			if tk.LeaseToken > 0 {
				claimedOpen++
			} else {
				neverStarted++
			}
		}
	}
	t.Logf("after SIGKILL: %v; %d claimed by the dead worker, %d never started", counts, claimedOpen, neverStarted)
	if claimedOpen == 0 || neverStarted == 0 {
		t.Fatalf("the kill was not mid-flight: %d claimed, %d never started", claimedOpen, neverStarted)
	}

	// A client cancels some tasks while the server is down.
	// Tasks the dead worker held still have live-looking leases: the cancel
	// only records intent, which recovery must honour. Never-started ones are
	// cancelled at once.
	cancelled := map[string]bool{}
	var heldCancels, freeCancels int
	for _, h := range handles {
		tk := before[h.id]
		held := tk.LeaseToken > 0
		if tk.Status.Terminal() || held && heldCancels == 3 || !held && freeCancels == 5 {
			continue
		}
		if err := m.Cancel(ctx, crashOwner(h.i), h.id); err != nil {
			t.Fatal(err)
		}
		got, _ := m.Get(ctx, crashOwner(h.i), h.id)
		if held && (got.Status == tasks.Cancelled || !got.CancelRequested) || !held && got.Status != tasks.Cancelled {
			t.Fatalf("cancel of %s (held %v) left %s, intent %v", h.id, held, got.Status, got.CancelRequested)
		}
		cancelled[h.id] = true
		if held {
			heldCancels++
		} else {
			freeCancels++
		}
	}

	// Restart: the same database, fast handlers; the dead worker's tasks
	// are taken over once its leases lapse.
	r, err := tasks.NewRunner(tasks.RunnerConfig{Manager: m, Owner: "restarted", Concurrency: 8,
		Scan: 100 * time.Millisecond, Poll: 10 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var reruns sync.Map
	for _, tool := range crashTools {
		h := tasks.Handler{Idempotent: tool.idempotent, Run: func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			reruns.Store(x.Task().ID, true)
			if tool.name == "ask" {
				if _, err := x.RequireInput(ctx, map[string]json.RawMessage{"confirm": json.RawMessage(`{}`)}, "Confirm?"); err != nil {
					return nil, err
				}
			}
			return json.RawMessage(`{"content":[{"type":"text","text":"recovered"}]}`), nil
		}}
		r.Handle(tool.name, h)
	}
	runCtx, stop := context.WithCancel(ctx)
	runDone := make(chan struct{})
	go func() { r.Run(runCtx); close(runDone) }()
	defer func() { stop(); <-runDone }()

	deadline := time.Now().Add(2 * time.Minute)
	final := map[string]tasks.Task{}
	for {
		open := 0
		for _, h := range handles {
			tk, err := m.Get(ctx, crashOwner(h.i), h.id)
			if err != nil {
				t.Fatalf("task %s lost during recovery: %v", h.id, err)
			}
			final[h.id] = tk
			if tk.Status == tasks.InputRequired {
				if err := m.Update(ctx, crashOwner(h.i), h.id, map[string]json.RawMessage{"confirm": json.RawMessage(`{"action":"accept"}`)}); err != nil {
					t.Fatal(err)
				}
			}
			if !tk.Status.Terminal() {
				open++
			}
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tasks still not terminal after recovery", open)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Outcomes follow the recovery policy.
	finalCounts := map[tasks.Status]int{}
	for _, h := range handles {
		b, f := before[h.id], final[h.id]
		finalCounts[f.Status]++
		tool := crashTools[h.i%len(crashTools)]
		_, rerun := reruns.Load(h.id)
		switch {
		case b.Status.Terminal():
			if f.Status != b.Status || f.Version != b.Version || rerun {
				t.Errorf("task %s finished before the crash changed: %s v%d → %s v%d", h.id, b.Status, b.Version, f.Status, f.Version)
			}
		case cancelled[h.id]:
			if f.Status != tasks.Cancelled || rerun {
				t.Errorf("cancelled task %s ended %s (rerun %v)", h.id, f.Status, rerun)
			}
		case b.LeaseToken == 0:
			if f.Status != tasks.Completed || !rerun {
				t.Errorf("never-started %s task %s ended %s", tool.name, h.id, f.Status)
			}
		case tool.idempotent:
			if f.Status != tasks.Completed || !rerun || f.LeaseToken <= b.LeaseToken {
				t.Errorf("idempotent interrupted task %s ended %s token %d→%d", h.id, f.Status, b.LeaseToken, f.LeaseToken)
			}
		default:
			if f.Status != tasks.Failed || f.StatusMessage != tasks.MsgInterrupted || rerun || f.Result != nil ||
				!strings.Contains(string(f.Error), `"code":-32603`) {
				t.Errorf("non-idempotent interrupted task %s: %+v (rerun %v)", h.id, f, rerun)
			}
		}
	}
	t.Logf("after recovery: %v", finalCounts)

	// No illegal transition happened, before or after the crash.
	trs, err := m.Transitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]tasks.Status{}
	for _, tr := range trs {
		from, ok := last[tr.TaskID]
		if !ok {
			from = tasks.Working
		}
		if tr.From != from || !tr.From.CanBecome(tr.To) || tr.From == tr.To {
			t.Fatalf("illegal transition recorded for %s: %s → %s (previous state %s)", tr.TaskID, tr.From, tr.To, from)
		}
		last[tr.TaskID] = tr.To
	}
	for _, h := range handles {
		if got, want := last[h.id], final[h.id].Status; got != want {
			t.Fatalf("audit trail of %s ends at %q, task is %s", h.id, got, want)
		}
	}
	t.Logf("%d transitions audited", len(trs))
}
