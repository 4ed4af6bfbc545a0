// Package quota limits how often tools are called: token buckets per caller,
// per tool or global, chosen by CEL conditions over the call (the language
// of package policy), in memory on one node or shared by a cluster through a
// [Bank] (package postgres has one).
//
// A rule `{when: "<CEL>", per: caller|tool|global, limit: N, window: 1m}`
// gives every caller (every tool, or the whole gateway) a bucket of N tokens
// that refills at N per window. A call takes one token from the bucket of
// every rule whose condition holds; classes of calls (reads, writes) are
// conditions such as `tool.annotations.readOnlyHint`. A call that finds a
// bucket empty is refused with the time until a token is back.
//
// Invariants:
//
//   - All or nothing: a refused call takes no token from any bucket.
//   - On one node ([Options].Bank nil) the limit is exact: over any interval
//     of length T a bucket admits at most N + N·T/window calls.
//   - In a cluster every replica leases tokens from the shared bank in
//     batches of B = clamp(N·LeaseFraction, 1, MaxLease) and spends them
//     locally, so a call costs a bank round trip only once per B calls. A
//     leased token is taken from the shared bucket before it is spent, so
//     the only excess over the single-node bound is the tokens that replicas
//     leased earlier and spend inside the interval: cluster-wide, over any
//     interval T, at most N + N·T/window + R·B calls are admitted, with R
//     replicas. Tokens a replica leased and did not spend within LeaseTTL go
//     back to the bank with its next lease of that bucket (or at Close);
//     until then they are unavailable to the others, so a caller may be
//     refused while up to ·B of its tokens sit on other replicas.
//   - Memory is bounded: buckets that are full again are dropped (a full
//     bucket is the same as none), and past MaxBuckets live buckets the
//     callers of a rule that have none yet share one overflow bucket, which
//     keeps the limit (more strictly) instead of growing.
//   - Rules are compiled when the Limiter is built; an error names the rule.
//     A condition that fails to evaluate counts as a match (the call is
//     counted rather than let through uncounted).
package quota

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/policy"
)

// Per says whose bucket a rule fills.
type Per string

// The bucket scopes.
const (
	PerCaller Per = "caller" // one bucket per caller subject (anonymous callers share one)
	PerTool   Per = "tool"   // one bucket per tool, shared by all callers
	PerGlobal Per = "global" // one bucket for every call the rule matches
)

// Rule is one quota as configured.
type Rule struct {
	// When is a CEL condition over caller, tool and args (see package
	// policy); empty matches every call.
	When   string        `json:"when" yaml:"when"`
	Per    Per           `json:"per" yaml:"per"`
	Limit  int           `json:"limit" yaml:"limit"`
	Window time.Duration `json:"window" yaml:"window"`
}

// Bank is the shared token store of a cluster.
type Bank interface {
	// Lease refills bucket req.Key to req.Now, adds back req.Return unused
	// tokens (never past the capacity), takes up to req.Want whole tokens
	// and returns how many it took. When it took none, wait is how long
	// until one whole token is back. It is atomic across replicas.
	Lease(ctx context.Context, req LeaseRequest) (granted int, wait time.Duration, err error)
}

// LeaseRequest is one lease from a [Bank].
type LeaseRequest struct {
	Key      string        // the bucket: fixed length, the same on every replica for the same rule and subject
	Capacity int           // the rule's limit
	Window   time.Duration // the capacity refills over one window
	Want     int           // tokens to take, at most
	Return   int           // unspent tokens given back
	Now      time.Time
}

// Options configure a [Limiter].
type Options struct {
	// Bank, when set, shares the buckets with other replicas; nil keeps
	// them in memory (one node).
	Bank Bank
	// LeaseFraction is the share of a rule's limit leased per bank round
	// trip (default 0.05), bounded by MaxLease (default 100) and at least 1.
	LeaseFraction float64
	MaxLease      int
	// LeaseTTL is how long a replica keeps unspent leased tokens before it
	// gives them back (default 2s).
	LeaseTTL time.Duration
	// FailClosed refuses calls when the bank cannot be reached; by default
	// they are let through (Allow still returns the error, to be logged).
	FailClosed bool
	// MaxBuckets bounds the buckets (or leases) kept in memory (default
	// 100,000).
	MaxBuckets int
	// Now is the clock (default time.Now). Replicas sharing a bank should
	// have synchronized clocks: a replica whose clock is behind refills
	// nothing until the shared clock catches up, one ahead refills early by
	// its skew's worth of tokens.
	Now func() time.Time
}

// Verdict is the outcome of [Limiter.Allow].
type Verdict struct {
	Allowed bool
	// RetryAfter is, for a refused call, when a token is expected back.
	RetryAfter time.Duration
	// Rule is the index of the rule that refused, or -1.
	Rule int
}

// refuse turns v into a refusal by rule (the first one to refuse is kept)
// that lasts at least wait.
func (v *Verdict) refuse(rule int, wait time.Duration) {
	if v.Allowed {
		*v = Verdict{Rule: rule}
	}
	v.RetryAfter = max(v.RetryAfter, wait)
}

// Message is the text of the tool error for a refused call.
func (v Verdict) Message() string {
	s := int64(math.Ceil(v.RetryAfter.Seconds()))
	if s < 1 {
		s = 1
	}
	return fmt.Sprintf("Too many calls: the gateway's quota is used up. Retry in %ds.", s)
}

// Limiter applies quota rules. It is safe for concurrent use.
type Limiter struct {
	rules []rule
	opts  Options
	now   func() time.Time

	mem   *memory // nil with a bank
	lease *leases // nil without a bank

	refused atomic.Uint64
}

