package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/proxy/h1"
)

// Defaults for [Config].
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 1 << 20
	DefaultMaxRedirects     = 5
)

// Config configures a [Proxy]. Only BaseURL is required.
type Config struct {
	// BaseURL is the configured upstream: scheme, host, optional port and
	// an optional base path that every tool path is appended to. It is the
	// only origin that ever receives a request (and so a credential).
	// Per-operation "servers" of the document are ignored on purpose.
	BaseURL *url.URL
	// Transport sends the requests. Nil means a transport tuned for a
	// gateway (see [NewTransport]). Its RoundTrip is called directly (no
	// http.Client) and must not follow redirects itself: the proxy does,
	// by the rules of redirect.go.
	Transport http.RoundTripper
	// Timeout bounds one upstream exchange, redirects and body included.
	// Zero means DefaultTimeout; negative means none (the caller's context
	// still applies).
	Timeout time.Duration
	// MaxResponseBytes caps the response body read. Zero means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// MaxRedirects bounds the same-origin redirects followed. Zero means
	// DefaultMaxRedirects; negative means never follow (a 3xx is returned
	// as it is).
	MaxRedirects int
	// CheckOutput validates every 2xx structuredContent against the tool's
	// outputSchema (MCP requires a match when one is declared); a body
	// that does not match becomes a tool error carrying the content. It
	// costs a decode per result, so it is off by default: turn it on, or
	// drop outputSchema from tools/list, when the upstream may drift from
	// its document. 202 Accepted results are not checked.
	CheckOutput bool
	// Auth puts credentials on each request. Nil means [Passthrough].
	Auth AuthResolver
	// UserAgent is sent when set (otherwise Go's default).
	UserAgent string
	// Logger receives build warnings and one debug line per call (tool,
	// method, path without query, status, duration); never a credential.
	// Nil discards.
	Logger *slog.Logger
}

// NewTransport returns the default upstream transport. Plain-HTTP
// upstreams (a sidecar, an in-cluster service) get package h1's transport,
// which runs each exchange on the calling goroutine (no reader and writer
// goroutine switches per call); HTTPS upstreams get net/http's, with
// HTTP/2 when the upstream offers it. Both keep up to 256 idle connections
// per host for 90 s, dial within 10 s, and use no proxy from the
// environment.
func NewTransport() http.RoundTripper {
	return schemes{plain: &h1.Transport{MaxIdlePerHost: 256}, tls: newTLSTransport()}
}

func newTLSTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: 0,
	}
}

// schemes sends http URLs to plain and everything else to tls.
type schemes struct {
	plain *h1.Transport
	tls   *http.Transport
}

func (s schemes) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL != nil && req.URL.Scheme == "http" {
		return s.plain.RoundTrip(req)
	}
	return s.tls.RoundTrip(req)
}

// CloseIdleConnections closes both transports' idle connections.
func (s schemes) CloseIdleConnections() {
	s.plain.CloseIdleConnections()
	s.tls.CloseIdleConnections()
}

// Proxy dispatches tool calls to one upstream. It is safe for concurrent
// use; build it once.
type Proxy struct {
	base         *url.URL
	origin       string            // scheme://host[:port], lower-case, default port dropped
	basePath     string            // escaped base path without trailing "/"
	rt           http.RoundTripper // redirects are followed by roundTrip
	timeout      time.Duration
	maxBytes     int64
	maxRedirects int
	checkOutput  bool
	auth         AuthResolver
	userAgent    []string
	log          *slog.Logger
	bufs         sync.Pool // *[]byte scratch for building URLs
	bodies       sync.Pool // *bodyBuffer for reading response bodies
	values       valueDecoders
	hide         addressHider // keeps the upstream's address out of results
}

