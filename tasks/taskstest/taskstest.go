// Package taskstest is the contract every [tasks.Manager] must pass: the
// state machine, authorization (unknown ≡ unauthorized), input rounds,
// cancelation, fenced leases, recovery listing, TTL retention, change
// publication, handler checkpoints and the sealed secret's lifetime. Write a manager, then call [Run] from its tests:
//
//	func TestContract(t *testing.T) {
//		taskstest.Run(t, func(t *testing.T, o tasks.Options) tasks.Manager { ... })
//	}
//
// The factory must return a fresh, empty manager that uses o.Now as its clock
// and o.Publisher for change events.
package taskstest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/tasks"
)

// Factory builds a fresh manager for one subtest.
type Factory func(t *testing.T, o tasks.Options) tasks.Manager

// Clock is a manual clock for managers under test.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at a fixed instant with nanosecond detail.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 8, 1, 10, 30, 0, 123456789, time.UTC)}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

var (
	alice = tasks.Principal{Subject: "alice", Tenant: "acme"}
	bob   = tasks.Principal{Subject: "bob", Tenant: "acme"}
	// aliceElsewhere is the same subject in another tenant: a different caller.
	aliceElsewhere = tasks.Principal{Subject: "alice", Tenant: "globex"}
)

type env struct {
	t     *testing.T
	m     tasks.Manager
	clock *Clock
	bus   *tasks.Bus
	ctx   context.Context
}

func newEnv(t *testing.T, f Factory) *env {
	t.Helper()
	c := NewClock()
	bus := tasks.NewBus(1024)
	m := f(t, tasks.Options{Now: c.Now, Publisher: bus})
	return &env{t: t, m: m, clock: c, bus: bus, ctx: t.Context()}
}

func (e *env) create(nt tasks.NewTask) tasks.Task {
	e.t.Helper()
	if nt.ToolName == "" {
		nt.ToolName = "build_report"
	}
	if nt.Owner == (tasks.Principal{}) {
		nt.Owner = alice
	}
	tk, err := e.m.Create(e.ctx, nt)
	if err != nil {
		e.t.Fatalf("Create: %v", err)
	}
	return tk
}

func (e *env) get(p tasks.Principal, id string) tasks.Task {
	e.t.Helper()
	tk, err := e.m.Get(e.ctx, p, id)
	if err != nil {
		e.t.Fatalf("Get(%s): %v", id, err)
	}
	return tk
}

func (e *env) claim(tk tasks.Task, owner string) tasks.Task {
	e.t.Helper()
	c, err := e.m.Claim(e.ctx, tasks.Claim{TaskID: tk.ID, Owner: owner, Token: tk.LeaseToken, For: time.Minute})
	if err != nil {
		e.t.Fatalf("Claim: %v", err)
	}
	return c
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func sortedKeys(m map[string]json.RawMessage) []string {
	return slices.Sorted(maps.Keys(m))
}

// Run runs the whole contract against managers built by f.
func Run(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, f Factory)
	}{
		{"CreateThenGet", testCreateGet},
		{"IDs", testIDs},
		{"CreateInvalid", testCreateInvalid},
		{"UnknownEqualsUnauthorized", testCrossPrincipal},
		{"InputRounds", testInputRounds},
		{"InvalidInputResponse", testInvalidResponse},
		{"TerminalIsFinal", testTerminal},
		{"Cancel", testCancel},
		{"LeasesAreFenced", testLeases},
		{"Orphans", testOrphans},
		{"TTLAndSweep", testTTL},
		{"Publishes", testPublish},
		{"StatusMessage", testStatusMessage},
		{"ReturnsCopies", testCopies},
		{"Concurrent", testConcurrent},
		{"Checkpoints", testCheckpoints},
		{"SecretLivesWithTheTask", testSecret},
		{"CountActive", testCountActive},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, f) })
	}
}

func testCreateGet(t *testing.T, f Factory) {
	e := newEnv(t, f)
	created := e.create(tasks.NewTask{
		Owner: alice, ToolName: "build_report", Params: raw(`{"name":"build_report","arguments":{"quarter":"Q3"}}`),
		Idempotent: true, TTL: time.Hour, PollInterval: 5 * time.Second, StatusMessage: "Report generation started",
	})
	got := e.get(alice, created.ID)
	for _, tk := range []tasks.Task{created, got} {
		if tk.ID != created.ID || tk.Owner != alice || tk.ToolName != "build_report" || tk.Status != tasks.Working ||
			tk.StatusMessage != "Report generation started" || tk.TTL != time.Hour || tk.PollInterval != 5*time.Second ||
			!tk.Idempotent || tk.LeaseToken != 0 || tk.LeaseOwner != "" || tk.CancelRequested || tk.Version < 1 {
			t.Fatalf("unexpected task %+v", tk)
		}
		if !tk.CreatedAt.Equal(e.clock.Now()) || !tk.LastUpdatedAt.Equal(e.clock.Now()) {
			t.Fatalf("times %v %v, want %v", tk.CreatedAt, tk.LastUpdatedAt, e.clock.Now())
		}
		if !sameJSON(tk.Params, raw(`{"name":"build_report","arguments":{"quarter":"Q3"}}`)) {
			t.Fatalf("params %s", tk.Params)
		}
		if tk.Result != nil || tk.Error != nil || len(tk.InputRequests) != 0 {
			t.Fatalf("fresh task carries payloads: %+v", tk)
		}
	}
	unlimited := e.create(tasks.NewTask{})
	if got := e.get(alice, unlimited.ID); got.TTL != 0 || !got.ExpiresAt().IsZero() {
		t.Fatalf("unlimited TTL stored as %v", got.TTL)
	}
}

