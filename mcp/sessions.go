package mcp

import (
	"container/list"
	"sync"
	"time"
)

// sessionStore holds the legacy sessions of one HTTP transport. Sessions
// are bounded by Limits (in total, per client address, per caller) and end
// after IdleTimeout without use; a session with a request in flight or an
// open GET stream is in use and never ends for either reason.
//
// A session that never sent a second message (fresh) proves nothing about
// its client: opening one costs a flooder a single request. So when a new
// session finds one of its limits reached, the oldest fresh session under
// that same limit makes room; only when there is none is the new session
// refused. A flood from one address therefore churns its own fresh
// sessions and leaves the others alone.
//
// Every operation costs O(1) amortized: expiry pops the least recently used
// end of one list, eviction the oldest end of another.
type sessionStore struct {
	limits Limits
	idle   time.Duration

	mu       sync.Mutex
	byID     map[string]*session
	lru      list.List // of *session, most recently used first
	all      *sessionPool
	byAddr   map[string]*sessionPool
	byCaller map[string]*sessionPool
}

// sessionPool counts the sessions under one limit and lists its fresh
// ones, newest first.
type sessionPool struct {
	n     int
	fresh list.List
}

// storeEntry is a session's bookkeeping in the store; guarded by the
// store's mutex.
type storeEntry struct {
	holder   holder
	lastUsed time.Time
	busy     int // requests in flight and open GET streams
	lru      *list.Element
	fresh    [3]*list.Element // in all, byAddr, byCaller; nil once proven
}

func newSessionStore(l Limits, idle time.Duration) *sessionStore {
	if idle <= 0 {
		idle = 30 * time.Minute
	}
	return &sessionStore{
		limits: l.withDefaults(defaultSessionLimits()), idle: idle,
		byID: map[string]*session{}, all: &sessionPool{},
		byAddr: map[string]*sessionPool{}, byCaller: map[string]*sessionPool{},
	}
}

// pools returns the pools a holder's sessions count in, with their limits
// and scopes; the caller pool is nil for an anonymous holder.
func (st *sessionStore) pools(h holder, create bool) (pools [3]*sessionPool, max [3]int) {
	get := func(m map[string]*sessionPool, k string) *sessionPool {
		p := m[k]
		if p == nil && create {
			p = &sessionPool{}
			m[k] = p
		}
		return p
	}
	pools[0], max[0] = st.all, st.limits.Total
	pools[1], max[1] = get(st.byAddr, h.addr), st.limits.PerAddress
	if h.caller != "" {
		pools[2], max[2] = get(st.byCaller, h.caller), st.limits.PerCaller
	}
	return pools, max
}

var poolScopes = [3]string{scopeTotal, scopeAddress, scopeCaller}

// add stores sess for h. Where a limit is reached, the oldest fresh
// session under it is closed to make room; with none, add refuses with the
// error naming the limit.
func (st *sessionStore) add(sess *session, h holder) *Error {
	now := time.Now()
	st.mu.Lock()
	closed := st.expire(now)
	pools, max := st.pools(h, false)
	for i, p := range pools {
		if p == nil || !over(p.n, max[i]) {
			continue
		}
		back := p.fresh.Back()
		if back == nil {
			st.mu.Unlock()
			closeAll(closed)
			return limitError("sessions", poolScopes[i], max[i])
		}
		victim := back.Value.(*session)
		st.drop(victim)
		closed = append(closed, victim)
	}
	e := &storeEntry{holder: h, lastUsed: now}
	sess.entry = e
	st.byID[sess.id] = sess
	e.lru = st.lru.PushFront(sess)
	pools, _ = st.pools(h, true)
	for i, p := range pools {
		if p != nil {
			p.n++
			e.fresh[i] = p.fresh.PushFront(sess)
		}
	}
	st.mu.Unlock()
	closeAll(closed)
	return nil
}

// get returns the live session id names when it belongs to p, and marks it
// used (and proven: this is a message after initialize). With busy, the
// session is in use until the matching end (a request, a GET stream).
func (st *sessionStore) get(id string, p Principal, busy bool) *session {
	now := time.Now()
	st.mu.Lock()
	closed := st.expire(now)
	sess := st.byID[id]
	if sess != nil && !samePrincipal(sess.principal, p) {
		sess = nil
	}
	if sess != nil {
		st.use(sess, now)
		if busy {
			sess.entry.busy++
		}
	}
	st.mu.Unlock()
	closeAll(closed)
	return sess
}

// end ends a use that get began with busy.
func (st *sessionStore) end(sess *session) {
	st.mu.Lock()
	sess.entry.busy--
	st.use(sess, time.Now())
	st.mu.Unlock()
}

// use records a use of sess and takes it off the fresh lists; st.mu held.
func (st *sessionStore) use(sess *session, now time.Time) {
	e := sess.entry
	e.lastUsed = now
	if e.lru != nil {
		st.lru.MoveToFront(e.lru)
	}
	st.unfresh(sess)
}

func (st *sessionStore) unfresh(sess *session) {
	e := sess.entry
	pools, _ := st.pools(e.holder, false)
	for i, p := range pools {
		if el := e.fresh[i]; el != nil && p != nil {
			p.fresh.Remove(el)
		}
		e.fresh[i] = nil
	}
}

// expire removes the sessions idle for longer than the timeout and returns
// them, to be closed once st.mu is released; st.mu held. A session in use
// found at the idle end is moved to the other end.
func (st *sessionStore) expire(now time.Time) []*session {
	var out []*session
	for el := st.lru.Back(); el != nil; el = st.lru.Back() {
		sess := el.Value.(*session)
		e := sess.entry
		if now.Sub(e.lastUsed) <= st.idle {
			break
		}
		if e.busy > 0 {
			e.lastUsed = now
			st.lru.MoveToFront(el)
			continue
		}
		st.drop(sess)
		out = append(out, sess)
	}
	return out
}

// drop removes sess from every index; st.mu held.
func (st *sessionStore) drop(sess *session) {
	e := sess.entry
	if _, ok := st.byID[sess.id]; !ok {
		return
	}
	delete(st.byID, sess.id)
	st.lru.Remove(e.lru)
	e.lru = nil
	st.unfresh(sess)
	pools, _ := st.pools(e.holder, false)
	for i, p := range pools {
		if p == nil {
			continue
		}
		p.n--
		if p.n == 0 && i == 1 {
			delete(st.byAddr, e.holder.addr)
		} else if p.n == 0 && i == 2 {
			delete(st.byCaller, e.holder.caller)
		}
	}
}

// remove ends the session id names, if it belongs to p.
func (st *sessionStore) remove(id string, p Principal) bool {
	st.mu.Lock()
	sess := st.byID[id]
	if sess != nil && samePrincipal(sess.principal, p) {
		st.drop(sess)
	} else {
		sess = nil
	}
	st.mu.Unlock()
	if sess != nil {
		sess.close()
	}
	return sess != nil
}

func (st *sessionStore) closeAll() {
	st.mu.Lock()
	all := make([]*session, 0, len(st.byID))
	for _, s := range st.byID {
		all = append(all, s)
	}
	for _, s := range all {
		st.drop(s)
	}
	st.mu.Unlock()
	closeAll(all)
}

// count returns the number of live sessions (for tests and metrics).
func (st *sessionStore) count() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.byID)
}

func closeAll(ss []*session) {
	for _, s := range ss {
		s.close()
	}
}

// samePrincipal keeps a session to the caller that opened it.
func samePrincipal(a, b Principal) bool { return a.Subject == b.Subject && a.Tenant == b.Tenant }
