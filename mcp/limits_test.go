package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestClientAddress(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	for _, tc := range []struct {
		name    string
		remote  string
		xff     []string
		trusted []netip.Prefix
		want    string
	}{
		{"IPv4 peer", "203.0.113.7:5555", nil, nil, "203.0.113.7"},
		{"IPv6 peer counts by its /64", "[2001:db8:1:2:3:4:5:6]:443", nil, nil, "2001:db8:1:2::/64"},
		{"IPv4-mapped IPv6 peer", "[::ffff:203.0.113.7]:1", nil, nil, "203.0.113.7"},
		{"unparsable peer", "pipe", nil, nil, "unknown"},
		{"X-Forwarded-For ignored without trusted proxies", "203.0.113.7:1", []string{"198.51.100.1"}, nil, "203.0.113.7"},
		{"X-Forwarded-For ignored from an untrusted peer", "203.0.113.7:1", []string{"198.51.100.1"}, proxies, "203.0.113.7"},
		{"trusted proxy: the hop before it", "10.1.2.3:1", []string{"198.51.100.1"}, proxies, "198.51.100.1"},
		{"a spoofed left hop is not believed", "10.1.2.3:1", []string{"192.0.2.66, 198.51.100.1"}, proxies, "198.51.100.1"},
		{"chained trusted proxies", "10.1.2.3:1", []string{"198.51.100.1, 10.9.9.9", "10.8.8.8"}, proxies, "198.51.100.1"},
		{"only trusted hops: the leftmost", "10.1.2.3:1", []string{"10.4.4.4"}, proxies, "10.4.4.4"},
		{"malformed hop: the proxy itself", "10.1.2.3:1", []string{"198.51.100.1, garbage"}, proxies, "10.1.2.3"},
		{"IPv6 client behind a proxy", "[fd00::1]:1", []string{"2001:db8::9"}, proxies, "2001:db8::/64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", nil)
			r.RemoteAddr = tc.remote
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := clientAddress(r, tc.trusted); got != tc.want {
				t.Errorf("clientAddress = %q, want %q", got, tc.want)
			}
		})
	}
}

// floodHandler serves s with the caller named by the bearer token, as a
// gateway without token validation does: every fresh bearer is a fresh
// caller. It also returns the transport's session store.
func floodHandler(s *Server, opts *HTTPOptions) (http.Handler, *sessionStore) {
	h := NewHTTPHandler(s, opts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			r = r.WithContext(WithPrincipal(r.Context(), Principal{Subject: "bearer:" + tok, Credential: NewSecret(tok)}))
		}
		h.ServeHTTP(w, r)
	}), h.(*httpHandler).sessions
}

