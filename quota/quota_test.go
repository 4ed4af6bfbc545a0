package quota

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpgate/mcpgate/policy"
)

var (
	alice   = &policy.Caller{Subject: "alice"}
	bob     = &policy.Caller{Subject: "bob"}
	getPet  = &policy.Tool{Name: "getPet", API: "petstore", Method: "GET", Path: "/pets/{petId}", Annotations: policy.Annotations{ReadOnlyHint: true}}
	listPet = &policy.Tool{Name: "listPets", API: "petstore", Method: "GET", Path: "/pets", Annotations: policy.Annotations{ReadOnlyHint: true}}
	addPet  = &policy.Tool{Name: "createPet", API: "petstore", Method: "POST", Path: "/pets"}
)

func call(c *policy.Caller, t *policy.Tool) *policy.Input { return &policy.Input{Caller: c, Tool: t} }

func mustNew(t *testing.T, rules []Rule, opts Options) *Limiter {
	t.Helper()
	l, err := New(rules, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// allowN makes n calls and returns how many were allowed.
func allowN(t *testing.T, l *Limiter, in *policy.Input, n int) int {
	t.Helper()
	ok := 0
	for range n {
		v, err := l.Allow(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if v.Allowed {
			ok++
		}
	}
	return ok
}

func TestMemoryBucketRefills(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, []Rule{{Per: PerCaller, Limit: 3, Window: time.Minute}}, Options{})
		if got := allowN(t, l, call(alice, getPet), 3); got != 3 {
			t.Fatalf("allowed %d of the first 3", got)
		}
		v, _ := l.Allow(context.Background(), call(alice, getPet))
		if v.Allowed || v.Rule != 0 || v.RetryAfter != 20*time.Second {
			t.Fatalf("4th call: %+v, want refused by rule 0, retry after 20s", v)
		}
		if !strings.Contains(v.Message(), "Retry in 20s") {
			t.Fatalf("message %q", v.Message())
		}
		if got := allowN(t, l, call(bob, getPet), 3); got != 3 {
			t.Fatalf("bob has his own bucket: allowed %d of 3", got)
		}
		time.Sleep(19 * time.Second)
		if got := allowN(t, l, call(alice, getPet), 1); got != 0 {
			t.Fatal("a token came back early")
		}
		time.Sleep(time.Second)
		if got := allowN(t, l, call(alice, getPet), 2); got != 1 {
			t.Fatalf("after 20s: allowed %d, want 1", got)
		}
		time.Sleep(time.Hour) // refills to the capacity, not past it
		if got := allowN(t, l, call(alice, getPet), 10); got != 3 {
			t.Fatalf("after an hour: allowed %d, want 3", got)
		}
		if l.Refused() != 1+1+1+7 {
			t.Fatalf("refused counter %d", l.Refused())
		}
	})
}

func TestMemoryClassesAndScopes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, []Rule{
			{When: `tool.annotations.readOnlyHint`, Per: PerCaller, Limit: 5, Window: time.Minute},
			{When: `!tool.annotations.readOnlyHint`, Per: PerCaller, Limit: 1, Window: time.Minute},
			{When: `tool.name == "listPets"`, Per: PerTool, Limit: 2, Window: time.Minute},
			{Per: PerGlobal, Limit: 8, Window: time.Hour},
		}, Options{})
		if got := allowN(t, l, call(alice, addPet), 3); got != 1 {
			t.Fatalf("writes: %d allowed, want 1", got)
		}
		if got := allowN(t, l, call(alice, listPet), 1) + allowN(t, l, call(bob, listPet), 2); got != 2 {
			t.Fatalf("listPets is limited per tool across callers: %d allowed, want 2", got)
		}
		if got := allowN(t, l, call(alice, getPet), 10); got != 4 {
			t.Fatalf("alice's reads: %d allowed, want 4 (5 minus the listPets)", got)
		}
		// Global: 1 write + 2 list + 4 reads = 7 so far; one more fits.
		if got := allowN(t, l, call(bob, getPet), 5); got != 1 {
			t.Fatalf("global bucket: %d allowed, want 1", got)
		}
		v, _ := l.Allow(context.Background(), call(bob, addPet))
		if v.Allowed || v.Rule != 3 || v.RetryAfter < 7*time.Minute {
			t.Fatalf("over the global quota: %+v", v)
		}
	})
}

func TestRefusedCallTakesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, []Rule{
			{Per: PerCaller, Limit: 10, Window: time.Hour},
			{When: `tool.name == "getPet"`, Per: PerTool, Limit: 2, Window: time.Hour},
		}, Options{})
		if got := allowN(t, l, call(alice, getPet), 5); got != 2 {
			t.Fatalf("getPet: %d allowed, want 2", got)
		}
		// The three refused getPet calls took nothing from alice's bucket.
		if got := allowN(t, l, call(alice, listPet), 10); got != 8 {
			t.Fatalf("alice's bucket after refusals: %d allowed, want 8", got)
		}
	})
}

func TestMemoryIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, []Rule{{Per: PerCaller, Limit: 1, Window: time.Minute}}, Options{MaxBuckets: 10})
		allowed := 0
		for i := range 1000 {
			allowed += allowN(t, l, call(&policy.Caller{Subject: fmt.Sprint("c", i)}, getPet), 1)
		}
		// Ten callers got their own bucket, the 990 others share one
		// overflow bucket of one token.
		if allowed != 11 {
			t.Fatalf("allowed %d, want 11", allowed)
		}
		if n := len(l.mem.buckets); n != 11 {
			t.Fatalf("%d buckets in memory, want 11", n)
		}
		time.Sleep(2 * time.Minute)
		allowN(t, l, call(alice, getPet), 1) // triggers the sweep of the full buckets
		if n := len(l.mem.buckets); n != 1 {
			t.Fatalf("%d buckets after the sweep, want 1 (alice's)", n)
		}
	})
}

func TestMemoryConcurrentExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, []Rule{{Per: PerCaller, Limit: 100, Window: time.Hour}}, Options{})
		var ok atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 50 {
					if v, _ := l.Allow(context.Background(), call(alice, getPet)); v.Allowed {
						ok.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if ok.Load() != 100 {
			t.Fatalf("allowed %d of 400, want exactly 100", ok.Load())
		}
	})
}

func TestConditionErrorCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, []Rule{{When: `args.petId == 1`, Per: PerCaller, Limit: 1, Window: time.Hour}}, Options{})
		in := func() *policy.Input { return &policy.Input{Caller: alice, Tool: getPet, Args: []byte(`{}`)} }
		if v, _ := l.Allow(context.Background(), in()); !v.Allowed {
			t.Fatal("first call refused")
		}
		if v, _ := l.Allow(context.Background(), in()); v.Allowed {
			t.Fatal("a condition that fails to evaluate did not count")
		}
	})
}