func testIDs(t *testing.T, f Factory) {
	e := newEnv(t, f)
	seen := map[string]bool{}
	for range 200 {
		id := e.create(tasks.NewTask{}).ID
		if len(id) < 22 || seen[id] {
			t.Fatalf("id %q too short or repeated", id)
		}
		seen[id] = true
	}
}

func testCreateInvalid(t *testing.T, f Factory) {
	e := newEnv(t, f)
	for _, nt := range []tasks.NewTask{
		{Owner: alice},
		{Owner: alice, ToolName: "x", Params: raw(`{"broken`)},
		{Owner: alice, ToolName: "x", TTL: -time.Second},
	} {
		if _, err := e.m.Create(e.ctx, nt); !errors.Is(err, tasks.ErrInvalid) {
			t.Errorf("Create(%+v) = %v, want ErrInvalid", nt, err)
		}
	}
}

func testCrossPrincipal(t *testing.T, f Factory) {
	e := newEnv(t, f)
	tk := e.create(tasks.NewTask{Owner: alice})
	e.claim(tk, "w1")
	owned := e.get(alice, tk.ID)
	_, unknownErr := e.m.Get(e.ctx, alice, "AAAAAAAAAAAAAAAAAAAAAAAAAA")
	if !errors.Is(unknownErr, tasks.ErrNotFound) {
		t.Fatalf("unknown id: %v", unknownErr)
	}
	resp := map[string]json.RawMessage{"k": raw(`{}`)}
	cases := []struct {
		who tasks.Principal
		id  string
	}{
		{bob, tk.ID},
		{aliceElsewhere, tk.ID},
		{tasks.Principal{}, tk.ID},
		{alice, "AAAAAAAAAAAAAAAAAAAAAAAAAA"},
		{alice, ""},
		{bob, "no-such-task"},
	}
	for _, c := range cases {
		_, gerr := e.m.Get(e.ctx, c.who, c.id)
		uerr := e.m.Update(e.ctx, c.who, c.id, resp)
		cerr := e.m.Cancel(e.ctx, c.who, c.id)
		for op, err := range map[string]error{"get": gerr, "update": uerr, "cancel": cerr} {
			if !errors.Is(err, tasks.ErrNotFound) || err.Error() != unknownErr.Error() {
				t.Errorf("%s by %+v on %q: %v, want exactly %v", op, c.who, c.id, err, unknownErr)
			}
		}
	}
	after := e.get(alice, tk.ID)
	if after.CancelRequested || after.Status != tasks.Working || after.Version != owned.Version {
		t.Fatalf("foreign calls changed the task: %+v", after)
	}
}

