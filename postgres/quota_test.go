package postgres_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/policy"
	"github.com/mcpgate/mcpgate/postgres"
	"github.com/mcpgate/mcpgate/quota"
)

// newBanks opens n replicas (a manager each, with its own pool) on one fresh
// schema and returns a quota bank on each, created concurrently.
func newBanks(t *testing.T, n int) []*postgres.QuotaBank {
	t.Helper()
	schema := newSchema(t)
	open(t, schema, postgres.Options{}) // creates the schema
	banks := make([]*postgres.QuotaBank, n)
	var wg sync.WaitGroup
	for i := range banks {
		m := open(t, schema, postgres.Options{})
		wg.Go(func() {
			b, err := postgres.NewQuotaBank(context.Background(), m.Pool())
			if err != nil {
				t.Error(err)
			}
			banks[i] = b
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return banks
}

// TestQuotaAcrossThreeReplicas runs one caller's calls through three quota
// limiters, each on its own connection pool to one database: the limit holds
// cluster-wide within the stated overshoot of R·B tokens.
func TestQuotaAcrossThreeReplicas(t *testing.T) {
	const replicas, limit = 3, 300
	window := time.Hour
	banks := newBanks(t, replicas)
	rules := []quota.Rule{{Per: quota.PerCaller, Limit: limit, Window: window}}
	ls := make([]*quota.Limiter, replicas)
	for i := range ls {
		l, err := quota.New(rules, quota.Options{Bank: banks[i], LeaseTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
	}
	batch := ls[0].Batch(0)
	caller := &policy.Caller{Subject: "alice"}
	tool := &policy.Tool{Name: "getPet", API: "petstore"}
	start := time.Now()
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for g := range 3 * replicas {
		wg.Go(func() {
			l := ls[g%replicas]
			for range 150 {
				v, err := l.Allow(context.Background(), &policy.Input{Caller: caller, Tool: tool})
				switch {
				case err != nil:
					t.Error(err)
					return
				case v.Allowed:
					admitted.Add(1)
				default:
					refused.Add(1)
					if v.RetryAfter <= 0 {
						t.Errorf("refused without a retry time: %+v", v)
					}
				}
			}
		})
	}
	wg.Wait()
	refill := int(float64(limit) * float64(time.Since(start)) / float64(window))
	got := int(admitted.Load())
	t.Logf("%d replicas, limit %d, batch %d: admitted %d, refused %d, refill %d", replicas, limit, batch, got, refused.Load(), refill)
	if hi := limit + refill + replicas*batch; got > hi {
		t.Fatalf("admitted %d, more than the bound %d", got, hi)
	}
	if lo := limit - replicas*batch; got < lo {
		t.Fatalf("admitted %d, fewer than %d: leased tokens were lost", got, lo)
	}
	for _, l := range ls {
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// After Close no token is held by a replica: another one gets exactly
	// what nobody spent (plus the refill).
	l, err := quota.New(rules, quota.Options{Bank: banks[0], MaxLease: 1})
	if err != nil {
		t.Fatal(err)
	}
	rest := 0
	for {
		v, err := l.Allow(context.Background(), &policy.Input{Caller: caller, Tool: tool})
		if err != nil {
			t.Fatal(err)
		}
		if !v.Allowed {
			break
		}
		rest++
	}
	refill = int(float64(limit) * float64(time.Since(start)) / float64(window))
	if rest < limit-got || rest > limit-got+refill+1 {
		t.Fatalf("%d tokens left after Close, want %d (+ refill %d)", rest, limit-got, refill)
	}
}

func TestQuotaBankRefillAndSweep(t *testing.T) {
	bank := newBanks(t, 1)[0]
	ctx := context.Background()
	now := time.Unix(1_000_000, 0)
	req := quota.LeaseRequest{Key: "k", Capacity: 10, Window: time.Minute, Want: 4, Now: now}
	lease := func(want, ret int) (int, time.Duration) {
		t.Helper()
		req.Want, req.Return = want, ret
		n, wait, err := bank.Lease(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return n, wait
	}
	for _, want := range []int{4, 4, 2} {
		if n, _ := lease(4, 0); n != want {
			t.Fatalf("granted %d, want %d", n, want)
		}
	}
	n, wait := lease(4, 0)
	if n != 0 || wait != 6*time.Second {
		t.Fatalf("empty bucket: granted %d, wait %v; want 0 and 6s (one token per 6s)", n, wait)
	}
	req.Now = now.Add(30 * time.Second) // five tokens back
	if n, _ := lease(10, 0); n != 5 {
		t.Fatalf("after 30s: granted %d, want 5", n)
	}
	req.Now = now // a replica whose clock is behind refills nothing
	if n, _ := lease(10, 3); n != 3 {
		t.Fatalf("returned 3 and asked for 10: granted %d", n)
	}
	if n, err := bank.Sweep(ctx, now.Add(time.Minute)); err != nil || n != 0 {
		t.Fatalf("swept %d (%v) before the bucket is full", n, err)
	}
	if n, err := bank.Sweep(ctx, now.Add(2*time.Minute)); err != nil || n != 1 {
		t.Fatalf("swept %d (%v), want the full bucket", n, err)
	}
	req.Now = now.Add(3 * time.Minute)
	if n, _ := lease(20, 0); n != 10 {
		t.Fatalf("a swept bucket starts full: granted %d", n)
	}
}

// BenchmarkQuotaAllow compares the cost of one quota check per call in
// memory and through the PostgreSQL bank, with a limit whose batch is 100
// tokens (one round trip per 100 calls) and one whose batch is 1.
func BenchmarkQuotaAllow(b *testing.B) {
	bank := func() *postgres.QuotaBank {
		schema := newSchema(b)
		m := open(b, schema, postgres.Options{})
		qb, err := postgres.NewQuotaBank(context.Background(), m.Pool())
		if err != nil {
			b.Fatal(err)
		}
		return qb
	}()
	caller := &policy.Caller{Subject: "alice"}
	tool := &policy.Tool{Name: "getPet", API: "petstore"}
	for _, bc := range []struct {
		name  string
		bank  quota.Bank
		limit int
	}{
		{"memory", nil, 1 << 30},
		{"postgres-batch100", bank, 1 << 30},
		{"postgres-batch1", bank, 10},
	} {
		b.Run(bc.name, func(b *testing.B) {
			opts := quota.Options{LeaseTTL: time.Hour}
			if bc.bank != nil {
				opts.Bank = bc.bank
			}
			l, err := quota.New([]quota.Rule{{Per: quota.PerCaller, Limit: bc.limit, Window: time.Nanosecond * time.Duration(bc.limit)}}, opts)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := l.Allow(context.Background(), &policy.Input{Caller: caller, Tool: tool}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
