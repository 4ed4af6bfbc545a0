package proxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
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
	// gateway (see [NewTransport]); it must not follow redirects itself.
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

// NewTransport returns the default upstream transport: keep-alive pools
// sized for a gateway (MaxIdleConnsPerHost 256), no proxy from the
// environment, bounded dial and TLS handshake times, HTTP/2 when the
// upstream offers it.
func NewTransport() *http.Transport {
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

// Proxy dispatches tool calls to one upstream. It is safe for concurrent
// use; build it once.
type Proxy struct {
	base         *url.URL
	origin       string // scheme://host[:port], lower-case, default port dropped
	basePath     string // escaped base path without trailing "/"
	client       *http.Client
	timeout      time.Duration
	maxBytes     int64
	maxRedirects int
	checkOutput  bool
	auth         AuthResolver
	userAgent    []string
	log          *slog.Logger
	bufs         sync.Pool // *[]byte scratch for building URLs
	respBufs     sync.Pool // *bytes.Buffer for reading response bodies
	values       valueDecoders
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
		origin:       originOf(&b),
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
	rt := cfg.Transport
	if rt == nil {
		rt = NewTransport()
	}
	p.client = &http.Client{Transport: rt, CheckRedirect: p.checkRedirect}
	p.bufs.New = func() any { b := make([]byte, 0, 512); return &b }
	p.respBufs.New = func() any { return new(bytes.Buffer) }
	return p, nil
}

// originOf is scheme://host[:port] with the default port dropped.
func originOf(u *url.URL) string {
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
	return originOf(u) == p.origin
}

// checkRedirect follows same-origin redirects only. A redirect to another
// origin is not followed at all (the 3xx is returned to Dispatch, which
// reports it), so the other origin never receives the request and
// therefore never sees a credential.
func (p *Proxy) checkRedirect(req *http.Request, via []*http.Request) error {
	if !p.sameOrigin(req.URL) {
		return http.ErrUseLastResponse
	}
	if p.maxRedirects < 0 {
		return http.ErrUseLastResponse
	}
	if len(via) > p.maxRedirects {
		return fmt.Errorf("stopped after %d redirects", p.maxRedirects)
	}
	// Re-apply credentials: net/http copied the headers, but a query
	// credential is not part of the new Location.
	if route, ok := req.Context().Value(routeKey{}).(*openapi.Route); ok {
		if err := p.auth.Apply(req.Context(), req, route); err != nil {
			return fmt.Errorf("authentication failed on redirect: %w", err)
		}
		if !p.sameOrigin(req.URL) {
			return errors.New("the auth resolver moved the redirect to another origin")
		}
	}
	return nil
}

// routeKey carries the route to checkRedirect in the request context.
type routeKey struct{}

// Accepted reports an upstream 202 Accepted that named a status resource
// to poll (Location or Operation-Location), for a later Tasks integration.
type Accepted struct {
	// Location is the absolute URL to poll (resolved against the request
	// URL; it may name another origin, which this package never calls).
	Location string
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
	r, err := p.Do(ctx, e, args)
	if err != nil {
		return nil, err
	}
	return r.Result, nil
}

// Do is [Proxy.Dispatch] returning the upstream status and the 202 report.
func (p *Proxy) Do(ctx context.Context, e *Endpoint, args json.RawMessage) (*DispatchResult, error) {
	if e == nil {
		return nil, errors.New("proxy: nil endpoint")
	}
	if e.proxy != p {
		return nil, errors.New("proxy: endpoint was compiled by another Proxy")
	}
	start := time.Now()
	values, res := e.decodeArgs(args)
	if res != nil {
		return &DispatchResult{Result: res}, nil
	}
	parent := ctx
	if p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	req, res, err := p.buildRequest(ctx, e, values)
	if err != nil {
		return nil, err
	}
	if res != nil {
		return &DispatchResult{Result: res}, nil
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

// decodeArgs parses and validates the arguments; a non-nil result is the
// tool error to return.
func (e *Endpoint) decodeArgs(args json.RawMessage) (map[string]any, *mcp.CallToolResult) {
	var v any
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		v = map[string]any{}
	} else {
		var err error
		v, err = e.proxy.values.decode(trimmed)
		if err != nil {
			return nil, mcp.ToolError("Invalid arguments: not valid JSON: " + err.Error())
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, mcp.ToolError("Invalid arguments: the arguments must be a JSON object")
	}
	// A schema that does not compile was logged once by compiledSchema;
	// the call is then dispatched unvalidated rather than making the tool
	// unusable (the upstream still validates).
	// The fast path only ever vouches for valid arguments; whatever it
	// cannot vouch for is decided, and explained, by jsonschema.
	if sch, err := e.compiledSchema(); err == nil && sch != nil && (e.fast == nil || !e.fast.accepts(v)) {
		if err := validate(sch, v); err != nil {
			return nil, mcp.ToolError("Invalid arguments: " + validationMessage(err))
		}
	}
	return m, nil
}

// validate runs jsonschema, turning a panic into an error: jsonschema v6
// dereferences a nil big.Rat when a number it cannot parse (such as
// 1e10000000) meets a numeric keyword, and client input must never crash
// a worker.
func validate(sch *jsonschema.Schema, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("a value could not be checked (a number may be out of range): %v", r)
		}
	}()
	return sch.Validate(v)
}

// validationMessage lists every leaf problem as "/location: message".
func validationMessage(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var msgs []string
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(escapePointer(e.InstanceLocation), "/")
			add := func(msg string) {
				if !seen[msg] {
					seen[msg] = true
					msgs = append(msgs, msg)
				}
			}
			if req, ok := e.ErrorKind.(*kind.Required); ok {
				// one line per missing property, at the property's location
				for _, name := range req.Missing {
					add(strings.TrimSuffix(loc, "/") + "/" + escapePointer([]string{name})[0] + ": missing required property")
				}
				return
			}
			add(loc + ": " + e.BasicOutput().Error.String())
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(msgs) == 0 {
		return err.Error()
	}
	return strings.Join(msgs, "; ")
}

func escapePointer(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		t = strings.ReplaceAll(t, "~", "~0")
		out[i] = strings.ReplaceAll(t, "/", "~1")
	}
	return out
}