func testInputRounds(t *testing.T, f Factory) {
	e := newEnv(t, f)
	tk := e.claim(e.create(tasks.NewTask{}), "w1")
	l := tk.Lease()
	reqA := raw(`{"method":"elicitation/create","params":{"message":"a?"}}`)
	reqB := raw(`{"method":"elicitation/create","params":{"message":"b?"}}`)
	got, err := e.m.RequireInput(e.ctx, l, map[string]json.RawMessage{"a": reqA, "b": reqB}, "need a and b")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != tasks.InputRequired || !slices.Equal(sortedKeys(got.InputRequests), []string{"a", "b"}) {
		t.Fatalf("after RequireInput: %+v", got)
	}
	polled := e.get(alice, tk.ID)
	if polled.Status != tasks.InputRequired || polled.StatusMessage != "need a and b" || !sameJSON(polled.InputRequests["a"], reqA) {
		t.Fatalf("polled: %+v", polled)
	}
	// Partial answer plus an unknown key.
	if err := e.m.Update(e.ctx, alice, tk.ID, map[string]json.RawMessage{"a": raw(`{"action":"accept","content":{"x":1}}`), "zzz": raw(`1`)}); err != nil {
		t.Fatal(err)
	}
	polled = e.get(alice, tk.ID)
	if polled.Status != tasks.InputRequired || !slices.Equal(sortedKeys(polled.InputRequests), []string{"b"}) {
		t.Fatalf("after partial update: %+v", polled)
	}
	if _, ok := polled.InputResponses["zzz"]; ok {
		t.Fatal("unknown key was stored")
	}
	// A consumed key is ignored.
	if err := e.m.Update(e.ctx, alice, tk.ID, map[string]json.RawMessage{"a": raw(`{"action":"decline"}`)}); err != nil {
		t.Fatal(err)
	}
	polled = e.get(alice, tk.ID)
	if !sameJSON(polled.InputResponses["a"], raw(`{"action":"accept","content":{"x":1}}`)) {
		t.Fatalf("consumed key overwritten: %s", polled.InputResponses["a"])
	}
	if err := e.m.Update(e.ctx, alice, tk.ID, map[string]json.RawMessage{"b": raw(`{"action":"accept"}`)}); err != nil {
		t.Fatal(err)
	}
	polled = e.get(alice, tk.ID)
	if polled.Status != tasks.Working || len(polled.InputRequests) != 0 || len(polled.InputResponses) != 2 {
		t.Fatalf("after full answer: %+v", polled)
	}
	// Updates on a working task are ignored.
	v := polled.Version
	if err := e.m.Update(e.ctx, alice, tk.ID, map[string]json.RawMessage{"b": raw(`2`)}); err != nil {
		t.Fatal(err)
	}
	if e.get(alice, tk.ID).Version != v {
		t.Fatal("update on a working task changed it")
	}
	// A second round: an answered key is not asked again.
	got, err = e.m.RequireInput(e.ctx, l, map[string]json.RawMessage{"a": reqA, "c": raw(`{"method":"elicitation/create"}`)}, "need c")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != tasks.InputRequired || !slices.Equal(sortedKeys(got.InputRequests), []string{"c"}) {
		t.Fatalf("second round: %+v", got)
	}
	// Asking only answered keys leaves the task working.
	got, err = e.m.RequireInput(e.ctx, l, map[string]json.RawMessage{"a": reqA}, "")
	if err != nil || got.Status != tasks.InputRequired || len(got.InputRequests) != 1 {
		t.Fatalf("re-ask of answered key: %+v %v", got, err)
	}
	if _, err := e.m.RequireInput(e.ctx, l, nil, ""); !errors.Is(err, tasks.ErrInvalid) {
		t.Fatalf("empty RequireInput: %v", err)
	}
	if _, err := e.m.RequireInput(e.ctx, l, map[string]json.RawMessage{"d": raw(`{bad`)}, ""); !errors.Is(err, tasks.ErrInvalid) {
		t.Fatalf("bad JSON RequireInput: %v", err)
	}
	if err := e.m.Finish(e.ctx, l, tasks.Completed, raw(`{"content":[],"isError":false}`), ""); err != nil {
		t.Fatal(err)
	}
	final := e.get(alice, tk.ID)
	if final.Status != tasks.Completed || len(final.InputRequests) != 0 {
		t.Fatalf("completed with outstanding input: %+v", final)
	}
}

func testInvalidResponse(t *testing.T, f Factory) {
	e := newEnv(t, f)
	tk := e.claim(e.create(tasks.NewTask{}), "w1")
	if _, err := e.m.RequireInput(e.ctx, tk.Lease(), map[string]json.RawMessage{"a": raw(`{}`)}, ""); err != nil {
		t.Fatal(err)
	}
	err := e.m.Update(e.ctx, alice, tk.ID, map[string]json.RawMessage{"a": raw(`{not json`)})
	if !errors.Is(err, tasks.ErrInvalid) {
		t.Fatalf("Update with bad JSON: %v", err)
	}
	if got := e.get(alice, tk.ID); got.Status != tasks.InputRequired || len(got.InputResponses) != 0 {
		t.Fatalf("bad answer was stored: %+v", got)
	}
}

