package quota

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// leases are the tokens this replica leased from a Bank, per bucket.
type leases struct {
	bank Bank
	ttl  time.Duration
	max  int

	mu        sync.Mutex // guards m and every lease's tokens, expires and wait
	m         map[string]*lease
	lastSweep time.Time
}

type lease struct {
	key     string
	rule    *rule
	tokens  int // leased, unspent; never more than rule.batch
	expires time.Time
	dryTill time.Time // the bank had no token for this lease until then: do not ask again before
	refs    int       // calls using the lease now; a lease in use is never forgotten

	fetch sync.Mutex // one bank round trip per lease at a time
}

func newLeases(bank Bank, ttl time.Duration, maxLeases int) *leases {
	return &leases{bank: bank, ttl: ttl, max: maxLeases, m: make(map[string]*lease)}
}

// take spends one leased token per claim, or none, leasing more from the
// bank for the claims whose lease is empty or expired.
func (ls *leases) take(ctx context.Context, claims []claim, now time.Time) (Verdict, error) {
	var buf [4]*lease
	held := buf[:0]
	ls.mu.Lock()
	ls.sweep(now)
	for _, c := range claims {
		l := ls.lease(c)
		l.refs++
		held = append(held, l)
	}
	ls.mu.Unlock()
	defer func() {
		ls.mu.Lock()
		for _, l := range held {
			l.refs--
		}
		ls.mu.Unlock()
	}()

	for _, l := range held {
		if err := ls.refill(ctx, l, now); err != nil {
			return Verdict{Rule: l.rule.index}, err
		}
	}

	ls.mu.Lock()
	v := Verdict{Allowed: true, Rule: -1}
	for _, l := range held {
		if l.tokens < 1 {
			v.refuse(l.rule.index, max(l.dryTill.Sub(now), time.Millisecond))
		}
	}
	if v.Allowed {
		for _, l := range held {
			l.tokens--
		}
	}
	ls.mu.Unlock()
	return v, nil
}

// lease returns the claim's lease (the rule's overflow lease when the map
// is at its bound). ls.mu is held.
func (ls *leases) lease(c claim) *lease {
	return slotFor(ls.m, c, ls.max, func(key string) *lease { return &lease{key: key, rule: c.rule} })
}

// refill leases a batch for l if it is empty or expired, giving back the
// unspent tokens of an expired lease in the same round trip.
func (ls *leases) refill(ctx context.Context, l *lease, now time.Time) error {
	ls.mu.Lock()
	ok := l.usable(now)
	ls.mu.Unlock()
	if ok {
		return nil
	}
	l.fetch.Lock()
	defer l.fetch.Unlock()
	ls.mu.Lock()
	if l.usable(now) {
		ls.mu.Unlock()
		return nil // another call refilled it meanwhile
	}
	give := 0
	if !now.Before(l.expires) {
		give, l.tokens = l.tokens, 0
	}
	ls.mu.Unlock()

	granted, wait, err := ls.bank.Lease(ctx, LeaseRequest{
		Key: l.key, Capacity: l.rule.Limit, Window: l.rule.Window,
		Want: l.rule.batch, Return: give, Now: now,
	})
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if err != nil {
		l.tokens += give // not given back: still ours
		return fmt.Errorf("quota: lease from the bank: %w", err)
	}
	granted = min(max(granted, 0), l.rule.batch)
	l.tokens += granted
	l.expires = now.Add(ls.ttl)
	if granted == 0 {
		l.dryTill = now.Add(max(wait, time.Millisecond))
	}
	return nil
}

// usable reports whether l can serve a call at now without the bank: it
// holds a token and has not lapsed, or the bank said it has none yet (the
// call is then refused without a round trip). ls.mu is held.
func (l *lease) usable(now time.Time) bool {
	if l.tokens == 0 && now.Before(l.dryTill) {
		return true
	}
	return l.tokens >= 1 && now.Before(l.expires)
}

// sweep forgets the leases that hold nothing, lapsed and are not in use, at
// most once a ttl (and a second). ls.mu is held.
func (ls *leases) sweep(now time.Time) {
	if now.Sub(ls.lastSweep) < max(ls.ttl, time.Second) {
		return
	}
	ls.lastSweep = now
	for k, l := range ls.m {
		if l.tokens == 0 && l.refs == 0 && !now.Before(l.expires) {
			delete(ls.m, k)
		}
	}
}

// returnAll gives every unspent leased token back to the bank.
func (ls *leases) returnAll(ctx context.Context, now time.Time) error {
	ls.mu.Lock()
	var back []*lease
	for _, l := range ls.m {
		if l.tokens > 0 {
			back = append(back, l)
		}
	}
	ls.mu.Unlock()
	var errs []error
	for _, l := range back {
		l.fetch.Lock()
		ls.mu.Lock()
		give := l.tokens
		l.tokens = 0
		ls.mu.Unlock()
		_, _, err := ls.bank.Lease(ctx, LeaseRequest{
			Key: l.key, Capacity: l.rule.Limit, Window: l.rule.Window, Return: give, Now: now,
		})
		l.fetch.Unlock()
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("quota: return leased tokens: %w", err)
	}
	return nil
}