func TestRuleErrors(t *testing.T) {
	tests := []struct {
		rule Rule
		want string
	}{
		{Rule{Per: "user", Limit: 1, Window: time.Second}, `quota rule 0: per "user"`},
		{Rule{Per: PerCaller, Limit: 0, Window: time.Second}, "quota rule 0: limit 0"},
		{Rule{Per: PerCaller, Limit: 1}, "quota rule 0: window 0s"},
		{Rule{When: "tool.nam", Per: PerCaller, Limit: 1, Window: time.Second}, "quota rule 0: when:"},
	}
	for _, tt := range tests {
		_, err := New([]Rule{tt.rule}, Options{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want %q", tt.rule, err, tt.want)
		}
	}
}

// memBank is an exact in-memory Bank, standing in for a shared database.
type memBank struct {
	mu      sync.Mutex
	buckets map[string]*bankBucket
	calls   atomic.Int64
	fail    atomic.Bool
}

type bankBucket struct {
	tokens float64
	last   time.Time
}

func newMemBank() *memBank { return &memBank{buckets: map[string]*bankBucket{}} }

func (b *memBank) Lease(_ context.Context, r LeaseRequest) (int, time.Duration, error) {
	b.calls.Add(1)
	if b.fail.Load() {
		return 0, 0, errors.New("bank down")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	k, ok := b.buckets[r.Key]
	if !ok {
		k = &bankBucket{tokens: float64(r.Capacity), last: r.Now}
		b.buckets[r.Key] = k
	}
	rate := float64(r.Capacity) / float64(r.Window)
	if d := r.Now.Sub(k.last); d > 0 {
		k.tokens += float64(d) * rate
		k.last = r.Now
	}
	k.tokens = min(float64(r.Capacity), k.tokens+float64(r.Return))
	n := min(r.Want, int(math.Floor(k.tokens)))
	k.tokens -= float64(n)
	var wait time.Duration
	if n == 0 && r.Want > 0 {
		wait = time.Duration((1 - k.tokens) / rate)
	}
	return n, wait, nil
}

func (b *memBank) tokens(key string) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buckets[key].tokens
}

// TestLeasesAcrossReplicas runs three limiters (replicas) on one bank: one
// caller's limit holds across them within the stated overshoot, and the
// replicas reach the bank about once per batch.
func TestLeasesAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bank := newMemBank()
		const limit, replicas = 200, 3
		rules := []Rule{{Per: PerCaller, Limit: limit, Window: time.Hour}}
		var ls []*Limiter
		for range replicas {
			ls = append(ls, mustNew(t, rules, Options{Bank: bank, LeaseTTL: time.Hour}))
		}
		batch := ls[0].Batch(0)
		if batch != 10 {
			t.Fatalf("batch %d, want 5%% of 200", batch)
		}
		var ok atomic.Int64
		var wg sync.WaitGroup
		for i := range 3 * replicas {
			wg.Go(func() {
				l := ls[i%replicas]
				for range 60 {
					if v, err := l.Allow(context.Background(), call(alice, getPet)); err != nil {
						t.Error(err)
					} else if v.Allowed {
						ok.Add(1)
					}
				}
			})
		}
		wg.Wait()
		got := int(ok.Load())
		if got > limit+replicas*batch || got < limit-replicas*batch {
			t.Fatalf("admitted %d across %d replicas, want %d ± %d", got, replicas, limit, replicas*batch)
		}
		if c := bank.calls.Load(); c > int64(got/batch+9*replicas+replicas) {
			t.Fatalf("%d bank round trips for %d admitted calls in batches of %d", c, got, batch)
		}
		// Closing gives the unspent leases back: the bank then holds
		// exactly the tokens nobody spent.
		for _, l := range ls {
			if err := l.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		key := ls[0].rules[0].key(call(alice, getPet))
		if left := bank.tokens(key); int(left) != limit-got {
			t.Fatalf("bank holds %v tokens after Close, want %d", left, limit-got)
		}
	})
}

func TestLeaseExpiresAndGoesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bank := newMemBank()
		rules := []Rule{{Per: PerCaller, Limit: 100, Window: 1000 * time.Hour}}
		a := mustNew(t, rules, Options{Bank: bank, LeaseTTL: time.Second})
		b := mustNew(t, rules, Options{Bank: bank, LeaseTTL: time.Second})
		key := a.rules[0].key(call(alice, getPet))
		allowN(t, a, call(alice, getPet), 1)
		if left := bank.tokens(key); left != 95 {
			t.Fatalf("bank holds %v after a lease of 5, want 95", left)
		}
		// b drains the bank; a's 4 unspent tokens are still a's.
		if got := allowN(t, b, call(alice, getPet), 200); got != 95 {
			t.Fatalf("b admitted %d, want 95", got)
		}
		time.Sleep(2 * time.Second) // a's lease lapses
		allowN(t, a, call(alice, getPet), 1)
		// a gave its 4 back and leased again: 4 back, 4 taken (what there was).
		if got := allowN(t, a, call(alice, getPet), 10); got != 3 {
			t.Fatalf("a admitted %d more, want 3", got)
		}
		v, _ := b.Allow(context.Background(), call(alice, getPet))
		if v.Allowed || v.RetryAfter <= 0 {
			t.Fatalf("empty bank: %+v", v)
		}
	})
}

func TestBankFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bank := newMemBank()
		bank.fail.Store(true)
		rules := []Rule{{Per: PerCaller, Limit: 10, Window: time.Minute}}
		open := mustNew(t, rules, Options{Bank: bank})
		if v, err := open.Allow(context.Background(), call(alice, getPet)); err == nil || !v.Allowed {
			t.Fatalf("fail open: %+v, %v", v, err)
		}
		closed := mustNew(t, rules, Options{Bank: bank, FailClosed: true})
		if v, err := closed.Allow(context.Background(), call(alice, getPet)); err == nil || v.Allowed || v.RetryAfter <= 0 {
			t.Fatalf("fail closed: %+v, %v", v, err)
		}
	})
}

func TestNoRules(t *testing.T) {
	var l *Limiter
	if v, err := l.Allow(context.Background(), call(alice, getPet)); !v.Allowed || err != nil {
		t.Fatal("a nil limiter refused")
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
