package mcp

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
)

// This file bounds what a client can hold open on the HTTP transport
// without proving anything: legacy sessions and subscriptions/listen
// streams. Each is counted three ways, globally, per client address and per
// caller, so that a flood from one address (even with a fresh bearer on
// every request) fills only that address's share and never locks out a
// client coming from elsewhere.

// Limits bound one kind of resource. A zero field takes the default of the
// resource; a negative one means no bound.
type Limits struct {
	// Total bounds the resource in this process.
	Total int
	// PerAddress bounds it per client address (an IPv4 address, or the /64
	// of an IPv6 one); see HTTPOptions.TrustedProxies.
	PerAddress int
	// PerCaller bounds it per authenticated caller (Principal Subject and
	// Tenant). Anonymous callers are bounded per address only.
	PerCaller int
}

// withDefaults fills zero fields from def.
func (l Limits) withDefaults(def Limits) Limits {
	if l.Total == 0 {
		l.Total = def.Total
	}
	if l.PerAddress == 0 {
		l.PerAddress = def.PerAddress
	}
	if l.PerCaller == 0 {
		l.PerCaller = def.PerCaller
	}
	return l
}

// Default limits of legacy sessions and of listen streams.
func defaultSessionLimits() Limits { return Limits{Total: 10_000, PerAddress: 1_000, PerCaller: 100} }
func defaultStreamLimits() Limits  { return Limits{Total: 10_000, PerAddress: 256, PerCaller: 32} }

// holder identifies who holds a resource: the client address and the
// caller ("" for an anonymous one).
type holder struct {
	addr   string
	caller string
}

func holderOf(r *http.Request, trusted []netip.Prefix) holder {
	p := PrincipalFrom(r.Context())
	return holder{addr: clientAddress(r, trusted), caller: callerKey(p)}
}

// callerKey identifies an authenticated caller; "" when anonymous.
func callerKey(p Principal) string {
	if p.Subject == "" {
		return ""
	}
	return p.Tenant + "\x00" + p.Subject
}

// clientAddress is the address a limit counts a request against: the TCP
// peer, or, when the peer is a trusted proxy, the nearest address in
// X-Forwarded-For that is not one (read from the right, so that a client
// cannot choose its address by sending the header itself). IPv6 addresses
// count by their /64, the block one subscriber usually holds.
func clientAddress(r *http.Request, trusted []netip.Prefix) string {
	peer := parseAddr(r.RemoteAddr)
	if len(trusted) > 0 && isTrusted(peer, trusted) {
		hops := r.Header.Values("X-Forwarded-For")
		for i := len(hops) - 1; i >= 0; i-- {
			parts := strings.Split(hops[i], ",")
			for j := len(parts) - 1; j >= 0; j-- {
				a := parseAddr(strings.TrimSpace(parts[j]))
				if !a.IsValid() {
					return addrKey(peer) // a malformed hop: believe nothing beyond it
				}
				peer = a
				if !isTrusted(a, trusted) {
					return addrKey(a)
				}
			}
		}
	}
	return addrKey(peer)
}

// parseAddr reads "ip", "ip:port" or "[ip]:port"; the zero Addr when it is
// neither.
func parseAddr(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func addrKey(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "unknown"
	case a.Is6():
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// limitError is the answer to a request over a limit: HTTP 429 for a
// per-address or per-caller limit (the client's own share), 503 for the
// process-wide one. The message and data name the limit.
func limitError(what, scope string, max int) *Error {
	status := http.StatusTooManyRequests
	if scope == "in total" {
		status = http.StatusServiceUnavailable
	}
	return NewError(CodeInternalError, fmt.Sprintf("Too many %s %s (limit %d): close some or try again later", what, scope, max),
		map[string]any{"limit": what + " " + scope, "max": max}).withStatus(status)
}

// Scopes of a limit, as limitError names them.
const (
	scopeTotal   = "in total"
	scopeAddress = "for this client address"
	scopeCaller  = "for this caller"
)

// counter counts the listen streams held, three ways.
type counter struct {
	limits Limits

	mu       sync.Mutex
	total    int
	byAddr   map[string]int
	byCaller map[string]int
}

func newCounter(l Limits) *counter {
	return &counter{limits: l, byAddr: map[string]int{}, byCaller: map[string]int{}}
}

// acquire takes one slot for h, or says which limit is reached.
func (c *counter) acquire(h holder, what string) *Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.limits
	switch {
	case over(c.total, l.Total):
		return limitError(what, scopeTotal, l.Total)
	case over(c.byAddr[h.addr], l.PerAddress):
		return limitError(what, scopeAddress, l.PerAddress)
	case h.caller != "" && over(c.byCaller[h.caller], l.PerCaller):
		return limitError(what, scopeCaller, l.PerCaller)
	}
	c.total++
	c.byAddr[h.addr]++
	if h.caller != "" {
		c.byCaller[h.caller]++
	}
	return nil
}

// release gives back a slot acquire took.
func (c *counter) release(h holder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	decrement(c.byAddr, h.addr)
	if h.caller != "" {
		decrement(c.byCaller, h.caller)
	}
}

// over reports whether n held already reach max (a negative max is none).
func over(n, max int) bool { return max >= 0 && n >= max }

func decrement(m map[string]int, k string) {
	if m[k] <= 1 {
		delete(m, k)
	} else {
		m[k]--
	}
}

// retryAfter is the Retry-After of a limit answer, in seconds.
const retryAfter = "5"
