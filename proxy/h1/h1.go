// Package h1 is an HTTP/1.1 client transport for plain-HTTP upstreams that
// runs each exchange on the calling goroutine: it writes the request and
// reads the response itself. net/http's Transport hands every exchange to
// a reader and a writer goroutine of the connection, three goroutine
// switches a call, each a thread wake-up when the process is idle; a
// gateway whose upstream is a sidecar or an in-cluster service pays them on
// every tool call. Requests are written by [http.Request.Write] and
// responses parsed by [http.ReadResponse], so the wire format is net/http's
// own.
//
// Invariants:
//   - Only "http" URLs are served; anything else is an error (TLS
//     upstreams keep net/http's Transport and its HTTP/2).
//   - A connection is reused only when its previous response was read to
//     its end, neither side asked to close, no byte is pending on it, and a
//     non-blocking peek finds it open (so a keep-alive connection the
//     server closed while idle is never written to). Closing a body early
//     closes its connection.
//   - When writing a request fails, an answer the upstream sent before
//     (a 401 or 413 to an upload it would not read) is returned instead of
//     the write error, if it arrives within earlyAnswerWait.
//   - A request is sent again, once, only when it failed on a reused
//     connection before any byte of a response arrived and it is
//     replayable: GET, HEAD, OPTIONS or TRACE (or carrying an
//     Idempotency-Key header) with no body or a rewindable one, as
//     net/http decides. Nothing else is ever retried.
//   - The request's context bounds the exchange and the body read: its
//     end (cancellation or deadline) unblocks I/O at once, and the error
//     then wraps the context's error. A connection in the pool carries no
//     deadline.
//   - Idle connections are bounded per host and closed after IdleTimeout.
//
// Unlike net/http's Transport it asks for no compression (no implicit
// Accept-Encoding: gzip), uses no proxy from the environment, and does not
// bound the connections per host.
package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for [Transport].
const (
	DefaultMaxIdlePerHost = 256
	DefaultIdleTimeout    = 90 * time.Second
	DefaultDialTimeout    = 10 * time.Second
)

// Transport is an http.RoundTripper for "http" URLs. The zero value is
// ready to use; set the fields before the first request. It is safe for
// concurrent use.
type Transport struct {
	// DialContext opens connections (default: a net.Dialer with
	// DefaultDialTimeout and 30 s keep-alive probes).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxIdlePerHost bounds the idle connections kept per host:port
	// (0 means DefaultMaxIdlePerHost).
	MaxIdlePerHost int
	// IdleTimeout closes a connection idle for that long (0 means
	// DefaultIdleTimeout).
	IdleTimeout time.Duration

	mu   sync.Mutex
	idle map[string][]*conn // per host:port, most recently used last
	last atomic.Pointer[hostAddr]
}

// hostAddr is the address to dial for a URL's host, kept for the host
// last seen (a gateway's transport serves one upstream: its address is
// worked out once, not on every request).
type hostAddr struct{ host, addr string }

// conn is one connection and its buffers.
type conn struct {
	t      *Transport
	addr   string
	nc     net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	idleAt time.Time
	timer  *time.Timer // closes the connection when idle too long
	probe  probe       // is an idle connection still open?
	abort  func()      // fails the connection's pending I/O at once
}

var errNotHTTP = errors.New("h1: only http URLs are served")

// earlyAnswerWait bounds the wait for an answer the upstream may have sent
// before a request's write failed.
const earlyAnswerWait = 250 * time.Millisecond

// aLongTimeAgo is a deadline in the past: it fails pending I/O at once.
var aLongTimeAgo = time.Unix(1, 0)

// RoundTrip sends req on an idle or new connection and returns its
// response, whose Body must be read to its end (or closed) to free the
// connection.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" {
		closeBody(req)
		return nil, errNotHTTP
	}
	ctx := req.Context()
	addr := t.hostPort(req.URL)
	for attempt := 0; ; attempt++ {
		c, reused, err := t.conn(ctx, addr)
		if err != nil {
			closeBody(req)
			return nil, contextError(ctx, err)
		}
		resp, read, err := c.exchange(ctx, req)
		if err == nil {
			return resp, nil
		}
		c.close()
		if attempt == 0 && reused && !read && ctx.Err() == nil && replayable(req) {
			if req, err = rewound(req); err == nil {
				continue
			}
		}
		return nil, contextError(ctx, err)
	}
}

// CloseIdleConnections closes every idle connection.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.close()
		}
	}
}

// conn takes the most recently used idle connection to addr that is still
// open, or dials one; reused says which.
func (t *Transport) conn(ctx context.Context, addr string) (*conn, bool, error) {
	for {
		c := t.take(addr)
		if c == nil {
			break
		}
		if c.br.Buffered() == 0 && c.probe.alive() {
			return c, true, nil
		}
		c.close()
	}
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: DefaultDialTimeout, KeepAlive: 30 * time.Second}).DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, false, err
	}
	c := &conn{t: t, addr: addr, nc: nc, br: bufio.NewReaderSize(nc, 4<<10), bw: bufio.NewWriterSize(nc, 4<<10)}
	c.probe.init(nc)
	c.abort = c.failIO
	return c, false, nil
}

// take removes and returns the most recently used idle connection to
// addr (nil when none is idle); one idle past IdleTimeout is closed.
func (t *Transport) take(addr string) *conn {
	var stale []*conn
	defer func() { // after the unlock below
		for _, c := range stale {
			c.close()
		}
	}()
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		list := t.idle[addr]
		if len(list) == 0 {
			return nil
		}
		c := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[addr] = list[:len(list)-1]
		c.timer.Stop()
		if time.Since(c.idleAt) < t.idleTimeout() {
			return c
		}
		stale = append(stale, c) // its timer is late
	}
}

