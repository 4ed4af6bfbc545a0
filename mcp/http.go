package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HTTPOptions configure the Streamable HTTP transport. The zero value is a
// safe local default: loopback Host and Origin only, 4 MiB bodies.
type HTTPOptions struct {
	// AllowedHosts lists the Host names (optionally with :port) accepted,
	// the DNS-rebinding guard. Empty means loopback names only (localhost,
	// 127.0.0.1, [::1]); "*" accepts any host (put it behind a proxy that
	// checks Host).
	AllowedHosts []string
	// AllowedOrigins lists the browser origins (scheme://host[:port])
	// accepted when a request carries Origin. Empty means loopback origins
	// only; "*" accepts any origin.
	AllowedOrigins []string
	// HostRejected, when set, is told the Host of each request the
	// DNS-rebinding guard refuses (for a log line that names the setting).
	HostRejected func(host string)
	// MaxBodyBytes bounds a request body (default 4 MiB); larger gets 413.
	MaxBodyBytes int64
	// WriteTimeout bounds each write to the client (default 30 s). Streams
	// stay open as long as they keep writing.
	WriteTimeout time.Duration
	// Legacy configures the serving of 2025-11-25 (and older) clients.
	Legacy LegacyOptions
	// ListenStreams bounds open subscriptions/listen streams: in total
	// (default 10,000), per client address (default 256) and per caller
	// (default 32). A stream over a limit is refused (HTTP 429 for the
	// per-address and per-caller limits, 503 for the total) with an error
	// naming the limit.
	ListenStreams Limits
	// TrustedProxies are the proxies whose X-Forwarded-For is believed when
	// the limits find a request's client address (default none: the TCP
	// peer is the client). List the load balancers in front of the server,
	// or every client behind them counts as one address.
	TrustedProxies []netip.Prefix
}

// NewHTTPHandler serves s over Streamable HTTP at whatever path it is
// mounted on: one JSON-RPC message per POST, answered with application/json
// or, when the handler emits notifications first, with a request-scoped SSE
// stream. GET and DELETE get 405. The client closing the connection cancels
// the handler's context.
func NewHTTPHandler(s *Server, opts *HTTPOptions) http.Handler {
	h := &httpHandler{srv: s}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.MaxBodyBytes <= 0 {
		h.opts.MaxBodyBytes = 4 << 20
	}
	if h.opts.WriteTimeout <= 0 {
		h.opts.WriteTimeout = 30 * time.Second
	}
	h.jsonType = []string{"application/json"}
	h.hosts = newHostSet(h.opts.AllowedHosts)
	h.origins = newOriginSet(h.opts.AllowedOrigins)
	h.sessions = newSessionStore(h.opts.Legacy.Sessions, h.opts.Legacy.IdleTimeout)
	h.streams = newCounter(h.opts.ListenStreams.withDefaults(defaultStreamLimits()))
	s.onClose(h.sessions.closeAll)
	return h
}