func testTerminal(t *testing.T, f Factory) {
	result := raw(`{"resultType":"complete","content":[{"type":"text","text":"Upstream rejected"}],"isError":true}`)
	rpcErr := raw(`{"code":-32603,"message":"API rate limit exceeded"}`)
	for _, tc := range []struct {
		status  tasks.Status
		payload json.RawMessage
		input   bool // reach it from input_required
	}{
		{tasks.Completed, result, false},
		{tasks.Failed, rpcErr, false},
		{tasks.Cancelled, nil, false},
		{tasks.Completed, result, true},
		{tasks.Failed, rpcErr, true},
		{tasks.Cancelled, nil, true},
	} {
		t.Run(string(tc.status), func(t *testing.T) {
			e := newEnv(t, f)
			tk := e.claim(e.create(tasks.NewTask{}), "w1")
			l := tk.Lease()
			if tc.input {
				if _, err := e.m.RequireInput(e.ctx, l, map[string]json.RawMessage{"q": raw(`{}`)}, ""); err != nil {
					t.Fatal(err)
				}
			}
			e.clock.Advance(time.Second)
			if err := e.m.Finish(e.ctx, l, tc.status, tc.payload, "done"); err != nil {
				t.Fatalf("Finish: %v", err)
			}
			done := e.get(alice, tk.ID)
			if done.Status != tc.status || !done.LastUpdatedAt.Equal(e.clock.Now()) || len(done.InputRequests) != 0 {
				t.Fatalf("after finish: %+v", done)
			}
			if (done.Result != nil) != (tc.status == tasks.Completed) || (done.Error != nil) != (tc.status == tasks.Failed) {
				t.Fatalf("payloads on %s: result=%s error=%s", tc.status, done.Result, done.Error)
			}
			if tc.status == tasks.Completed && !sameJSON(done.Result, result) || tc.status == tasks.Failed && !sameJSON(done.Error, rpcErr) {
				t.Fatalf("payload changed: %s %s", done.Result, done.Error)
			}
			e.clock.Advance(time.Second)
			for _, next := range []tasks.Status{tasks.Completed, tasks.Failed, tasks.Cancelled} {
				if err := e.m.Finish(e.ctx, l, next, raw(`{}`), ""); !errors.Is(err, tasks.ErrIllegalTransition) {
					t.Errorf("%s → %s: %v, want ErrIllegalTransition", tc.status, next, err)
				}
			}
			if _, err := e.m.RequireInput(e.ctx, l, map[string]json.RawMessage{"z": raw(`{}`)}, ""); !errors.Is(err, tasks.ErrIllegalTransition) {
				t.Errorf("RequireInput on %s: %v", tc.status, err)
			}
			if _, err := e.m.Claim(e.ctx, tasks.Claim{TaskID: tk.ID, Owner: "w2", Token: done.LeaseToken, For: time.Minute}); !errors.Is(err, tasks.ErrIllegalTransition) {
				t.Errorf("Claim on %s: %v", tc.status, err)
			}
			if err := e.m.Update(e.ctx, alice, tk.ID, map[string]json.RawMessage{"q": raw(`{}`)}); err != nil {
				t.Errorf("Update on %s: %v", tc.status, err)
			}
			if err := e.m.Cancel(e.ctx, alice, tk.ID); err != nil {
				t.Errorf("Cancel on %s: %v (must be idempotent)", tc.status, err)
			}
			if again := e.get(alice, tk.ID); again.Status != tc.status || again.Version != done.Version {
				t.Fatalf("terminal task changed: %+v", again)
			}
		})
	}
	t.Run("FinishNonTerminal", func(t *testing.T) {
		e := newEnv(t, f)
		tk := e.claim(e.create(tasks.NewTask{}), "w1")
		for _, s := range []tasks.Status{tasks.Working, tasks.InputRequired, "bogus"} {
			if err := e.m.Finish(e.ctx, tk.Lease(), s, raw(`{}`), ""); !errors.Is(err, tasks.ErrIllegalTransition) {
				t.Errorf("Finish(%s): %v", s, err)
			}
		}
		if err := e.m.Finish(e.ctx, tk.Lease(), tasks.Completed, raw(`{oops`), ""); !errors.Is(err, tasks.ErrInvalid) {
			t.Errorf("Finish with bad JSON: %v", err)
		}
		if got := e.get(alice, tk.ID); got.Status != tasks.Working {
			t.Fatalf("status %s", got.Status)
		}
	})
}

func testCancel(t *testing.T, f Factory) {
	t.Run("Unclaimed", func(t *testing.T) {
		e := newEnv(t, f)
		tk := e.create(tasks.NewTask{})
		if err := e.m.Cancel(e.ctx, alice, tk.ID); err != nil {
			t.Fatal(err)
		}
		if got := e.get(alice, tk.ID); got.Status != tasks.Cancelled || got.StatusMessage == "" {
			t.Fatalf("unclaimed task not cancelled at once: %+v", got)
		}
	})
	t.Run("LiveWorker", func(t *testing.T) {
		e := newEnv(t, f)
		tk := e.claim(e.create(tasks.NewTask{}), "w1")
		if err := e.m.Cancel(e.ctx, alice, tk.ID); err != nil {
			t.Fatal(err)
		}
		got := e.get(alice, tk.ID)
		if got.Status != tasks.Working || !got.CancelRequested {
			t.Fatalf("live task: %+v", got)
		}
		if err := e.m.Cancel(e.ctx, alice, tk.ID); err != nil {
			t.Fatalf("second cancel: %v", err)
		}
		hb, err := e.m.Heartbeat(e.ctx, tk.Lease(), time.Minute)
		if err != nil || !hb.CancelRequested {
			t.Fatalf("worker does not see intent: %+v %v", hb, err)
		}
		if err := e.m.Finish(e.ctx, tk.Lease(), tasks.Cancelled, nil, "Cancelled by client"); err != nil {
			t.Fatal(err)
		}
		if got := e.get(alice, tk.ID); got.Status != tasks.Cancelled {
			t.Fatalf("status %s", got.Status)
		}
	})
	t.Run("WorkWinsRace", func(t *testing.T) {
		e := newEnv(t, f)
		tk := e.claim(e.create(tasks.NewTask{}), "w1")
		if err := e.m.Cancel(e.ctx, alice, tk.ID); err != nil {
			t.Fatal(err)
		}
		if err := e.m.Finish(e.ctx, tk.Lease(), tasks.Completed, raw(`{"content":[]}`), ""); err != nil {
			t.Fatalf("completing despite intent: %v", err)
		}
		if got := e.get(alice, tk.ID); got.Status != tasks.Completed {
			t.Fatalf("status %s", got.Status)
		}
	})
	t.Run("DeadWorker", func(t *testing.T) {
		e := newEnv(t, f)
		tk := e.claim(e.create(tasks.NewTask{}), "w1")
		if _, err := e.m.RequireInput(e.ctx, tk.Lease(), map[string]json.RawMessage{"q": raw(`{}`)}, ""); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * time.Minute) // lease lapsed
		if err := e.m.Cancel(e.ctx, alice, tk.ID); err != nil {
			t.Fatal(err)
		}
		got := e.get(alice, tk.ID)
		if got.Status != tasks.Cancelled || len(got.InputRequests) != 0 {
			t.Fatalf("task of a dead worker: %+v", got)
		}
		if err := e.m.Finish(e.ctx, tk.Lease(), tasks.Completed, raw(`{}`), ""); !errors.Is(err, tasks.ErrIllegalTransition) {
			t.Fatalf("late worker write: %v", err)
		}
	})
}