// put returns a connection whose exchange ended cleanly to the idle pool.
func (t *Transport) put(c *conn) {
	t.mu.Lock()
	max := t.MaxIdlePerHost
	if max <= 0 {
		max = DefaultMaxIdlePerHost
	}
	if len(t.idle[c.addr]) >= max {
		t.mu.Unlock()
		c.close()
		return
	}
	if t.idle == nil {
		t.idle = map[string][]*conn{}
	}
	c.idleAt = time.Now()
	t.idle[c.addr] = append(t.idle[c.addr], c)
	if c.timer == nil {
		c.timer = time.AfterFunc(t.idleTimeout(), c.expire)
	} else {
		c.timer.Reset(t.idleTimeout())
	}
	t.mu.Unlock()
}

// expire closes c if it is still idle (a connection taken since is left
// alone).
func (c *conn) expire() {
	t := c.t
	t.mu.Lock()
	list := t.idle[c.addr]
	found := false
	for i, x := range list {
		if x == c {
			t.idle[c.addr] = append(list[:i], list[i+1:]...)
			found = true
			break
		}
	}
	t.mu.Unlock()
	if found {
		c.close()
	}
}

func (t *Transport) idleTimeout() time.Duration {
	if t.IdleTimeout > 0 {
		return t.IdleTimeout
	}
	return DefaultIdleTimeout
}

func (c *conn) close() { _ = c.nc.Close() }

// failIO puts the connection's deadline in the past, which fails its
// pending and future I/O at once.
func (c *conn) failIO() { _ = c.nc.SetDeadline(aLongTimeAgo) }

// exchange writes req and reads the response head; read reports whether
// any byte of a response arrived (after which nothing is retried).
func (c *conn) exchange(ctx context.Context, req *http.Request) (resp *http.Response, read bool, err error) {
	// The context's end (its deadline included) fails the connection's
	// I/O at once; the error is then the context's (a connection deadline
	// of its own could fire a moment before the context says it ended).
	stop := context.AfterFunc(ctx, c.abort)
	defer func() {
		if err != nil {
			stop() // on success the body stops it when it is released
		}
	}()
	werr := req.Write(c.bw) // closes req.Body
	if werr == nil {
		werr = c.bw.Flush()
	}
	if werr != nil {
		// An upstream may answer before it has read the whole body (a 401
		// or a 413 to an upload) and close: its answer, when it came, says
		// more than the failed write. It is waited for briefly, and the
		// connection is not reused.
		if ctx.Err() != nil {
			return nil, false, werr
		}
		_ = c.nc.SetReadDeadline(time.Now().Add(earlyAnswerWait))
	}
	for {
		if _, err := c.br.Peek(1); err != nil {
			if werr != nil {
				return nil, false, werr
			}
			return nil, false, err
		}
		if resp, err = http.ReadResponse(c.br, req); err != nil {
			return nil, true, fmt.Errorf("h1: reading the response: %w", err)
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, true, errors.New("h1: the upstream switched protocols, which is not supported")
		case resp.StatusCode >= 100 && resp.StatusCode < 200:
			continue // informational (103 Early Hints): the response follows
		}
		break
	}
	if werr != nil {
		_ = c.nc.SetReadDeadline(time.Time{}) // the body's reads end with the context alone
	}
	b := &body{rc: resp.Body, c: c, ctx: ctx, stop: stop, keep: werr == nil && !resp.Close && !req.Close}
	if resp.Body == http.NoBody { // 204, 304, HEAD, Content-Length: 0
		b.release(true) // free at once: callers often close such a body unread
		return resp, true, nil
	}
	resp.Body = b
	return resp, true, nil
}

// body is a response body: it frees its connection at its end, closes it
// when closed early or on an error.
type body struct {
	rc   io.ReadCloser
	c    *conn
	ctx  context.Context
	stop func() bool
	keep bool
	done atomic.Bool
	eof  atomic.Bool // read to its end: further reads give io.EOF again
}

func (b *body) Read(p []byte) (int, error) {
	if b.done.Load() {
		if b.eof.Load() {
			return 0, io.EOF
		}
		return 0, errors.New("h1: read on a closed response body")
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.eof.Store(true)
		b.release(true)
	case err != nil:
		b.release(false)
		err = contextError(b.ctx, err)
	}
	return n, err
}

// Close frees the connection if the body was read to its end and closes
// it otherwise (no draining: a large body is never read to reuse a
// connection).
func (b *body) Close() error {
	b.release(false)
	return nil
}

// release ends the exchange once: a clean end returns the connection to
// the pool, anything else closes it.
func (b *body) release(clean bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	// stop fails when the context's cancellation already fired: the
	// connection's deadline is then in the past, so it is not reused.
	if stopped := b.stop(); clean && stopped && b.keep {
		b.c.t.put(b.c)
		return
	}
	b.c.close()
}

// replayable is net/http's rule for sending a request again: an
// idempotent method (or an idempotency key) and a body that can be had
// again.
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

// rewound is req with a fresh copy of its body, for a second attempt.
func rewound(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	b, err := req.GetBody()
	if err != nil {
		return nil, fmt.Errorf("h1: rewinding the body to retry: %w", err)
	}
	r := *req
	r.Body = b
	return &r, nil
}

// contextError is err, or the context's error wrapping it when the
// context ended (the I/O failed because of it).
func contextError(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return err
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// hostPort is the address to dial for u: its host, port 80 by default.
// It depends on u.Host alone.
func (t *Transport) hostPort(u *url.URL) string {
	if last := t.last.Load(); last != nil && last.host == u.Host {
		return last.addr
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	addr := net.JoinHostPort(u.Hostname(), port)
	t.last.Store(&hostAddr{host: u.Host, addr: addr})
	return addr
}