type httpHandler struct {
	srv      *Server
	opts     HTTPOptions
	hosts    hostSet
	origins  originSet
	sessions *sessionStore
	streams  *counter // open subscriptions/listen streams
	jsonType []string // {"application/json"}, the Content-Type of every JSON answer
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.hosts.allowHost(r.Host) {
		if h.opts.HostRejected != nil {
			h.opts.HostRejected(r.Host)
		}
		writeJSONError(w, http.StatusForbidden, nil, NewError(CodeInvalidRequest, "Forbidden: Host not allowed", nil))
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !h.origins.allow(o) {
		writeJSONError(w, http.StatusForbidden, nil, NewError(CodeInvalidRequest, "Forbidden: Origin not allowed", nil))
		return
	}
	if r.Method != http.MethodPost {
		legacy := !h.opts.Legacy.Disable && r.Header.Get(HeaderSessionID) != ""
		switch {
		case legacy && r.Method == http.MethodGet:
			h.serveLegacyGET(w, r)
		case legacy && r.Method == http.MethodDelete:
			h.serveLegacyDELETE(w, r)
		default:
			w.Header().Set("Allow", http.MethodPost)
			writeJSONError(w, http.StatusMethodNotAllowed, nil, NewError(CodeInvalidRequest, "Method not allowed: the MCP endpoint accepts POST only", nil))
		}
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if ct != "application/json" && !isJSONMediaType(ct) {
			writeJSONError(w, http.StatusUnsupportedMediaType, nil, NewError(CodeInvalidRequest, "Unsupported Media Type: send application/json", nil))
			return
		}
	} else {
		writeJSONError(w, http.StatusUnsupportedMediaType, nil, NewError(CodeInvalidRequest, "Unsupported Media Type: Content-Type application/json is required", nil))
		return
	}
	buf := getBuf()
	defer putBuf(buf)
	body, err := readBody(r.Body, h.opts.MaxBodyBytes, *buf)
	*buf = body[:0]
	if err != nil {
		if errors.Is(err, errTooLarge) {
			writeJSONError(w, http.StatusRequestEntityTooLarge, nil, NewError(CodeInvalidRequest, fmt.Sprintf("Request body exceeds %d bytes", h.opts.MaxBodyBytes), nil))
		} else {
			writeJSONError(w, http.StatusBadRequest, nil, NewError(CodeInvalidRequest, "Could not read the request body", nil))
		}
		return
	}
	st := &httpStream{w: w, rc: *http.NewResponseController(w), timeout: h.opts.WriteTimeout, contentType: h.jsonType}
	// The body is read: lift the server's read deadline so that a long
	// stream is not cancelled by it (the connection is still watched for
	// the client going away).
	_ = st.rc.SetReadDeadline(time.Time{})

	pooled := getMessage() // back to the pool only once a request of a modern or legacy client is answered
	msg, id, jerr := decodeMessageInto(pooled, body)
	if jerr != nil {
		writeJSONError(w, jerr.HTTPStatus(), id, jerr)
		return
	}
	if h.legacyRoute(r, msg) {
		h.serveLegacyPOST(w, r, st, msg)
		return
	}
	if h.opts.Legacy.Disable && !msg.response && !msg.isNotification() && looksLegacy(r, msg) {
		jerr := errLegacyDisabled(r, msg)
		writeJSONError(w, jerr.HTTPStatus(), msg.id, jerr)
		return
	}
	if msg.response {
		writeJSONError(w, http.StatusBadRequest, msg.id, NewError(CodeInvalidRequest, "Invalid Request: clients must not send JSON-RPC responses", nil))
		return
	}
	if msg.isNotification() {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	ctx, ob := h.srv.observe(r.Context(), msg, "http", "")
	c, jerr := h.srv.admit(ctx, msg, r.Header)
	if jerr != nil {
		ob.end(nil, jerr)
		writeJSONError(w, jerr.HTTPStatus(), msg.id, jerr)
		return
	}
	c.obs = ob
	if msg.method == "subscriptions/listen" {
		h.serveListen(ctx, r, c, st)
		return
	}
	// The answer is encoded into a pooled buffer lent to the call (see
	// call.resp), which goes back to the pool only once the response is
	// written and observed: nothing else keeps it.
	resp := getBuf()
	defer putBuf(resp)
	c.resp, st.resp = resp, resp
	result, jerr := h.srv.handle(ctx, c, st)
	st.finish(msg.id, result, jerr)
	ob.end(result, jerr)
	// Answered and observed: the message goes back to the pool, and the
	// call (which a handler may keep) no longer refers to it. Nothing else
	// did: the call's Request, its tool request and the observation copy
	// what they keep of the message, or alias the body's own copy.
	c.msg, c.params = nil, nil
	putMessage(msg)
}

// serveListen serves a subscriptions/listen request within the stream
// limits. On HTTP/1.x the stream is parked once acknowledged (see
// parkedStream): it then ends, releasing its slot and its observation,
// after ServeHTTP has returned.
func (h *httpHandler) serveListen(ctx context.Context, r *http.Request, c *call, st *httpStream) {
	who := holderOf(r, h.opts.TrustedProxies)
	if jerr := h.streams.acquire(who, "listen streams"); jerr != nil {
		c.obs.end(nil, jerr)
		st.w.Header().Set("Retry-After", retryAfter)
		writeJSONError(st.w, jerr.HTTPStatus(), c.msg.id, jerr)
		return
	}
	ob := c.obs // a parked stream must not keep the call (it holds the response)
	end := func(result []byte) {
		h.streams.release(who)
		ob.end(result, nil)
	}
	if r.ProtoMajor == 1 {
		st.parking = &parking{keepAlive: h.srv.opts.KeepAlive, end: end}
	}
	result, jerr := h.srv.handle(ctx, c, st)
	if st.parking != nil && st.parking.parked {
		return
	}
	st.finish(c.msg.id, result, jerr)
	if jerr != nil {
		h.streams.release(who)
		c.obs.end(nil, jerr)
		return
	}
	end(result)
}

// httpStream answers one POST. It stays a plain JSON response until the
// handler sends a notification; then it becomes an SSE stream and the
// response is its last event.
type httpStream struct {
	w       http.ResponseWriter
	rc      http.ResponseController // by value: one allocation less per request
	timeout time.Duration
	// contentType is the handler's Content-Type value for JSON answers,
	// shared by its responses (net/http only reads it).
	contentType []string
	parking     *parking // set when a listen stream may be parked
	// resp is the pooled buffer lent to the call for its answer (see
	// call.resp); nil when none was.
	resp *[]byte

	mu      sync.Mutex
	sse     bool
	done    bool
	lastErr error
}

func (st *httpStream) send(msg []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done {
		return errors.New("mcp: response already sent")
	}
	if st.lastErr != nil {
		return st.lastErr
	}
	st.startSSE()
	st.lastErr = st.writeEvent(msg)
	return st.lastErr
}

func (st *httpStream) keepalive() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done || !st.sse {
		return nil
	}
	_ = st.rc.SetWriteDeadline(time.Now().Add(st.timeout))
	if _, err := io.WriteString(st.w, ": keep-alive\n\n"); err != nil {
		st.lastErr = err
		return err
	}
	return st.rc.Flush()
}

func (st *httpStream) startSSE() {
	if st.sse {
		return
	}
	st.sse = true
	hd := st.w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	st.w.WriteHeader(http.StatusOK)
}

func (st *httpStream) writeEvent(msg []byte) error {
	_ = st.rc.SetWriteDeadline(time.Now().Add(st.timeout))
	buf := getBuf()
	defer putBuf(buf)
	b := append(*buf, "data: "...)
	b = append(b, msg...)
	b = append(b, "\n\n"...)
	*buf = b
	if _, err := st.w.Write(b); err != nil {
		return err
	}
	return st.rc.Flush()
}

// finish writes the response; a nil result with a nil error means the
// request ended without a response (a listen stream whose client left).
func (st *httpStream) finish(id []byte, result []byte, jerr *Error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done {
		return
	}
	st.done = true
	if result == nil && jerr == nil {
		return
	}
	if jerr == nil && !st.sse {
		if b, ok := responseIn(st.resp, id, result); ok {
			st.writeJSON(http.StatusOK, b, len(result) > largeResult)
			return
		}
		if len(result) > largeResult {
			st.writeLarge(id, result)
			return
		}
	}
	buf := getBuf()
	defer putBuf(buf)
	var b []byte
	if jerr != nil {
		b = appendError(*buf, id, jerr)
	} else {
		b = appendResponse(*buf, id, result)
	}
	*buf = b
	if st.sse {
		if st.lastErr == nil {
			_ = st.writeEvent(b)
		}
		return
	}
	status := http.StatusOK
	if jerr != nil {
		status = jerr.HTTPStatus()
	}
	st.writeJSON(status, b, false)
}

// writeJSON writes a whole JSON answer, with its length when withLength is
// set (a large one: without it, net/http would chunk it).
func (st *httpStream) writeJSON(status int, b []byte, withLength bool) {
	_ = st.rc.SetWriteDeadline(time.Now().Add(st.timeout))
	hd := st.w.Header()
	if st.contentType != nil {
		hd["Content-Type"] = st.contentType
	} else {
		hd.Set("Content-Type", "application/json")
	}
	if withLength {
		hd.Set("Content-Length", strconv.Itoa(len(b)))
	}
	st.w.WriteHeader(status)
	_, _ = st.w.Write(b)
}

// largeResult is the size past which a JSON answer is written around the
// result (a cached list page of thousands of tools) instead of copying it
// into one buffer.
const largeResult = 64 << 10

// writeLarge writes a large result's answer in three pieces, with its
// length.
func (st *httpStream) writeLarge(id, result []byte) {
	var head [64]byte
	prefix := append(append(append(head[:0], `{"jsonrpc":"2.0","id":`...), id...), `,"result":`...)
	_ = st.rc.SetWriteDeadline(time.Now().Add(st.timeout))
	hd := st.w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", strconv.Itoa(len(prefix)+len(result)+1))
	st.w.WriteHeader(http.StatusOK)
	for _, piece := range [][]byte{prefix, result, []byte("}")} {
		if _, err := st.w.Write(piece); err != nil {
			return
		}
	}
}

// isJSONMediaType reports whether a Content-Type value is application/json
// with well-formed parameters.
func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

func writeJSONError(w http.ResponseWriter, status int, id []byte, e *Error) {
	buf := getBuf()
	defer putBuf(buf)
	*buf = appendError(*buf, id, e)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(*buf)
}

var errTooLarge = errors.New("request body too large")

// readBody reads at most limit bytes into dst.
func readBody(r io.Reader, limit int64, dst []byte) ([]byte, error) {
	lr := io.LimitedReader{R: r, N: limit + 1}
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := lr.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if int64(len(dst)) > limit {
			return dst, errTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// hostSet is an allow-list of host names, with optional ports.
type hostSet struct {
	any   bool
	names map[string]bool // "host" or "host:port", lower case, IPv6 without brackets
}

func newHostSet(list []string) hostSet {
	hs := hostSet{names: map[string]bool{}}
	if len(list) == 0 {
		list = []string{"localhost", "127.0.0.1", "::1"}
	}
	for _, h := range list {
		h = trimLower(h)
		if h == "*" {
			hs.any = true
			continue
		}
		if u, err := url.Parse(h); err == nil && u.Host != "" {
			h = u.Host // an origin was given
		}
		hs.names[strings.Trim(h, "[]")] = true
		if host, port, err := net.SplitHostPort(h); err == nil {
			delete(hs.names, strings.Trim(h, "[]"))
			hs.names[host+":"+port] = true
		}
	}
	return hs
}

func (hs hostSet) allowHost(hostport string) bool {
	if hs.any {
		return true
	}
	hostport = trimLower(hostport)
	host, port := strings.Trim(hostport, "[]"), ""
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.HasSuffix(hostport, "]") {
		if h, p, err := net.SplitHostPort(hostport); err == nil {
			host, port = h, p
		}
	}
	return hs.names[host] || (port != "" && hs.names[host+":"+port])
}

// originSet is an allow-list of browser origins. Configured origins match
// exactly (scheme, host and port, default ports filled in); the default
// list is the loopback hosts on any port and either scheme.
type originSet struct {
	any      bool
	loopback hostSet
	exact    map[string]bool
}

func newOriginSet(list []string) originSet {
	os := originSet{exact: map[string]bool{}}
	if len(list) == 0 {
		os.loopback = newHostSet(nil)
		return os
	}
	for _, o := range list {
		if strings.TrimSpace(o) == "*" {
			os.any = true
			continue
		}
		if n, ok := normalizeOrigin(o); ok {
			os.exact[n] = true
		}
	}
	return os
}

// normalizeOrigin returns scheme://host:port in lower case.
func normalizeOrigin(origin string) (string, bool) {
	u, err := url.Parse(trimLower(origin))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port), true
}

func (os originSet) allow(origin string) bool {
	if os.any {
		return true
	}
	n, ok := normalizeOrigin(origin)
	if !ok {
		return false
	}
	if os.exact[n] {
		return true
	}
	if len(os.exact) == 0 {
		u, _ := url.Parse(n)
		return os.loopback.allowHost(u.Host)
	}
	return false
}

// RunHTTP serves h on ln until ctx ends, then shuts down gracefully: listen
// streams of s (if not nil) get their final result, in-flight requests get
// up to grace to finish. Header reads are bounded; bodies are bounded by the
// handler's MaxBodyBytes and read deadlines.
func RunHTTP(ctx context.Context, ln net.Listener, h http.Handler, s *Server, grace time.Duration) error {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second, // lifted per request once its body is read
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if s != nil {
		s.Close()
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = hs.Close()
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && serr != nil {
		return serr
	}
	return err
}