// New builds a Proxy.
func New(cfg Config) (*Proxy, error) {
	if cfg.BaseURL == nil {
		return nil, errors.New("proxy: Config.BaseURL is required")
	}
	b := *cfg.BaseURL
	if b.Scheme != "http" && b.Scheme != "https" || b.Host == "" {
		return nil, fmt.Errorf("proxy: base URL %q must be an absolute http(s) URL", cfg.BaseURL.Redacted())
	}
	if b.User != nil {
		return nil, errors.New("proxy: base URL must not contain user info (use a static security scheme)")
	}
	b.RawQuery, b.Fragment, b.RawFragment = "", "", ""
	p := &Proxy{
		base:         &b,
		origin:       Origin(&b),
		basePath:     strings.TrimSuffix(b.EscapedPath(), "/"),
		timeout:      cfg.Timeout,
		maxBytes:     cfg.MaxResponseBytes,
		maxRedirects: cfg.MaxRedirects,
		checkOutput:  cfg.CheckOutput,
		auth:         cfg.Auth,
		log:          cfg.Logger,
	}
	if p.timeout == 0 {
		p.timeout = DefaultTimeout
	}
	if p.maxBytes <= 0 {
		p.maxBytes = DefaultMaxResponseBytes
	}
	if p.maxRedirects == 0 {
		p.maxRedirects = DefaultMaxRedirects
	}
	if p.auth == nil {
		p.auth = Passthrough()
	}
	if cfg.UserAgent != "" {
		if !validHeaderValue(cfg.UserAgent) {
			return nil, errors.New("proxy: invalid UserAgent")
		}
		p.userAgent = []string{cfg.UserAgent}
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.hide = newAddressHider(p.base, p.origin, p.basePath)
	rt := cfg.Transport
	if rt == nil {
		rt = NewTransport()
	}
	p.rt = rt
	p.bufs.New = func() any { b := make([]byte, 0, 512); return &b }
	p.bodies.New = func() any { return new(bodyBuffer) }
	return p, nil
}

// BaseURL is the configured upstream the proxy calls (a copy).
func (p *Proxy) BaseURL() *url.URL { u := *p.base; return &u }

// Origin is u's origin as the proxy compares them: scheme://host[:port],
// lower-cased, with the default port dropped.
func Origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" || scheme == "http" && port == "80" || scheme == "https" && port == "443" {
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		return scheme + "://" + host
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// sameOrigin reports whether u is on the configured upstream origin; the
// common case (scheme and host spelled exactly like the base URL) costs no
// allocation.
func (p *Proxy) sameOrigin(u *url.URL) bool {
	if u.Scheme == p.base.Scheme && u.Host == p.base.Host {
		return true
	}
	return Origin(u) == p.origin
}

// Accepted reports an upstream 202 Accepted that named a status resource
// to poll (Location or Operation-Location), for a later Tasks integration.
type Accepted struct {
	// Location is the absolute URL to poll (resolved against the request
	// URL; it may name another origin, which this package never calls).
	// It names the upstream's address: never show it to an agent.
	Location string
	// Path is Location relative to the API (the document's paths, with
	// the query: "/reports/7"), the form that may be shown; empty when
	// Location is on another origin.
	Path string
	// RetryAfter is the upstream's Retry-After, zero when absent.
	RetryAfter time.Duration
}

// DispatchResult is a dispatch with the upstream's status alongside the
// rendered tool result.
type DispatchResult struct {
	// Result is what the MCP client receives.
	Result *mcp.CallToolResult
	// Status is the final upstream HTTP status; zero when no response was
	// received (invalid arguments, timeout, connection error).
	Status int
	// Header is the final upstream response header (nil without response).
	Header http.Header
	// Accepted is set for a 202 with Location or Operation-Location.
	Accepted *Accepted
}

// Handler adapts an endpoint to an MCP tool handler. The caller's
// principal travels in ctx (set by the transport's auth layer).
func (p *Proxy) Handler(e *Endpoint) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return p.Dispatch(ctx, e, req.Arguments)
	}
}

// Dispatch runs one tool call and returns the tool result. The error is
// non-nil only for programming faults; every caller or upstream problem is
// a result with IsError set.
func (p *Proxy) Dispatch(ctx context.Context, e *Endpoint, args json.RawMessage) (*mcp.CallToolResult, error) {
	r, err := p.do(ctx, e, args)
	return r.Result, err
}