type rule struct {
	Rule
	index int
	cond  *policy.Condition // nil: always
	id    string            // fingerprint of the rule, part of every bucket key
	batch int               // tokens leased per round trip
	rate  float64           // tokens per nanosecond
}

// New compiles rules. An error names the first bad rule by its index.
func New(rules []Rule, opts Options) (*Limiter, error) {
	if opts.LeaseFraction <= 0 {
		opts.LeaseFraction = 0.05
	}
	if opts.MaxLease <= 0 {
		opts.MaxLease = 100
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 2 * time.Second
	}
	if opts.MaxBuckets <= 0 {
		opts.MaxBuckets = 100_000
	}
	l := &Limiter{opts: opts, now: opts.Now}
	if l.now == nil {
		l.now = time.Now
	}
	var env *policy.Env
	for i, r := range rules {
		switch r.Per {
		case PerCaller, PerTool, PerGlobal:
		default:
			return nil, fmt.Errorf("quota rule %d: per %q: want caller, tool or global", i, r.Per)
		}
		if r.Limit < 1 {
			return nil, fmt.Errorf("quota rule %d: limit %d: want at least 1", i, r.Limit)
		}
		if r.Window <= 0 {
			return nil, fmt.Errorf("quota rule %d: window %v: want a positive duration", i, r.Window)
		}
		c := rule{Rule: r, index: i, rate: float64(r.Limit) / float64(r.Window)}
		if r.When != "" {
			if env == nil {
				var err error
				if env, err = policy.NewEnv(); err != nil {
					return nil, err
				}
			}
			cond, err := env.Compile(r.When)
			if err != nil {
				return nil, fmt.Errorf("quota rule %d: when: %w", i, err)
			}
			c.cond = cond
		}
		sum := sha256.Sum256([]byte(fmt.Sprintf("%q|%s|%d|%d", r.When, r.Per, r.Limit, r.Window)))
		c.id = hex.EncodeToString(sum[:8])
		c.batch = min(max(int(float64(r.Limit)*opts.LeaseFraction), 1), opts.MaxLease)
		l.rules = append(l.rules, c)
	}
	if opts.Bank == nil {
		l.mem = newMemory(opts.MaxBuckets)
	} else {
		l.lease = newLeases(opts.Bank, opts.LeaseTTL, opts.MaxBuckets)
	}
	return l, nil
}

// Refused is the number of calls refused so far.
func (l *Limiter) Refused() uint64 { return l.refused.Load() }

// Batch is the number of tokens rule i leases per bank round trip: the B of
// the cluster bound in the package doc.
func (l *Limiter) Batch(i int) int { return l.rules[i].batch }

// Allow takes one token from the bucket of every rule matching in, or none
// when one of them is empty. The error is a bank failure; the verdict then
// follows Options.FailClosed.
func (l *Limiter) Allow(ctx context.Context, in *policy.Input) (Verdict, error) {
	if l == nil || len(l.rules) == 0 {
		return Verdict{Allowed: true, Rule: -1}, nil
	}
	var buf [4]claim
	claims := buf[:0]
	for i := range l.rules {
		r := &l.rules[i]
		if r.cond != nil {
			if ok, err := r.cond.Eval(in); err == nil && !ok {
				continue
			}
		}
		claims = append(claims, claim{rule: r, key: r.key(in)})
	}
	if len(claims) == 0 {
		return Verdict{Allowed: true, Rule: -1}, nil
	}
	now := l.now()
	var (
		v   Verdict
		err error
	)
	if l.mem != nil {
		v = l.mem.take(claims, now)
	} else {
		v, err = l.lease.take(ctx, claims, now)
		if err != nil && !v.Allowed {
			v = Verdict{Allowed: !l.opts.FailClosed, RetryAfter: time.Second, Rule: -1}
		}
	}
	if !v.Allowed {
		l.refused.Add(1)
	}
	return v, err
}

// Close gives leased, unspent tokens back to the bank.
func (l *Limiter) Close(ctx context.Context) error {
	if l == nil || l.lease == nil {
		return nil
	}
	return l.lease.returnAll(ctx, l.now())
}

// claim is one bucket a call needs a token from.
type claim struct {
	rule *rule
	key  string
}

// key is the bucket key of a call for r: the rule's fingerprint and the
// subject (caller or tool), hashed to a fixed length so that no raw subject
// is stored and every replica derives the same key.
func (r *rule) key(in *policy.Input) string {
	var subject string
	switch r.Per {
	case PerCaller:
		if in.Caller != nil {
			subject = in.Caller.Subject
		}
	case PerTool:
		if in.Tool != nil {
			subject = in.Tool.API + "\x00" + in.Tool.Name
		}
	}
	sum := sha256.Sum256([]byte(r.id + "\x00" + string(r.Per) + "\x00" + subject))
	return "q1:" + hex.EncodeToString(sum[:16])
}

// retryAfter is how long until a bucket holding tokens has one whole token.
func (r *rule) retryAfter(tokens float64) time.Duration {
	d := time.Duration(math.Ceil((1 - tokens) / r.rate))
	return max(d, time.Millisecond)
}

// overflowKey is the bucket of a rule's callers that found no room.
func overflowKey(r *rule) string { return "q1:overflow:" + r.id + ":" + strconv.Itoa(r.index) }

// slotFor returns m's entry for the claim, made by mk when missing; once m
// holds limit entries, the claims of a rule that have none share the rule's
// overflow entry instead.
func slotFor[V any](m map[string]V, c claim, limit int, mk func(key string) V) V {
	if v, ok := m[c.key]; ok {
		return v
	}
	key := c.key
	if len(m) >= limit {
		key = overflowKey(c.rule)
		if v, ok := m[key]; ok {
			return v
		}
	}
	v := mk(key)
	m[key] = v
	return v
}