// argError collects argument problems found while building the request
// (things the schema cannot express, such as control bytes in a header).
type argErrors []string

func (a *argErrors) add(format string, args ...any) { *a = append(*a, fmt.Sprintf(format, args...)) }

func (a argErrors) result() *mcp.CallToolResult {
	return mcp.ToolError("Invalid arguments: " + strings.Join(a, "; "))
}

// buildRequest assembles the upstream request.
func (p *Proxy) buildRequest(ctx context.Context, e *Endpoint, args map[string]any) (*http.Request, *mcp.CallToolResult, error) {
	var bad argErrors
	scratch := p.bufs.Get().(*[]byte)
	defer p.bufs.Put(scratch)

	// Path: base path + expanded template.
	raw := append((*scratch)[:0], p.basePath...)
	for _, part := range e.pathParts {
		if part.param == nil {
			raw = append(raw, part.literal...)
			continue
		}
		v, ok := args[part.param.name]
		if !ok || v == nil {
			bad.add("/%s: missing path parameter", part.param.name)
			continue
		}
		start := len(raw)
		raw = appendPathValue(raw, part.param, v)
		if len(raw) == start {
			bad.add("/%s: a path parameter must not be empty", part.param.name)
		}
	}
	if len(raw) == 0 || raw[0] != '/' {
		raw = append([]byte{'/'}, raw...)
	}
	rawPath := neutralizeDots(string(raw), len(p.basePath))

	// Query: template literal first, then parameters.
	qw := pairWriter{buf: raw[:0]}
	if len(e.queryTmpl) > 0 {
		for _, part := range e.queryTmpl {
			if part.param == nil {
				qw.raw(part.literal)
				continue
			}
			if v, ok := args[part.param.name]; ok && v != nil {
				qw.keep = keepUnreserved
				qw.value(scalar(v))
			}
		}
	}
	for _, q := range e.query {
		v, ok := args[q.name]
		if !ok || v == nil {
			continue
		}
		if a, isArr := v.([]any); isArr && len(a) == 0 && q.explode {
			continue
		}
		qw.add(q, v)
	}
	rawQuery := string(qw.buf)
	*scratch = qw.buf[:0] // keep the grown buffer for the pool

	u := *p.base
	u.RawQuery = rawQuery
	path, err := url.PathUnescape(rawPath)
	if err != nil {
		return nil, nil, fmt.Errorf("proxy: tool %s: built an invalid path: %w", e.tool.Name, err)
	}
	u.Path = path
	u.RawPath = rawPath
	if !p.sameOrigin(&u) { // defence in depth: cannot happen
		return nil, nil, fmt.Errorf("proxy: tool %s: built URL left the upstream origin", e.tool.Name)
	}

	// Body.
	body, contentType, err := e.buildBody(args, &bad)
	if err != nil {
		return nil, nil, err
	}

	// Headers and cookies.
	h := make(http.Header, 4+len(e.headers))
	for _, hp := range e.headers {
		v, ok := args[hp.name]
		if !ok || v == nil {
			continue
		}
		s, err := headerValue(hp, v)
		if err != nil {
			bad.add("/%s: %v", hp.name, err)
			continue
		}
		h[textproto.CanonicalMIMEHeaderKey(hp.wire)] = []string{s}
	}
	var cookie []byte
	for _, cp := range e.cookies {
		v, ok := args[cp.name]
		if !ok || v == nil {
			continue
		}
		cookie = appendCookie(cookie, cp, v)
	}
	if len(bad) > 0 {
		return nil, bad.result(), nil
	}
	if len(cookie) > 0 {
		h["Cookie"] = []string{string(cookie)}
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

	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.WithValue(ctx, routeKey{}, &e.tool.Route), e.method, "/", rd)
	if err != nil {
		return nil, nil, fmt.Errorf("proxy: tool %s: %w", e.tool.Name, err)
	}
	req.URL = &u
	req.Host = u.Host
	req.Header = h
	if err := p.auth.Apply(ctx, req, &e.tool.Route); err != nil {
		return nil, mcp.ToolError("Authentication failed: " + err.Error()), nil
	}
	if !p.sameOrigin(req.URL) { // the resolver must not move the request
		return nil, nil, fmt.Errorf("proxy: tool %s: auth resolver changed the request origin", e.tool.Name)
	}
	return req, nil, nil
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

// buildBody serializes the request body; it returns nil for no body.
func (e *Endpoint) buildBody(args map[string]any, bad *argErrors) ([]byte, string, error) {
	if e.body == nil {
		return nil, "", nil
	}
	ct := e.body.ContentType
	var whole any
	haveWhole := false
	if e.whole != nil {
		whole, haveWhole = args[e.whole.name]
		if haveWhole && whole == nil && e.bodyKind != bodyJSON {
			haveWhole = false
		}
	}
	props := map[string]any{}
	for _, bp := range e.bodyProps {
		if v, ok := args[bp.name]; ok {
			props[bp.wire] = v
		}
	}
	if !haveWhole && len(props) == 0 && !e.body.Required {
		return nil, "", nil
	}
	switch e.bodyKind {
	case bodyJSON:
		v := any(props)
		if e.whole != nil {
			v = whole
		}
		b, err := compactJSON(v)
		if err != nil {
			bad.add("/%s: cannot encode the body as JSON: %v", e.tool.Name, err)
			return nil, "", nil
		}
		if strings.Contains(ct, "*") {
			ct = "application/json"
		}
		return b, ct, nil
	case bodyBinary:
		s, ok := whole.(string)
		if !ok {
			if haveWhole {
				bad.add("/%s: must be a base64 string", e.whole.name)
			} else {
				bad.add("/%s: missing body", e.whole.name)
			}
			return nil, "", nil
		}
		b, err := decodeBase64(s)
		if err != nil {
			bad.add("/%s: not valid base64: %v", e.whole.name, err)
			return nil, "", nil
		}
		if strings.Contains(ct, "*") {
			ct = "application/octet-stream"
		}
		return b, ct, nil
	case bodyText:
		if s, ok := whole.(string); ok {
			return []byte(s), ct, nil
		}
		return []byte(scalar(whole)), ct, nil
	case bodyForm:
		w := pairWriter{form: true, keep: keepUnreserved}
		if e.whole != nil {
			if m, ok := whole.(map[string]any); ok {
				for _, k := range sortedKeys(m) {
					w.add(&param{wire: k, style: "form", explode: true}, m[k])
				}
			}
		} else {
			for _, bp := range e.bodyProps {
				v, ok := args[bp.name]
				if !ok || v == nil {
					continue
				}
				q := *bp
				if q.style == "" {
					q.style, q.explode = "form", true
				}
				w.add(&q, v)
			}
		}
		return w.buf, "application/x-www-form-urlencoded", nil
	case bodyMultipart:
		return e.multipartBody(args, whole, bad)
	}
	return nil, "", nil
}

func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	_, err := base64.StdEncoding.DecodeString(s)
	return nil, err
}