// Do is [Proxy.Dispatch] returning the upstream status and the 202 report.
func (p *Proxy) Do(ctx context.Context, e *Endpoint, args json.RawMessage) (*DispatchResult, error) {
	r, err := p.do(ctx, e, args)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// do is Do with the result as a value (Dispatch does not allocate it).
func (p *Proxy) do(ctx context.Context, e *Endpoint, args json.RawMessage) (DispatchResult, error) {
	if err := p.owns(e); err != nil {
		return DispatchResult{}, err
	}
	start := time.Now()
	parent := ctx
	if p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	values, err := e.decodeArgs(args)
	var req *http.Request
	if err == nil {
		req, err = p.buildRequest(ctx, e, values)
	}
	if err != nil {
		return p.failed(err)
	}
	out := p.send(parent, ctx, e, req)
	if p.log.Enabled(ctx, slog.LevelDebug) {
		p.log.LogAttrs(ctx, slog.LevelDebug, "proxy: dispatch",
			slog.String("tool", e.tool.Name), slog.String("method", e.method),
			slog.String("path", req.URL.EscapedPath()), slog.Int("status", out.Status),
			slog.Bool("isError", out.Result.IsError), slog.Duration("duration", time.Since(start)))
	}
	return out, nil
}

// owns checks that e is an endpoint of p.
func (p *Proxy) owns(e *Endpoint) error {
	if e == nil {
		return errors.New("proxy: nil endpoint")
	}
	if e.proxy != p {
		return errors.New("proxy: endpoint was compiled by another Proxy")
	}
	return nil
}

// failed is the one place where a request that could not be built
// becomes an outcome: a *callError the tool error result, anything else
// the programming fault it is.
func (p *Proxy) failed(err error) (DispatchResult, error) {
	var ce *callError
	if !errors.As(err, &ce) {
		return DispatchResult{}, err
	}
	res := ce.result()
	p.hide.hideResult(res)
	return DispatchResult{Result: res}, nil
}

// authorize puts the credentials on req; the resolver must leave it on
// the upstream origin. A resolver's error is a callError starting with
// lead.
func (p *Proxy) authorize(ctx context.Context, req *http.Request, e *Endpoint, lead string) error {
	if err := p.auth.Apply(ctx, req, &e.tool.Route); err != nil {
		return &callError{msg: lead + err.Error()}
	}
	if !p.sameOrigin(req.URL) {
		return fmt.Errorf("proxy: tool %s: auth resolver changed the request origin", e.tool.Name)
	}
	return nil
}

// buildRequest assembles the upstream request: URL (path and query),
// body, headers and cookies, credentials. Argument problems come back as
// one *callError listing them all.
func (p *Proxy) buildRequest(ctx context.Context, e *Endpoint, args map[string]any) (*http.Request, error) {
	var bad argErrors
	u, err := p.requestURL(e, args, &bad)
	if err != nil {
		return nil, err
	}
	body, contentType, err := e.buildBody(args, &bad)
	if err != nil {
		return nil, err
	}
	h := e.requestHeader(args, &bad)
	if err := bad.err(); err != nil {
		return nil, err
	}
	if contentType != "" {
		h["Content-Type"] = []string{contentType}
	}
	if p.userAgent != nil {
		h["User-Agent"] = p.userAgent
	}
	if h.Get("Accept") == "" {
		h["Accept"] = acceptAny
	}
	req := newRequest(ctx, e.method, u, h, nil, 0)
	if body != nil {
		req.Body, req.ContentLength = bodyReader(body), int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return bodyReader(body), nil }
	}
	return req, p.authorize(ctx, req, e, "Authentication failed: ")
}