func testLeases(t *testing.T, f Factory) {
	e := newEnv(t, f)
	tk := e.create(tasks.NewTask{})
	if _, err := e.m.Claim(e.ctx, tasks.Claim{TaskID: "AAAAAAAAAAAAAAAAAAAAAAAAAA", Owner: "w1", For: time.Minute}); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("claim unknown: %v", err)
	}
	if _, err := e.m.Claim(e.ctx, tasks.Claim{TaskID: tk.ID, Owner: "w1", Token: 7, For: time.Minute}); !errors.Is(err, tasks.ErrClaimed) {
		t.Fatalf("claim with wrong token: %v", err)
	}
	first := e.claim(tk, "w1")
	if first.LeaseToken != 1 || first.LeaseOwner != "w1" || !first.LeaseExpiresAt.Equal(e.clock.Now().Add(time.Minute)) {
		t.Fatalf("first claim: %+v", first)
	}
	if stored := e.get(alice, tk.ID); stored.LeaseToken != 1 || stored.LeaseOwner != "w1" {
		t.Fatalf("claim not stored: %+v", stored)
	}
	for _, c := range []tasks.Claim{
		{TaskID: tk.ID, Owner: "w2", Token: 0, For: time.Minute},
		{TaskID: tk.ID, Owner: "w2", Token: 1, For: time.Minute},
	} {
		if _, err := e.m.Claim(e.ctx, c); !errors.Is(err, tasks.ErrClaimed) {
			t.Fatalf("claim of a live lease %+v: %v", c, err)
		}
	}
	// A recoverer that treats every lease as dead (single node at start).
	future := e.clock.Now().Add(24 * time.Hour)
	e.clock.Advance(30 * time.Second)
	if _, err := e.m.Heartbeat(e.ctx, first.Lease(), time.Minute); err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	second, err := e.m.Claim(e.ctx, tasks.Claim{TaskID: tk.ID, Owner: "w2", Token: 1, AsOf: future, For: time.Minute})
	if err != nil || second.LeaseToken != 2 || second.LeaseOwner != "w2" {
		t.Fatalf("takeover: %+v %v", second, err)
	}
	// The old holder is fenced off.
	if _, err := e.m.Heartbeat(e.ctx, first.Lease(), time.Minute); !errors.Is(err, tasks.ErrLeaseLost) {
		t.Fatalf("stale heartbeat: %v", err)
	}
	if err := e.m.Finish(e.ctx, first.Lease(), tasks.Completed, raw(`{}`), ""); !errors.Is(err, tasks.ErrLeaseLost) {
		t.Fatalf("stale finish: %v", err)
	}
	if _, err := e.m.RequireInput(e.ctx, first.Lease(), map[string]json.RawMessage{"k": raw(`{}`)}, ""); !errors.Is(err, tasks.ErrLeaseLost) {
		t.Fatalf("stale RequireInput: %v", err)
	}
	if err := e.m.SetStatusMessage(e.ctx, first.Lease(), "x"); !errors.Is(err, tasks.ErrLeaseLost) {
		t.Fatalf("stale SetStatusMessage: %v", err)
	}
	// Natural expiry lets a third worker in.
	e.clock.Advance(2 * time.Minute)
	third, err := e.m.Claim(e.ctx, tasks.Claim{TaskID: tk.ID, Owner: "w3", Token: 2, For: time.Minute})
	if err != nil || third.LeaseToken != 3 {
		t.Fatalf("claim after expiry: %+v %v", third, err)
	}
	// Release keeps the token and frees the task.
	if err := e.m.Release(e.ctx, third.Lease()); err != nil {
		t.Fatal(err)
	}
	rel := e.get(alice, tk.ID)
	if rel.LeaseOwner != "" || rel.LeaseToken != 3 || rel.Status != tasks.Working {
		t.Fatalf("after release: %+v", rel)
	}
	if err := e.m.Release(e.ctx, third.Lease()); !errors.Is(err, tasks.ErrLeaseLost) {
		t.Fatalf("double release: %v", err)
	}
}