// multipartBody writes multipart/form-data: file parts from
// {content (base64), filename, contentType}, strings and numbers as text
// parts, arrays of scalars as repeated parts, other values as JSON parts.
func (e *Endpoint) multipartBody(args map[string]any, whole any, bad *argErrors) ([]byte, string, error) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	writeField := func(name string, v any, ct string) {
		hdr := textproto.MIMEHeader{}
		hdr.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"`, quoteEscape(name)))
		var data []byte
		switch x := v.(type) {
		case map[string]any, []any:
			data, _ = compactJSON(x)
			if ct == "" {
				ct = "application/json"
			}
		default:
			data = []byte(scalar(x))
		}
		if ct != "" {
			hdr.Set("Content-Type", ct)
		}
		w, err := mw.CreatePart(hdr)
		if err == nil {
			_, _ = w.Write(data)
		}
	}
	if e.whole != nil {
		if m, ok := whole.(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				writeField(k, m[k], "")
			}
		}
	}
	for _, bp := range e.bodyProps {
		v, ok := args[bp.name]
		if !ok || v == nil {
			continue
		}
		if bp.file {
			files, many := v.([]any)
			if !many {
				files = []any{v}
			}
			for i, f := range files {
				at := "/" + bp.name
				if many {
					at += "/" + strconv.Itoa(i)
				}
				if err := writeFilePart(mw, bp, f, at, bad); err != nil {
					return nil, "", err
				}
			}
			continue
		}
		ct := firstMediaType(bp.contentType)
		if arr, ok := v.([]any); ok && ct == "" && allScalars(arr) {
			for _, el := range arr {
				writeField(bp.wire, el, "")
			}
			continue
		}
		writeField(bp.wire, v, ct)
	}
	if err := mw.Close(); err != nil {
		return nil, "", fmt.Errorf("proxy: multipart: %w", err)
	}
	return b.Bytes(), mw.FormDataContentType(), nil
}

