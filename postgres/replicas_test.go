package postgres_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/postgres"
	"github.com/mcpgate/mcpgate/tasks"
	"github.com/mcpgate/mcpgate/tasks/taskstest"
)

var owner = tasks.Principal{Subject: "alice", Tenant: "acme"}

// replicas opens n managers ("replicas") on one schema with one clock.
func replicas(t *testing.T, n int, clock *taskstest.Clock) []*postgres.Manager {
	t.Helper()
	schema := newSchema(t)
	ms := make([]*postgres.Manager, n)
	for i := range ms {
		ms[i] = open(t, schema, postgres.Options{Options: tasks.Options{Now: clock.Now}, MaxConns: 3})
	}
	return ms
}

// TestReplicasClaimEachTaskOnce: replicas race through Orphans+Claim over
// the same tasks, as the recovery scans of a cluster do. Each task is
// claimed by exactly one replica per lease; when the winners "die" (their
// leases lapse) the tasks are handed to exactly one survivor each, with a
// bumped fencing token, and the dead holders' writes fail with ErrLeaseLost.
func TestReplicasClaimEachTaskOnce(t *testing.T) {
	clock := taskstest.NewClock()
	ms := replicas(t, 4, clock)
	ctx := t.Context()
	const n = 40
	var ids []string
	for range n {
		tk, err := ms[0].Create(ctx, tasks.NewTask{Owner: owner, ToolName: "x"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}
	round := func(wantToken int64) map[string]tasks.Lease {
		t.Helper()
		var mu sync.Mutex
		won := map[string][]tasks.Lease{}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for r, m := range ms {
			wg.Go(func() {
				<-start
				orphans, err := m.Orphans(ctx, clock.Now(), 0)
				if err != nil {
					t.Error(err)
					return
				}
				for _, o := range orphans {
					c, err := m.Claim(ctx, tasks.Claim{TaskID: o.ID, Owner: fmt.Sprintf("replica-%d-token-%d", r, wantToken), Token: o.LeaseToken, For: time.Minute})
					switch {
					case err == nil:
						mu.Lock()
						won[o.ID] = append(won[o.ID], c.Lease())
						mu.Unlock()
					case errors.Is(err, tasks.ErrClaimed):
					default:
						t.Errorf("claim %s: %v", o.ID, err)
					}
				}
			})
		}
		close(start)
		wg.Wait()
		leases := map[string]tasks.Lease{}
		for _, id := range ids {
			if len(won[id]) != 1 {
				t.Fatalf("task %s claimed %d times: %+v", id, len(won[id]), won[id])
			}
			if l := won[id][0]; l.Token != wantToken {
				t.Fatalf("task %s claimed with token %d, want %d", id, l.Token, wantToken)
			}
			leases[id] = won[id][0]
		}
		if len(won) != n {
			t.Fatalf("%d tasks claimed, want %d", len(won), n)
		}
		return leases
	}
	first := round(1)
	if o, err := ms[1].Orphans(ctx, clock.Now(), 0); err != nil || len(o) != 0 {
		t.Fatalf("orphans while every lease is live: %d (%v)", len(o), err)
	}
	clock.Advance(2 * time.Minute) // the first holders died: their leases lapse
	second := round(2)

	// The dead holders come back: they are fenced off. Then they race the
	// survivors finishing: every stale write is refused (ErrLeaseLost, or
	// ErrIllegalTransition once the survivor's Finish committed), every
	// fenced one succeeds.
	for i, id := range ids {
		if _, err := ms[i%len(ms)].Heartbeat(ctx, first[id], time.Minute); !errors.Is(err, tasks.ErrLeaseLost) {
			t.Fatalf("stale heartbeat of %s: %v, want ErrLeaseLost", id, err)
		}
	}
	var wg sync.WaitGroup
	for i, id := range ids {
		m := ms[i%len(ms)]
		stale, cur := first[id], second[id]
		wg.Go(func() {
			err := m.Finish(ctx, stale, tasks.Failed, json.RawMessage(`{"code":-32603,"message":"x"}`), "")
			if !errors.Is(err, tasks.ErrLeaseLost) && !errors.Is(err, tasks.ErrIllegalTransition) {
				t.Errorf("stale finish of %s: %v, want it refused", id, err)
			}
		})
		wg.Go(func() {
			if err := ms[(i+1)%len(ms)].Finish(ctx, cur, tasks.Completed, json.RawMessage(`{"content":[]}`), ""); err != nil {
				t.Errorf("finish of %s by its holder: %v", id, err)
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		got, err := ms[3].Get(ctx, owner, id)
		if err != nil || got.Status != tasks.Completed || got.LeaseToken != 2 || got.LeaseOwner != "" {
			t.Fatalf("task %s after the race: %+v %v", id, got, err)
		}
		tr, err := ms[2].Transitions(ctx, id)
		if err != nil || len(tr) != 1 || tr[0].From != tasks.Working || tr[0].To != tasks.Completed {
			t.Fatalf("audit trail of %s: %+v %v", id, tr, err)
		}
	}
}

// TestConcurrentWritesLoseNothing: four replicas hammer one task at once: a
// worker asks for input keys and reports progress through its lease (from two
// replicas), a heartbeat renews it, a client answers every outstanding key,
// and finally cancels while the worker completes. Every write that reported a
// change is in the final state (each bumps the version by exactly one, every
// asked key is outstanding or answered, every answer kept) and the audit
// trail is a legal chain.
func TestConcurrentWritesLoseNothing(t *testing.T) {
	clock := taskstest.NewClock()
	ms := replicas(t, 4, clock)
	ctx := t.Context()
	created, err := ms[0].Create(ctx, tasks.NewTask{Owner: owner, ToolName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := ms[1].Claim(ctx, tasks.Claim{TaskID: created.ID, Owner: "w", For: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l := tk.Lease()
	const each = 30
	var asks, messages, beats atomic.Int64
	var answering atomic.Bool
	answering.Store(true)
	var wg sync.WaitGroup
	wg.Go(func() { // worker asks for input, one new key at a time
		for i := range each {
			if _, err := ms[0].RequireInput(ctx, l, map[string]json.RawMessage{fmt.Sprintf("k%02d", i): json.RawMessage(`{"q":1}`)}, "need input"); err != nil {
				t.Errorf("RequireInput: %v", err)
				return
			}
			asks.Add(1)
		}
	})
	wg.Go(func() { // worker reports progress from another replica
		for i := range each {
			if err := ms[1].SetStatusMessage(ctx, l, fmt.Sprintf("progress %d", i)); err != nil {
				t.Errorf("SetStatusMessage: %v", err)
				return
			}
			messages.Add(1)
		}
	})
	wg.Go(func() { // lease heartbeat
		for range each {
			if _, err := ms[2].Heartbeat(ctx, l, time.Hour); err != nil {
				t.Errorf("Heartbeat: %v", err)
				return
			}
			beats.Add(1)
		}
	})
	answered := make(chan struct{})
	go func() { // client answers whatever is outstanding until told to stop
		defer close(answered)
		for answering.Load() {
			cur, err := ms[3].Get(ctx, owner, tk.ID)
			if err != nil {
				t.Errorf("Get: %v", err)
				return
			}
			for k := range cur.InputRequests {
				if err := ms[3].Update(ctx, owner, tk.ID, map[string]json.RawMessage{k: json.RawMessage(`"answer to ` + k + `"`)}); err != nil {
					t.Errorf("Update: %v", err)
					return
				}
			}
		}
	}()
	wg.Wait()
	answering.Store(false)
	<-answered
	// The client cancels while the worker completes: both are recorded.
	var fin sync.WaitGroup
	fin.Go(func() {
		if err := ms[3].Cancel(ctx, owner, tk.ID); err != nil {
			t.Errorf("Cancel: %v", err)
		}
	})
	fin.Go(func() {
		if err := ms[0].Finish(ctx, l, tasks.Completed, json.RawMessage(`{"content":[]}`), "done"); err != nil {
			t.Errorf("Finish: %v", err)
		}
	})
	fin.Wait()
	if t.Failed() {
		return
	}
	final, err := ms[2].Get(ctx, owner, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if final.Status != tasks.Completed {
		t.Fatalf("final status %s", final.Status)
	}
	// Every asked key is either answered (with its own answer) or was still
	// outstanding when the task completed (Finish clears those).
	for k, v := range final.InputResponses {
		if string(v) != `"answer to `+k+`"` || !strings.HasPrefix(k, "k") {
			t.Fatalf("answer %s = %s", k, v)
		}
	}
	// Version: 1 at creation, +1 claim, +1 per ask, message and heartbeat,
	// +1 per answer taken, +1 for the cancel intent (recorded only if it
	// came first: a cancel of a completed task changes nothing), +1 finish.
	cancelFirst := int64(0)
	if final.CancelRequested {
		cancelFirst = 1
	}
	want := 1 + 1 + asks.Load() + messages.Load() + beats.Load() + int64(len(final.InputResponses)) + cancelFirst + 1
	if final.Version != want {
		t.Fatalf("version %d, want %d (asks %d, messages %d, beats %d, answers %d, cancel first %v): an update was lost",
			final.Version, want, asks.Load(), messages.Load(), beats.Load(), len(final.InputResponses), final.CancelRequested)
	}
	tr, err := ms[1].Transitions(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	from := tasks.Working
	for i, x := range tr {
		if x.From != from || !x.From.CanBecome(x.To) || (i > 0 && x.Version <= tr[i-1].Version) {
			t.Fatalf("audit trail breaks at %d: %+v", i, tr)
		}
		from = x.To
	}
	if from != tasks.Completed || tr[len(tr)-1].Version != final.Version {
		t.Fatalf("audit trail ends at %s v%d, task is %s v%d", from, tr[len(tr)-1].Version, final.Status, final.Version)
	}
	if len(final.InputResponses) == 0 {
		t.Log("note: no answer was taken during the race")
	}
	t.Logf("version %d: %d asks, %d messages, %d heartbeats, %d answers, %d transitions",
		final.Version, asks.Load(), messages.Load(), beats.Load(), len(final.InputResponses), len(tr))
}

// TestSweepRunsOnce: replicas sweeping the same expired tasks at once delete
// each exactly once; their counts add up.
func TestSweepRunsOnce(t *testing.T) {
	clock := taskstest.NewClock()
	ms := replicas(t, 4, clock)
	ctx := t.Context()
	const n = 1200 // more than two sweep batches
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for range n / 4 {
				if _, err := ms[w].Create(ctx, tasks.NewTask{Owner: owner, ToolName: "x", TTL: time.Minute}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	keep, err := ms[0].Create(ctx, tasks.NewTask{Owner: owner, ToolName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	clock.Advance(time.Minute)
	var total atomic.Int64
	start := make(chan struct{})
	for _, m := range ms {
		wg.Go(func() {
			<-start
			n, err := m.Sweep(ctx, clock.Now())
			if err != nil {
				t.Error(err)
			}
			total.Add(int64(n))
		})
	}
	close(start)
	wg.Wait()
	if total.Load() != n {
		t.Fatalf("sweeps deleted %d in total, want %d", total.Load(), n)
	}
	var left int
	if err := ms[0].Pool().QueryRow(ctx, `SELECT count(*) FROM tasks`).Scan(&left); err != nil || left != 1 {
		t.Fatalf("%d tasks left (%v), want 1", left, err)
	}
	if _, err := ms[1].Get(ctx, owner, keep.ID); err != nil {
		t.Fatalf("unlimited task swept: %v", err)
	}
}

// TestInvalidIDsAreNotFound: ids PostgreSQL could not even compare (invalid
// UTF-8, NUL) are not found, exactly like unknown ones, on every path.
func TestInvalidIDsAreNotFound(t *testing.T) {
	m := open(t, newSchema(t), postgres.Options{})
	ctx := t.Context()
	_, unknown := m.Get(ctx, owner, "AAAAAAAAAAAAAAAAAAAAAAAAAA")
	for _, id := range []string{"\xff\xfe", "a\x00b", strings.Repeat("A", 5000), ""} {
		_, gerr := m.Get(ctx, owner, id)
		uerr := m.Update(ctx, owner, id, map[string]json.RawMessage{"k": json.RawMessage(`1`)})
		cerr := m.Cancel(ctx, owner, id)
		_, clerr := m.Claim(ctx, tasks.Claim{TaskID: id, Owner: "w", For: time.Minute})
		ferr := m.Finish(ctx, tasks.Lease{TaskID: id, Owner: "w", Token: 1}, tasks.Cancelled, nil, "")
		for op, err := range map[string]error{"get": gerr, "update": uerr, "cancel": cerr, "claim": clerr, "finish": ferr} {
			if err != tasks.ErrNotFound || err.Error() != unknown.Error() {
				t.Errorf("%s(%q) = %v, want exactly %v", op, id, err, unknown)
			}
		}
	}
}

// TestDatabaseRefusesIllegalTransitions: the schema itself keeps terminal
// tasks final and statuses valid, and audits every status change.
func TestDatabaseRefusesIllegalTransitions(t *testing.T) {
	m := open(t, newSchema(t), postgres.Options{})
	ctx := t.Context()
	tk, err := m.Create(ctx, tasks.NewTask{Owner: owner, ToolName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Claim(ctx, tasks.Claim{TaskID: tk.ID, Owner: "w", For: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Finish(ctx, c.Lease(), tasks.Completed, json.RawMessage(`{}`), ""); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE tasks SET status = 'working' WHERE id = $1`,
		`UPDATE tasks SET result = '\x7b7d' WHERE id = $1`,
	} {
		_, err := m.Pool().Exec(ctx, q, tk.ID)
		if err == nil || !strings.Contains(err.Error(), "illegal task transition") {
			t.Errorf("%s: %v, want the trigger to refuse", q, err)
		}
	}
	tk2, err := m.Create(ctx, tasks.NewTask{Owner: owner, ToolName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Pool().Exec(ctx, `UPDATE tasks SET status = 'bogus' WHERE id = $1`, tk2.ID); err == nil {
		t.Error("unknown status accepted")
	}
	tr, err := m.Transitions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) != 1 || tr[0].TaskID != tk.ID || tr[0].From != tasks.Working || tr[0].To != tasks.Completed || tr[0].Version != 3 {
		t.Fatalf("audit trail %+v", tr)
	}
	// Deleting a task (the sweep) deletes its trail.
	if _, err := m.Pool().Exec(ctx, `DELETE FROM tasks WHERE id = $1`, tk.ID); err != nil {
		t.Fatal(err)
	}
	if tr, _ := m.Transitions(ctx, tk.ID); len(tr) != 0 {
		t.Fatalf("trail of a deleted task: %+v", tr)
	}
}

// TestMigrationsSerialize: replicas starting at once on an empty schema all
// succeed and apply each migration exactly once; reopening is a no-op; a
// schema from a newer build is refused.
func TestMigrationsSerialize(t *testing.T) {
	schema := newSchema(t)
	dsn := testDSN(t)
	const n = 6
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			m, err := postgres.Open(t.Context(), dsn, postgres.Options{Schema: schema, MaxConns: 2})
			errs[i] = err
			if err == nil {
				m.Close()
			}
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	m := open(t, schema, postgres.Options{})
	rows, err := m.Pool().Query(t.Context(), `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	var versions []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	want := slices.Collect(func(yield func(int) bool) {
		for v := 1; v <= postgres.SchemaVersion(); v++ {
			if !yield(v) {
				return
			}
		}
	})
	if !slices.Equal(versions, want) {
		t.Fatalf("schema_migrations %v, want %v", versions, want)
	}
	if _, err := m.Pool().Exec(t.Context(), `INSERT INTO schema_migrations (version, name) VALUES ($1, 'from the future')`, postgres.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	if m2, err := postgres.Open(t.Context(), dsn, postgres.Options{Schema: schema}); err == nil || !strings.Contains(err.Error(), "newer") {
		if err == nil {
			m2.Close()
		}
		t.Fatalf("open of a newer schema: %v, want refusal", err)
	}
}

// TestSchemasAreIsolated: managers on different schemas of one database see
// nothing of each other.
func TestSchemasAreIsolated(t *testing.T) {
	a := open(t, newSchema(t), postgres.Options{})
	b := open(t, newSchema(t), postgres.Options{})
	tk, err := a.Create(t.Context(), tasks.NewTask{Owner: owner, ToolName: "x", Params: json.RawMessage(`{"b": [1, 2]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(t.Context(), owner, tk.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("other schema: %v", err)
	}
	got, err := a.Get(t.Context(), owner, tk.ID)
	if err != nil || string(got.Params) != `{"b": [1, 2]}` {
		t.Fatalf("params not byte-identical: %s %v", got.Params, err)
	}
}

// TestUnstorableTextIsInvalid: text PostgreSQL cannot store (NUL, invalid
// UTF-8) is refused as ErrInvalid and changes nothing.
func TestUnstorableTextIsInvalid(t *testing.T) {
	m := open(t, newSchema(t), postgres.Options{})
	ctx := t.Context()
	for _, nt := range []tasks.NewTask{
		{Owner: tasks.Principal{Subject: "a\x00b"}, ToolName: "x"},
		{Owner: owner, ToolName: "x\xff"},
		{Owner: owner, ToolName: "x", StatusMessage: "nul\x00"},
	} {
		if _, err := m.Create(ctx, nt); !errors.Is(err, tasks.ErrInvalid) {
			t.Errorf("Create(%+v): %v, want ErrInvalid", nt, err)
		}
	}
	tk, err := m.Create(ctx, tasks.NewTask{Owner: owner, ToolName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Claim(ctx, tasks.Claim{TaskID: tk.ID, Owner: "w\x00", For: time.Minute}); !errors.Is(err, tasks.ErrInvalid) {
		t.Fatalf("claim by an unstorable owner: %v", err)
	}
	c, err := m.Claim(ctx, tasks.Claim{TaskID: tk.ID, Owner: "w", For: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetStatusMessage(ctx, c.Lease(), "\xff"); !errors.Is(err, tasks.ErrInvalid) {
		t.Fatalf("unstorable status message: %v", err)
	}
	if got, err := m.Get(ctx, owner, tk.ID); err != nil || got.Version != c.Version {
		t.Fatalf("refused writes changed the task: %+v %v", got, err)
	}
}