// exchange is one in-process request from addr with the given bearer and
// session; it returns the status, the session id answered and the body.
func exchange(h http.Handler, addr, bearer, sid, body string) (int, string, string) {
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
	r.Host = "127.0.0.1"
	r.RemoteAddr = addr + ":40000"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if bearer != "" {
		r.Header.Set("Authorization", "Bearer "+bearer)
	}
	if sid != "" {
		r.Header.Set(HeaderSessionID, sid)
		r.Header.Set(HeaderProtocolVersion, "2025-11-25")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Header().Get(HeaderSessionID), w.Body.String()
}

const (
	initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`
	pingBody = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
)

func randomBearer() string { return rand.Text() }

// TestSessionFlood reproduces issue 13's flood: 10,050 initialize calls
// from one address, each with a fresh bearer. The flood churns its own
// share; a client from another address still gets in and a session in use
// on the flooded address survives.
func TestSessionFlood(t *testing.T) {
	const flood = 10_050
	for _, proving := range []bool{false, true} {
		name := map[bool]string{false: "initialize only", true: "initialize and ping"}[proving]
		t.Run(name, func(t *testing.T) {
			s := NewServer(Implementation{Name: "flood", Version: "1"}, nil)
			h, store := floodHandler(s, nil)
			const attacker, other = "203.0.113.7", "198.51.100.20"

			// A real client on the attacker's address (the same NAT),
			// using its session.
			victimBearer := randomBearer()
			status, victim, _ := exchange(h, attacker, victimBearer, "", initBody)
			if status != 200 || victim == "" {
				t.Fatalf("victim initialize: %d", status)
			}
			if status, _, _ := exchange(h, attacker, victimBearer, victim, pingBody); status != 200 {
				t.Fatalf("victim ping: %d", status)
			}

			counts := map[int]int{}
			var refusal string
			for range flood {
				bearer := randomBearer()
				status, sid, body := exchange(h, attacker, bearer, "", initBody)
				counts[status]++
				if status == 200 && proving {
					exchange(h, attacker, bearer, sid, pingBody)
				}
				if status != 200 && refusal == "" {
					refusal = body
				}
			}
			held := store.count()
			t.Logf("%s: %d initialize from one address answered %v; sessions held: %d; first refusal: %s", name, flood, counts, held, refusal)
			if held > defaultSessionLimits().PerAddress+1 {
				t.Errorf("%d sessions held, more than the per-address limit", held)
			}
			if proving {
				// Proven sessions are never closed for newcomers: beyond the
				// address's share, initialize is refused, naming the limit.
				if counts[http.StatusTooManyRequests] != flood-defaultSessionLimits().PerAddress+1 {
					t.Errorf("429 answers %d, want %d", counts[http.StatusTooManyRequests], flood-defaultSessionLimits().PerAddress+1)
				}
				if !strings.Contains(refusal, "sessions for this client address (limit 1000)") {
					t.Errorf("refusal %s does not name the limit", refusal)
				}
			} else if counts[200] != flood {
				t.Errorf("fresh flood: %v, want every initialize served (by closing the flood's own oldest fresh sessions)", counts)
			}

			// Another address gets in, and the victim's session still works.
			ob := randomBearer()
			status, osid, _ := exchange(h, other, ob, "", initBody)
			if status != 200 {
				t.Fatalf("a client from another address: %d", status)
			}
			if status, _, _ := exchange(h, other, ob, osid, pingBody); status != 200 {
				t.Errorf("the other address's session: %d", status)
			}
			if status, _, _ := exchange(h, attacker, victimBearer, victim, pingBody); status != 200 {
				t.Errorf("the session in use on the flooded address was ended: %d", status)
			}
		})
	}
}

// TestSessionsGlobalEviction fills the total limit from many addresses: the
// sessions that never sent a second message are closed first, then
// initialize is refused with 503; sessions in use are never closed.
func TestSessionsGlobalEviction(t *testing.T) {
	s := NewServer(Implementation{Name: "global", Version: "1"}, nil)
	h := NewHTTPHandler(s, &HTTPOptions{Legacy: LegacyOptions{Sessions: Limits{Total: 100, PerAddress: -1, PerCaller: -1}}})
	store := h.(*httpHandler).sessions
	addr := func(i int) string { return fmt.Sprintf("192.0.2.%d", i%250) }

	var used []string
	for i := range 50 {
		_, sid, _ := exchange(h, addr(i), "", "", initBody)
		if status, _, _ := exchange(h, addr(i), "", sid, pingBody); status != 200 {
			t.Fatalf("ping %d: %d", i, status)
		}
		used = append(used, sid)
	}
	counts := map[int]int{}
	for i := range 1_000 {
		status, _, _ := exchange(h, addr(100+i), "", "", initBody)
		counts[status]++
	}
	if counts[200] != 1_000 || store.count() != 100 {
		t.Errorf("fresh sessions over the total: %v, %d held; want all served by closing older fresh ones, 100 held", counts, store.count())
	}
	for i, sid := range used {
		if status, _, _ := exchange(h, addr(i), "", sid, pingBody); status != 200 {
			t.Fatalf("session in use %d was closed: %d", i, status)
		}
	}
	// Prove the other 50: now nothing may go, and initialize is refused.
	for len(used) < 100 {
		_, sid, _ := exchange(h, addr(7), "", "", initBody)
		if status, _, _ := exchange(h, addr(7), "", sid, pingBody); status != 200 {
			t.Fatalf("ping: %d", status)
		}
		used = append(used, sid)
	}
	status, _, body := exchange(h, addr(9), "", "", initBody)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "sessions in total (limit 100)") {
		t.Errorf("over the total with every session in use: %d %s", status, body)
	}
	if status, _, _ := exchange(h, addr(0), "", used[0], pingBody); status != 200 {
		t.Errorf("first session: %d", status)
	}
}

func TestSessionsPerCaller(t *testing.T) {
	s := NewServer(Implementation{Name: "caller", Version: "1"}, nil)
	h, _ := floodHandler(s, &HTTPOptions{Legacy: LegacyOptions{Sessions: Limits{PerCaller: 3}}})
	for i := range 3 {
		_, sid, _ := exchange(h, fmt.Sprintf("192.0.2.%d", i), "alice", "", initBody)
		exchange(h, fmt.Sprintf("192.0.2.%d", i), "alice", sid, pingBody)
	}
	status, _, body := exchange(h, "192.0.2.99", "alice", "", initBody)
	if status != http.StatusTooManyRequests || !strings.Contains(body, "sessions for this caller (limit 3)") {
		t.Errorf("alice's fourth session from a fourth address: %d %s", status, body)
	}
	if status, _, _ := exchange(h, "192.0.2.99", "bob", "", initBody); status != 200 {
		t.Errorf("bob: %d", status)
	}
}

// streamWriter is a ResponseWriter for in-process listen streams: it
// signals the first write (the acknowledgement, or an error answer).
type streamWriter struct {
	mu     sync.Mutex
	h      http.Header
	status int
	body   bytes.Buffer
	first  chan struct{}
	once   sync.Once
}

func newStreamWriter() *streamWriter {
	return &streamWriter{h: http.Header{}, first: make(chan struct{})}
}

func (w *streamWriter) Header() http.Header { return w.h }
func (w *streamWriter) WriteHeader(s int) {
	w.mu.Lock()
	if w.status == 0 {
		w.status = s
	}
	w.mu.Unlock()
}
func (w *streamWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.mu.Lock()
	w.body.Write(p)
	w.mu.Unlock()
	w.once.Do(func() { close(w.first) })
	return len(p), nil
}
func (w *streamWriter) Flush() {}

func (w *streamWriter) result() (int, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status, w.body.String()
}

const listenBody = `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`

// openListen starts one listen stream from addr and waits for its first
// answer: the acknowledgement (200) or a refusal.
func openListen(ctx context.Context, h http.Handler, addr, bearer string, wg *sync.WaitGroup) (int, string) {
	r := listenHTTPRequest(ctx, addr)
	if bearer != "" {
		r.Header.Set("Authorization", "Bearer "+bearer)
	}
	w := newStreamWriter()
	wg.Add(1)
	go func() { defer wg.Done(); h.ServeHTTP(w, r) }()
	<-w.first
	return w.result()
}

// listenHTTPRequest is an in-process subscriptions/listen request from addr.
func listenHTTPRequest(ctx context.Context, addr string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(listenBody)).WithContext(ctx)
	r.Host = "127.0.0.1"
	r.RemoteAddr = addr + ":40000"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(HeaderProtocolVersion, ProtocolVersion)
	r.Header.Set(HeaderMethod, "subscriptions/listen")
	return r
}

// TestListenStreamFlood reproduces issue 13's 3,000 anonymous listen
// streams from one address: the address's share is held, the rest refused
// naming the limit, and another address still gets a stream.
func TestListenStreamFlood(t *testing.T) {
	s := NewServer(Implementation{Name: "streams", Version: "1"}, nil)
	must(t, s.AddTool(&Tool{Name: "t"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) { return TextResult("x"), nil }))
	h, _ := floodHandler(s, nil)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()

	const flood = 3_000
	counts := map[int]int{}
	var refusal string
	for range flood {
		status, body := openListen(ctx, h, "203.0.113.7", "", &wg)
		counts[status]++
		if status != 200 && refusal == "" {
			refusal = body
		}
	}
	limit := defaultStreamLimits().PerAddress
	t.Logf("%d anonymous listen streams from one address: %v; first refusal: %s", flood, counts, refusal)
	if counts[200] != limit || counts[http.StatusTooManyRequests] != flood-limit {
		t.Errorf("answers %v, want %d held and %d refused", counts, limit, flood-limit)
	}
	if !strings.Contains(refusal, fmt.Sprintf("listen streams for this client address (limit %d)", limit)) {
		t.Errorf("refusal does not name the limit: %s", refusal)
	}
	if status, body := openListen(ctx, h, "198.51.100.20", "", &wg); status != 200 || !strings.Contains(body, "acknowledged") {
		t.Errorf("another address: %d %s", status, body)
	}

	// Per caller: a caller's streams count wherever they come from.
	for i := range defaultStreamLimits().PerCaller {
		if status, _ := openListen(ctx, h, fmt.Sprintf("192.0.2.%d", i), "carol", &wg); status != 200 {
			t.Fatalf("carol's stream %d: %d", i, status)
		}
	}
	if status, body := openListen(ctx, h, "192.0.2.200", "carol", &wg); status != http.StatusTooManyRequests || !strings.Contains(body, "for this caller") {
		t.Errorf("carol over her limit: %d %s", status, body)
	}

	// A stream's slot is given back when it ends.
	cancel()
	wg.Wait()
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	var wg2 sync.WaitGroup
	defer func() { cancel2(); wg2.Wait() }()
	if status, _ := openListen(ctx2, h, "203.0.113.7", "", &wg2); status != 200 {
		t.Errorf("after the flood ended: %d", status)
	}
}

// TestLimitsAnswerJSON checks the refusal is one JSON-RPC error object with
// the limit in its data.
func TestLimitsAnswerJSON(t *testing.T) {
	e := limitError("listen streams", scopeAddress, 4)
	var data struct {
		Limit string `json:"limit"`
		Max   int    `json:"max"`
	}
	if err := json.Unmarshal(e.Data, &data); err != nil || data.Limit != "listen streams for this client address" || data.Max != 4 || e.HTTPStatus() != 429 {
		t.Errorf("limitError = %+v (%s)", e, e.Data)
	}
	if limitError("sessions", scopeTotal, 1).HTTPStatus() != 503 {
		t.Error("the total limit answers 503")
	}
}

// TestBusySessionOutlivesIdleTimeout: a session with a request in flight is
// in use, however long the request takes.
func TestBusySessionOutlivesIdleTimeout(t *testing.T) {
	s := NewServer(Implementation{Name: "busy", Version: "1"}, nil)
	started, release := make(chan struct{}), make(chan struct{})
	must(t, s.AddTool(&Tool{Name: "slow"}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
		close(started)
		<-release
		return TextResult("done"), nil
	}))
	h := NewHTTPHandler(s, &HTTPOptions{Legacy: LegacyOptions{IdleTimeout: 20 * time.Millisecond}})
	store := h.(*httpHandler).sessions
	_, sid, _ := exchange(h, "192.0.2.1", "", "", initBody)
	done := make(chan int, 1)
	go func() {
		status, _, _ := exchange(h, "192.0.2.1", "", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow"}}`)
		done <- status
	}()
	<-started
	time.Sleep(60 * time.Millisecond)
	exchange(h, "192.0.2.2", "", "", initBody) // runs expiry
	if store.get(sid, Principal{}, false) == nil {
		t.Fatal("the busy session expired")
	}
	close(release)
	if status := <-done; status != 200 {
		t.Errorf("slow call: %d", status)
	}
	time.Sleep(60 * time.Millisecond)
	exchange(h, "192.0.2.2", "", "", initBody)
	if store.get(sid, Principal{}, false) != nil {
		t.Error("the idle session did not expire once its request ended")
	}
}