func bodyReader(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// requestURL is the base URL with the expanded path template and the
// query.
func (p *Proxy) requestURL(e *Endpoint, args map[string]any, bad *argErrors) (*url.URL, error) {
	scratch := p.bufs.Get().(*[]byte)
	defer p.bufs.Put(scratch)

	raw := e.appendPath(append((*scratch)[:0], p.basePath...), args, bad)
	if len(raw) == 0 || raw[0] != '/' {
		raw = append([]byte{'/'}, raw...)
	}
	// The path and the query become one string (one allocation), cut in
	// two.
	n := len(raw)
	buf := e.appendQuery(raw, args)
	pathQuery := string(buf)
	*scratch = buf[:0] // keep the grown buffer for the pool
	rawPath := neutralizeDots(pathQuery[:n], len(p.basePath))
	rawQuery := pathQuery[n:]

	u := *p.base
	u.RawQuery = rawQuery
	path, err := url.PathUnescape(rawPath)
	if err != nil {
		return nil, fmt.Errorf("proxy: tool %s: built an invalid path: %w", e.tool.Name, err)
	}
	u.Path = path
	u.RawPath = rawPath
	if !p.sameOrigin(&u) { // defence in depth: cannot happen
		return nil, fmt.Errorf("proxy: tool %s: built URL left the upstream origin", e.tool.Name)
	}
	return &u, nil
}

// appendPath appends the expanded path template (escaped).
func (e *Endpoint) appendPath(dst []byte, args map[string]any, bad *argErrors) []byte {
	for _, part := range e.pathParts {
		if part.param == nil {
			dst = append(dst, part.literal...)
			continue
		}
		v, ok := args[part.param.Name]
		if !ok || v == nil {
			bad.add("/%s: missing path parameter", part.param.Name)
			continue
		}
		start := len(dst)
		dst = appendPathValue(dst, part.param, v)
		if len(dst) == start {
			bad.add("/%s: a path parameter must not be empty", part.param.Name)
		}
	}
	return dst
}

// appendQuery appends the query (without its "?"): the template's literal
// first, then the query parameters.
func (e *Endpoint) appendQuery(dst []byte, args map[string]any) []byte {
	qw := pairWriter{buf: dst, from: len(dst)}
	for _, part := range e.queryTmpl {
		if part.param == nil {
			qw.raw(part.literal)
			continue
		}
		if v, ok := args[part.param.Name]; ok && v != nil {
			qw.keep = keepUnreserved
			qw.value(scalar(v))
		}
	}
	for _, q := range e.query {
		v, ok := args[q.Name]
		if !ok || v == nil {
			continue
		}
		if a, isArr := v.([]any); isArr && len(a) == 0 && q.Explode {
			continue
		}
		qw.add(q, v)
	}
	return qw.buf
}

// requestHeader is the header and cookie parameters.
func (e *Endpoint) requestHeader(args map[string]any, bad *argErrors) http.Header {
	h := make(http.Header, 4+len(e.headers))
	for _, hp := range e.headers {
		v, ok := args[hp.Name]
		if !ok || v == nil {
			continue
		}
		s, err := headerValue(hp, v)
		if err != nil {
			bad.add("/%s: %v", hp.Name, err)
			continue
		}
		h[textproto.CanonicalMIMEHeaderKey(hp.Param)] = []string{s}
	}
	var cookie []byte
	for _, cp := range e.cookies {
		v, ok := args[cp.Name]
		if !ok || v == nil {
			continue
		}
		cookie = appendCookie(cookie, cp, v)
	}
	if len(cookie) > 0 {
		h["Cookie"] = []string{string(cookie)}
	}
	return h
}

var acceptAny = []string{"application/json, */*;q=0.8"}

// neutralizeDots rewrites any "." or ".." segment after the base path as
// %2E / %2E%2E so that no argument can walk up the path.
func neutralizeDots(raw string, from int) string {
	if !strings.Contains(raw[from:], "/.") {
		return raw
	}
	segs := strings.Split(raw[from:], "/")
	changed := false
	for i, s := range segs {
		switch s {
		case ".":
			segs[i], changed = "%2E", true
		case "..":
			segs[i], changed = "%2E%2E", true
		}
	}
	if !changed {
		return raw
	}
	return raw[:from] + strings.Join(segs, "/")
}