// writeFilePart writes one file part from {content (base64), filename,
// contentType}; at is the argument's JSON pointer for errors.
func writeFilePart(mw *multipart.Writer, bp *param, v any, at string, bad *argErrors) error {
	f, ok := v.(map[string]any)
	if !ok {
		bad.add("%s: must be an object {content, filename, contentType}", at)
		return nil
	}
	content, _ := f["content"].(string)
	data, err := decodeBase64(content)
	if err != nil {
		bad.add("%s/content: not valid base64: %v", at, err)
		return nil
	}
	filename, _ := f["filename"].(string)
	if filename == "" {
		filename = bp.wire
	}
	ct, _ := f["contentType"].(string)
	if ct == "" {
		ct = firstMediaType(bp.contentType)
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	if !validHeaderValue(ct) || !validHeaderValue(filename) {
		bad.add("%s: filename and contentType must not contain control characters", at)
		return nil
	}
	hdr := textproto.MIMEHeader{}
	hdr.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, quoteEscape(bp.wire), quoteEscape(filename)))
	hdr.Set("Content-Type", ct)
	w, err := mw.CreatePart(hdr)
	if err != nil {
		return fmt.Errorf("proxy: multipart: %w", err)
	}
	_, _ = w.Write(data)
	return nil
}

func allScalars(a []any) bool {
	for _, v := range a {
		switch v.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

// quoteEscape escapes a multipart parameter value (as mime/multipart does)
// and drops control bytes.
func quoteEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\r' || c == '\n':
			b.WriteString("%0")
			b.WriteByte(upperhex[c&15])
		case c < 0x20 || c == 0x7f:
			// dropped
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Poll fetches the status resource of an earlier 202 Accepted (a GET of
// a.Location) with the credentials the endpoint's route gets, and renders
// the answer like any response of that endpoint (redaction included). The
// operation is still under way (Accepted is set again) when the answer is
// a further 202, or a 200 JSON object whose "status" or "state" is one of
// the usual in-progress words (running, pending, in_progress, queued, …);
// otherwise the answer is the operation's result. A Location on another origin is never requested (a tool error
// says so), so polling cannot carry a credential off the upstream. It is
// the hook a Tasks integration drives.
func (p *Proxy) Poll(ctx context.Context, e *Endpoint, a *Accepted) (*DispatchResult, error) {
	if e == nil || a == nil {
		return nil, errors.New("proxy: Poll needs an endpoint and an Accepted")
	}
	if e.proxy != p {
		return nil, errors.New("proxy: endpoint was compiled by another Proxy")
	}
	u, err := url.Parse(a.Location)
	if err != nil || !u.IsAbs() {
		return &DispatchResult{Result: mcp.ToolError("The status location of the accepted operation is not an absolute URL.")}, nil
	}
	if !p.sameOrigin(u) {
		return &DispatchResult{Result: mcp.ToolError(fmt.Sprintf("The status location of the accepted operation is on another origin (%s); it is not polled so that no credential leaves the configured upstream.", originOf(u)))}, nil
	}
	u.Fragment, u.RawFragment, u.User = "", "", nil
	parent := ctx
	if p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(context.WithValue(ctx, routeKey{}, &e.tool.Route), http.MethodGet, u.String(), nil)
	if err != nil {
		return &DispatchResult{Result: mcp.ToolError("The status location of the accepted operation is not a valid URL.")}, nil
	}
	req.Header["Accept"] = acceptAny
	if p.userAgent != nil {
		req.Header["User-Agent"] = p.userAgent
	}
	if err := p.auth.Apply(ctx, req, &e.tool.Route); err != nil {
		return &DispatchResult{Result: mcp.ToolError("Authentication failed: " + err.Error())}, nil
	}
	if !p.sameOrigin(req.URL) {
		return nil, errors.New("proxy: auth resolver changed the request origin")
	}
	r := p.send(parent, ctx, e, req)
	if r.Accepted == nil && stillRunning(r) {
		r.Accepted = &Accepted{Location: a.Location, RetryAfter: retryAfter(r.Header.Get("Retry-After"))}
	}
	return r, nil
}

// stillRunning reports whether a polled status resource says the
// operation is not finished.
func stillRunning(r *DispatchResult) bool {
	if r.Result == nil || r.Result.IsError || r.Status != http.StatusOK {
		return false
	}
	raw, ok := r.Result.StructuredContent.(json.RawMessage)
	if !ok {
		return false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return false
	}
	for _, k := range []string{"status", "state"} {
		var v string
		if json.Unmarshal(obj[k], &v) != nil {
			continue
		}
		switch strings.ToLower(strings.ReplaceAll(v, "_", "")) {
		case "running", "pending", "inprogress", "queued", "notstarted", "accepted", "working", "processing", "started":
			return true
		}
	}
	return false
}