func testOrphans(t *testing.T, f Factory) {
	e := newEnv(t, f)
	unclaimed := e.create(tasks.NewTask{})
	e.clock.Advance(time.Millisecond)
	lapsed := e.claim(e.create(tasks.NewTask{}), "dead")
	e.clock.Advance(2 * time.Minute)
	live := e.claim(e.create(tasks.NewTask{}), "alive")
	done := e.claim(e.create(tasks.NewTask{}), "w")
	if err := e.m.Finish(e.ctx, done.Lease(), tasks.Failed, raw(`{"code":-32603,"message":"x"}`), ""); err != nil {
		t.Fatal(err)
	}
	ids := func(ts []tasks.Task) []string {
		var out []string
		for _, tk := range ts {
			out = append(out, tk.ID)
		}
		return out
	}
	got, err := e.m.Orphans(e.ctx, e.clock.Now(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{unclaimed.ID, lapsed.ID}; !slices.Equal(ids(got), want) {
		t.Fatalf("orphans now = %v, want %v (oldest first)", ids(got), want)
	}
	if got[1].LeaseToken != 1 || got[1].LeaseOwner != "dead" {
		t.Fatalf("orphan lease fields: %+v", got[1])
	}
	got, _ = e.m.Orphans(e.ctx, e.clock.Now().Add(time.Hour), 100)
	if want := []string{unclaimed.ID, lapsed.ID, live.ID}; !slices.Equal(ids(got), want) {
		t.Fatalf("orphans as of later = %v, want %v", ids(got), want)
	}
	got, _ = e.m.Orphans(e.ctx, e.clock.Now(), 1)
	if len(got) != 1 || got[0].ID != unclaimed.ID {
		t.Fatalf("limit: %v", ids(got))
	}
}

func testTTL(t *testing.T, f Factory) {
	e := newEnv(t, f)
	short := e.create(tasks.NewTask{TTL: time.Minute})
	forever := e.create(tasks.NewTask{})
	long := e.create(tasks.NewTask{TTL: time.Hour})
	e.clock.Advance(time.Minute - time.Millisecond)
	e.get(alice, short.ID) // not before its TTL
	if n, err := e.m.Sweep(e.ctx, e.clock.Now()); err != nil || n != 0 {
		t.Fatalf("early sweep removed %d (%v)", n, err)
	}
	e.clock.Advance(time.Millisecond)
	_, err := e.m.Get(e.ctx, alice, short.ID)
	if !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("expired task still readable: %v", err)
	}
	if err := e.m.Cancel(e.ctx, alice, short.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("cancel of expired task: %v", err)
	}
	if o, _ := e.m.Orphans(e.ctx, e.clock.Now(), 10); len(o) != 2 {
		t.Fatalf("orphans include expired task: %d", len(o))
	}
	if n, err := e.m.Sweep(e.ctx, e.clock.Now()); err != nil || n != 1 {
		t.Fatalf("sweep removed %d (%v), want 1", n, err)
	}
	e.get(alice, forever.ID)
	e.get(alice, long.ID)
	e.clock.Advance(1000 * time.Hour)
	if n, _ := e.m.Sweep(e.ctx, e.clock.Now()); n != 1 {
		t.Fatalf("second sweep removed %d, want 1", n)
	}
	e.get(alice, forever.ID)
}

func drain(ch <-chan string) []string {
	var out []string
	for {
		select {
		case id := <-ch:
			out = append(out, id)
		default:
			return out
		}
	}
}

func testPublish(t *testing.T, f Factory) {
	e := newEnv(t, f)
	ch, cancel := e.bus.Subscribe(e.ctx)
	defer cancel()
	tk := e.create(tasks.NewTask{})
	if got := drain(ch); !slices.Equal(got, []string{tk.ID}) {
		t.Fatalf("create published %v", got)
	}
	c := e.claim(tk, "w")
	if _, err := e.m.Heartbeat(e.ctx, c.Lease(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := drain(ch); len(got) != 0 {
		t.Fatalf("claim/heartbeat published %v", got)
	}
	steps := []struct {
		name string
		fn   func() error
	}{
		{"RequireInput", func() error {
			_, err := e.m.RequireInput(e.ctx, c.Lease(), map[string]json.RawMessage{"k": raw(`{}`)}, "")
			return err
		}},
		{"Update", func() error { return e.m.Update(e.ctx, alice, tk.ID, map[string]json.RawMessage{"k": raw(`{}`)}) }},
		{"Cancel", func() error { return e.m.Cancel(e.ctx, alice, tk.ID) }},
		{"Finish", func() error { return e.m.Finish(e.ctx, c.Lease(), tasks.Cancelled, nil, "") }},
	}
	for _, s := range steps {
		if err := s.fn(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := drain(ch); !slices.Contains(got, tk.ID) {
			t.Fatalf("%s published %v", s.name, got)
		}
	}
	// Foreign and ignored calls publish nothing.
	_ = e.m.Cancel(e.ctx, bob, tk.ID)
	_ = e.m.Update(e.ctx, alice, tk.ID, map[string]json.RawMessage{"k": raw(`{}`)})
	if got := drain(ch); len(got) != 0 {
		t.Fatalf("no-op calls published %v", got)
	}
}

func testStatusMessage(t *testing.T, f Factory) {
	e := newEnv(t, f)
	tk := e.claim(e.create(tasks.NewTask{}), "w")
	e.clock.Advance(time.Second)
	if err := e.m.SetStatusMessage(e.ctx, tk.Lease(), "40% done"); err != nil {
		t.Fatal(err)
	}
	got := e.get(alice, tk.ID)
	if got.StatusMessage != "40% done" || !got.LastUpdatedAt.Equal(e.clock.Now()) || !got.CreatedAt.Equal(tk.CreatedAt) {
		t.Fatalf("after SetStatusMessage: %+v", got)
	}
}

func testCopies(t *testing.T, f Factory) {
	e := newEnv(t, f)
	tk := e.claim(e.create(tasks.NewTask{Params: raw(`{"a":1}`)}), "w")
	got, err := e.m.RequireInput(e.ctx, tk.Lease(), map[string]json.RawMessage{"k": raw(`{"x":1}`)}, "")
	if err != nil {
		t.Fatal(err)
	}
	got.InputRequests["k"][2] = 'Z'
	got.InputRequests["extra"] = raw(`1`)
	p := e.get(alice, tk.ID)
	p.Params[2] = 'Z'
	again := e.get(alice, tk.ID)
	if len(again.InputRequests) != 1 || !sameJSON(again.InputRequests["k"], raw(`{"x":1}`)) || !sameJSON(again.Params, raw(`{"a":1}`)) {
		t.Fatalf("store shares memory with callers: %+v", again)
	}
}

func testConcurrent(t *testing.T, f Factory) {
	e := newEnv(t, f)
	const workers, each = 8, 25
	ids := make(chan string, workers*each)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			p := tasks.Principal{Subject: string(rune('a' + w)), Tenant: "t"}
			for range each {
				tk, err := e.m.Create(e.ctx, tasks.NewTask{Owner: p, ToolName: "x"})
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := e.m.Get(e.ctx, p, tk.ID); err != nil {
					t.Errorf("created task not readable: %v", err)
				}
				ids <- tk.ID
			}
		})
	}
	wg.Wait()
	close(ids)
	// Racing claims on each task: exactly one wins.
	for id := range ids {
		var wins atomic.Int32
		var cw sync.WaitGroup
		for w := range 4 {
			cw.Go(func() {
				_, err := e.m.Claim(e.ctx, tasks.Claim{TaskID: id, Owner: string(rune('A' + w)), Token: 0, For: time.Minute})
				if err == nil {
					wins.Add(1)
				} else if !errors.Is(err, tasks.ErrClaimed) {
					t.Errorf("claim: %v", err)
				}
			})
		}
		cw.Wait()
		if wins.Load() != 1 {
			t.Fatalf("task %s claimed %d times", id, wins.Load())
		}
	}
}

func testCheckpoints(t *testing.T, f Factory) {
	e := newEnv(t, f)
	ch, cancel := e.bus.Subscribe(e.ctx)
	defer cancel()
	tk := e.claim(e.create(tasks.NewTask{}), "w")
	drain(ch)
	if err := e.m.Checkpoint(e.ctx, tk.Lease(), tasks.StageInDoubt, nil); err != nil {
		t.Fatal(err)
	}
	if got := e.get(alice, tk.ID); got.Stage != tasks.StageInDoubt || got.Checkpoint != nil {
		t.Fatalf("after Checkpoint(in doubt): stage %q checkpoint %s", got.Stage, got.Checkpoint)
	}
	loc := raw(`{"location":"https://api.example.com/reports/7"}`)
	if err := e.m.Checkpoint(e.ctx, tk.Lease(), tasks.StageResumable, loc); err != nil {
		t.Fatal(err)
	}
	if got := drain(ch); len(got) != 0 {
		t.Fatalf("a checkpoint is not visible to clients, yet it published %v", got)
	}
	// Invalid data, an unknown stage and a stale lease change nothing.
	if err := e.m.Checkpoint(e.ctx, tk.Lease(), tasks.StageFresh, raw(`{nope`)); !errors.Is(err, tasks.ErrInvalid) {
		t.Fatalf("invalid checkpoint JSON: %v", err)
	}
	if err := e.m.Checkpoint(e.ctx, tk.Lease(), "halfway", nil); !errors.Is(err, tasks.ErrInvalid) {
		t.Fatalf("unknown stage: %v", err)
	}
	stale := tk.Lease()
	stale.Token--
	if err := e.m.Checkpoint(e.ctx, stale, tasks.StageFresh, nil); !errors.Is(err, tasks.ErrLeaseLost) {
		t.Fatalf("checkpoint through a stale lease: %v", err)
	}
	// It survives a release and is what recovery lists.
	if err := e.m.Release(e.ctx, tk.Lease()); err != nil {
		t.Fatal(err)
	}
	orphans, err := e.m.Orphans(e.ctx, e.clock.Now(), 10)
	if err != nil || len(orphans) != 1 {
		t.Fatalf("orphans %v %v", orphans, err)
	}
	if o := orphans[0]; o.Stage != tasks.StageResumable || !sameJSON(o.Checkpoint, loc) {
		t.Fatalf("orphan lost its checkpoint: stage %q %s", o.Stage, o.Checkpoint)
	}
	// A re-run sees it; the end of the task clears the record, not the stage.
	again := e.claim(orphans[0], "w2")
	if again.Stage != tasks.StageResumable || !sameJSON(again.Checkpoint, loc) {
		t.Fatalf("claim lost the checkpoint: %+v", again)
	}
	if err := e.m.Finish(e.ctx, again.Lease(), tasks.Completed, raw(`{}`), ""); err != nil {
		t.Fatal(err)
	}
	if got := e.get(alice, tk.ID); got.Checkpoint != nil || got.Stage != tasks.StageResumable {
		t.Fatalf("after Finish: stage %q checkpoint %s", got.Stage, got.Checkpoint)
	}
}

func testSecret(t *testing.T, f Factory) {
	e := newEnv(t, f)
	sealed := []byte("\x00sealed\xffbytes")
	finished := e.create(tasks.NewTask{Secret: sealed})
	if !bytes.Equal(finished.Secret, sealed) {
		t.Fatalf("Create returned secret %q", finished.Secret)
	}
	sealed[1] = 'S' // the store keeps its own copy
	c := e.claim(finished, "w")
	if string(c.Secret) != "\x00sealed\xffbytes" {
		t.Fatalf("the worker's claim carries secret %q", c.Secret)
	}
	if err := e.m.Finish(e.ctx, c.Lease(), tasks.Failed, raw(`{"code":-32603,"message":"x"}`), ""); err != nil {
		t.Fatal(err)
	}
	if got := e.get(alice, finished.ID); got.Secret != nil {
		t.Fatalf("a finished task keeps its secret: %q", got.Secret)
	}
	// Cancelled directly (no live worker): deleted as well.
	cancelled := e.create(tasks.NewTask{Secret: []byte("s2")})
	if err := e.m.Cancel(e.ctx, alice, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.get(alice, cancelled.ID); got.Status != tasks.Cancelled || got.Secret != nil {
		t.Fatalf("a cancelled task keeps its secret: %s %q", got.Status, got.Secret)
	}
	// Without one there is none.
	if got := e.get(alice, e.create(tasks.NewTask{}).ID); got.Secret != nil {
		t.Fatalf("secret %q on a task created without one", got.Secret)
	}
}

// testCountActive: a manager counts an owner's tasks in progress (working
// and input_required, not expired), and no one else's.
func testCountActive(t *testing.T, f Factory) {
	e := newEnv(t, f)
	counter, ok := e.m.(tasks.ActiveCounter)
	if !ok {
		t.Fatalf("%T does not implement tasks.ActiveCounter", e.m)
	}
	count := func(p tasks.Principal) int {
		t.Helper()
		n, err := counter.CountActive(e.ctx, p)
		if err != nil {
			t.Fatalf("CountActive: %v", err)
		}
		return n
	}
	working := e.create(tasks.NewTask{})
	asking := e.claim(e.create(tasks.NewTask{}), "w1")
	if _, err := e.m.RequireInput(e.ctx, asking.Lease(), map[string]json.RawMessage{"q": raw(`{}`)}, ""); err != nil {
		t.Fatal(err)
	}
	done := e.claim(e.create(tasks.NewTask{}), "w1")
	if err := e.m.Finish(e.ctx, done.Lease(), tasks.Completed, raw(`{"content":[]}`), ""); err != nil {
		t.Fatal(err)
	}
	e.create(tasks.NewTask{TTL: time.Minute}) // expires below
	e.create(tasks.NewTask{Owner: bob})
	e.create(tasks.NewTask{Owner: aliceElsewhere})
	if n := count(alice); n != 3 {
		t.Errorf("alice has %d tasks in progress, want 3 (working, input_required, and the one with a TTL)", n)
	}
	e.clock.Advance(2 * time.Minute)
	if n := count(alice); n != 2 {
		t.Errorf("after the TTL: %d, want 2", n)
	}
	if err := e.m.Cancel(e.ctx, alice, working.ID); err != nil {
		t.Fatal(err)
	}
	if n := count(alice); n != 1 {
		t.Errorf("after a cancel: %d, want 1", n)
	}
	if count(bob) != 1 || count(aliceElsewhere) != 1 || count(tasks.Principal{Subject: "nobody"}) != 0 {
		t.Errorf("other owners: bob %d, alice@globex %d, nobody %d", count(bob), count(aliceElsewhere), count(tasks.Principal{Subject: "nobody"}))
	}
}
