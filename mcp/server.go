package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/mcpgate/mcpgate/internal/jsonx"
	"github.com/mcpgate/mcpgate/mrtr"
)

// ServerOptions configure a Server. The zero value is usable.
type ServerOptions struct {
	// Instructions are returned by server/discover.
	Instructions string
	// PageSize is the number of items per page of the list methods
	// (default 1000).
	PageSize int
	// ListTTL is the ttlMs of list and discover results (default 5 minutes).
	ListTTL time.Duration
	// ResourceTTL is the default ttlMs of resources/read results (default 0).
	ResourceTTL time.Duration
	// CacheScope of list and discover results: CachePublic (default) or
	// CachePrivate when lists depend on the caller.
	CacheScope string
	// Logging advertises the (deprecated) logging capability.
	Logging bool
	// StateCodec seals and opens requestState for multi round-trip requests
	// (see SealedState). Without one, a codec with a random key is made on
	// the first pause: paused requests then cannot resume after a restart or
	// on another replica.
	StateCodec StateCodec
	// KeepAlive is the interval of keep-alives on subscriptions/listen
	// streams (default 15 s).
	KeepAlive time.Duration
	// Logger receives server diagnostics (default slog.Default()).
	Logger *slog.Logger
	// Observer, when set, is told about every request served, on every
	// transport and in both eras (see Observer).
	Observer Observer
	// ToolFilter, when set, decides which tools a caller sees: tools/list
	// then lists only those (with cacheScope "private") and a call of any
	// other is answered exactly like a call of an unknown tool. It must
	// depend only on the caller (for example its scopes), never on earlier
	// requests.
	ToolFilter func(ctx context.Context, p Principal, tool *Tool) bool
	// ListFilter, when set, decides which tools tools/list shows a caller,
	// beyond ToolFilter: a tool it leaves out is still callable (a policy
	// that hides what it would refuse answers the call itself). Lists it
	// filters are "private". It must depend only on the caller.
	ListFilter func(ctx context.Context, p Principal, tool *Tool) bool
	// ToolsChanged, when set, is called after every change of this
	// server's tool set (SetTools, AddTool, RemoveTools), once the
	// listening clients of this process were told: the seam where a
	// cluster tells its other replicas (ToolsVersion identifies the new
	// set). It runs on the goroutine that made the change; it must not
	// block for long.
	ToolsChanged func()
}

// StateCodec seals the state of a paused request into the opaque
// requestState token and verifies it when the client retries. It speaks
// package mrtr's vocabulary: the binding is an mrtr.Binding (method, tool
// or prompt name or resource URI, caller, arguments) and rounds count
// pauses from 1, as Request.Round does. SealedState adapts an mrtr.Codec.
type StateCodec interface {
	// Seal returns a token for a request pausing in round (1 on its first
	// pause).
	Seal(ctx context.Context, b mrtr.Binding, round int, continuation json.RawMessage) (string, error)
	// Open verifies token against the retrying request and returns the round
	// it was sealed in and the continuation. Any failure is an error that is
	// safe to show the client.
	Open(ctx context.Context, token string, b mrtr.Binding) (round int, continuation json.RawMessage, err error)
}

// Server is an MCP server. It is safe for concurrent use; registering
// primitives while serving is allowed and notifies listening clients.
type Server struct {
	info     Implementation
	opts     ServerOptions
	logger   *slog.Logger
	infoMeta []byte // {"io.modelcontextprotocol/serverInfo":{...}}

	mu          sync.Mutex
	tools       atomic.Pointer[registry[toolEntry]] // swapped whole by SetTools
	prompts     registry[promptEntry]
	resources   registry[resourceEntry]
	templates   registry[templateEntry]
	completion  CompletionHandler
	extensions  map[string]json.RawMessage
	extMethods  map[string]methodSpec
	capsTools   bool
	capsPrompts bool
	capsRes     bool
	tasks       *taskExt
	closers     []func()

	listeners *broker
	discover  cached
	methods   map[string]methodSpec
}

// NewServer returns a server identifying itself as info.
func NewServer(info Implementation, opts *ServerOptions) *Server {
	s := &Server{info: info}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.PageSize <= 0 {
		s.opts.PageSize = 1000
	}
	if s.opts.ListTTL == 0 {
		s.opts.ListTTL = 5 * time.Minute
	}
	if s.opts.CacheScope == "" {
		s.opts.CacheScope = CachePublic
	}
	if s.opts.KeepAlive <= 0 {
		s.opts.KeepAlive = 15 * time.Second
	}
	s.logger = s.opts.Logger
	if s.logger == nil {
		s.logger = slog.Default()
	}
	meta, err := json.Marshal(map[string]Implementation{MetaServerInfo: info})
	if err != nil {
		panic(fmt.Sprintf("mcp: encode server info: %v", err)) // Implementation always encodes
	}
	s.infoMeta = meta
	if s.opts.StateCodec == nil {
		s.opts.StateCodec = &ephemeralState{logger: s.logger}
	}
	s.listeners = newBroker()
	s.methods = s.methodTable()
	s.tools.Store(new(registry[toolEntry]))
	return s
}

// Info is the server's identity.
func (s *Server) Info() Implementation { return s.info }

// Logger is the server's diagnostics logger.
func (s *Server) Logger() *slog.Logger { return s.logger }

// Close ends every subscriptions/listen stream gracefully (each gets its
// final result). Call it before shutting the transport down.
func (s *Server) Close() {
	s.listeners.close()
	s.mu.Lock()
	closers := s.closers
	s.closers = nil
	s.mu.Unlock()
	for _, f := range closers {
		f()
	}
}

func (s *Server) onClose(f func()) {
	s.mu.Lock()
	s.closers = append(s.closers, f)
	s.mu.Unlock()
}

// Capabilities are the server capabilities advertised in server/discover.
func (s *Server) Capabilities() ServerCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c ServerCapabilities
	if s.capsTools {
		c.Tools = &ListCapability{ListChanged: true}
	}
	if s.capsPrompts {
		c.Prompts = &ListCapability{ListChanged: true}
	}
	if s.capsRes {
		c.Resources = &ResourcesCapability{Subscribe: true, ListChanged: true}
	}
	if s.completion != nil {
		c.Completions = &struct{}{}
	}
	if s.opts.Logging {
		c.Logging = &struct{}{}
	}
	if len(s.extensions) > 0 {
		c.Extensions = make(map[string]json.RawMessage, len(s.extensions))
		for k, v := range s.extensions {
			c.Extensions[k] = v
		}
	}
	return c
}

// call is an admitted request on its way to its handler.
type call struct {
	msg    *message
	params *requestParams
	req    *Request
	spec   methodSpec
	legacy bool         // a request of a legacy (initialize-based) session
	obs    *observation // nil when the server has no observer
	// The Request and CallToolRequest req and the tool handler point to,
	// allocated with the call.
	request Request
	toolReq CallToolRequest
	// paused is set instead of a result when a legacy request's handler
	// paused for input (see pause).
	paused *pausedRound
	// resp, when set, is a pooled buffer the transport lends the call for
	// its answer: toolOutcome encodes the response's head and the result
	// there (once; it then clears resp), and the transport writes the
	// response from it without copying the result (responseIn). The
	// transport returns the buffer to the pool once the response is
	// written and observed, so a result encoded there must not be kept by
	// anything else.
	resp *[]byte
}

// pausedRound is what a paused legacy request asks and the sealed state it
// resumes with.
type pausedRound struct {
	requests map[string]InputRequest
	state    string
}

// era is the shape the call's result takes.
func (c *call) era() era {
	if c.legacy {
		return legacyEra
	}
	return modern
}

// admit runs every protocol check on a decoded request, in the order the
// spec digest fixes for Streamable HTTP (header checks are skipped when hdr
// is nil): version header present, _meta well formed, header version equals
// body version, version supported, method known, Mcp-Method, Mcp-Name,
// Mcp-Param-*.
func (s *Server) admit(ctx context.Context, msg *message, hdr http.Header) (*call, *Error) {
	if hdr != nil && hdr.Get(HeaderProtocolVersion) == "" {
		return nil, errHeaderMismatch("the %s header is required", HeaderProtocolVersion)
	}
	params, perr := msg.requestParams()
	if params == nil {
		return nil, perr
	}
	c := &call{msg: msg, params: params}
	c.req = &c.request
	req := c.req
	if jerr := s.readMeta(params, req); jerr != nil {
		return nil, jerr
	}
	req.ID, req.Method = msg.id, msg.method
	req.Principal = PrincipalFrom(ctx)
	if hdr != nil {
		if hv := hdr.Get(HeaderProtocolVersion); hv != req.ProtocolVersion {
			return nil, errHeaderMismatch("%s header %q does not match _meta protocolVersion %q", HeaderProtocolVersion, hv, req.ProtocolVersion)
		}
	}
	if req.ProtocolVersion != ProtocolVersion {
		return nil, NewError(CodeUnsupportedProtocolVersion, "Unsupported protocol version",
			map[string]any{"supported": []string{ProtocolVersion}, "requested": req.ProtocolVersion})
	}
	spec, ok := s.lookupMethod(msg.method)
	if !ok {
		return nil, errMethodNotFound(msg.method)
	}
	if perr != nil {
		return nil, perr // an ill-typed member other than _meta
	}
	c.spec = spec
	if hdr != nil {
		if err := s.checkHeaders(c, hdr); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// readMeta validates _meta and fills the handler-facing Request from it.
func (s *Server) readMeta(p *requestParams, req *Request) *Error {
	m := p.Meta
	if m == nil {
		return errInvalidMeta("Invalid params: _meta is required (with %s and %s)", MetaProtocolVersion, MetaClientCapabilities)
	}
	if len(m.ProtocolVersion) == 0 || m.ProtocolVersion[0] != '"' {
		return errInvalidMeta("Invalid params: _meta is missing %s (a string)", MetaProtocolVersion)
	}
	req.ProtocolVersion = versionOf(m.ProtocolVersion) // validated by decodeParams
	if len(m.ClientCapabilities) == 0 || m.ClientCapabilities[0] != '{' {
		return errInvalidMeta("Invalid params: _meta is missing %s (an object)", MetaClientCapabilities)
	}
	if !emptyObject(m.ClientCapabilities) {
		if err := jsonv1.Unmarshal(m.ClientCapabilities, &req.Capabilities); err != nil {
			return errInvalidMeta("Invalid params: malformed %s: %v", MetaClientCapabilities, err)
		}
	}
	req.clientInfoRaw = m.ClientInfo // display-only: decoded when asked for
	if len(m.LogLevel) > 0 && string(m.LogLevel) != "null" {
		var lvl LogLevel
		if json.Unmarshal(m.LogLevel, &lvl) != nil || lvl.severity() < 0 {
			return ErrInvalidParams("Invalid params: %s must be one of debug, info, notice, warning, error, critical, alert, emergency", MetaLogLevel)
		}
		req.logLevel = lvl
	}
	req.Trace = m.trace()
	if t := m.ProgressToken; len(t) > 0 && string(t) != "null" {
		if checkID(t) != nil {
			return ErrInvalidParams("Invalid params: progressToken must be a string or an integer")
		}
		req.progressToken = t
	}
	return nil
}

// versionOf is the version a _meta protocolVersion (a valid JSON string
// literal) names: in the common case, the supported version itself, without
// a copy.
func versionOf(quoted []byte) string {
	if string(quoted) == `"`+ProtocolVersion+`"` {
		return ProtocolVersion
	}
	return jsonx.Unquote(quoted)
}

// checkHeaders compares Mcp-Method, Mcp-Name and Mcp-Param-* with the body.
func (s *Server) checkHeaders(c *call, hdr http.Header) *Error {
	hm := hdr.Get(HeaderMethod)
	if hm == "" {
		return errHeaderMismatch("the %s header is required", HeaderMethod)
	}
	if hm != c.msg.method {
		return errHeaderMismatch("%s header %q does not match method %q", HeaderMethod, hm, c.msg.method)
	}
	if c.spec.nameParam != "" {
		body := c.nameValue()
		raw := hdr.Get(HeaderName)
		if raw == "" {
			return errHeaderMismatch("the %s header is required for %s", HeaderName, c.msg.method)
		}
		v, ok := decodeHeaderValue(raw)
		if !ok {
			return errHeaderMismatch("%s header is not valid base64", HeaderName)
		}
		if body == nil || v != *body {
			return errHeaderMismatch("%s header %q does not match params.%s", HeaderName, v, c.spec.nameParam)
		}
	}
	if c.msg.method == "tools/call" && c.params.Name != nil {
		if e := s.lookupTool(*c.params.Name); e != nil && len(e.headers) > 0 {
			return checkParamHeaders(e.headers, c.params.Arguments, hdr)
		}
	}
	return nil
}

func (c *call) nameValue() *string {
	switch c.spec.nameParam {
	case "name":
		return c.params.Name
	case "uri":
		return c.params.URI
	case "taskId":
		return c.params.TaskID
	}
	return nil
}

// handle runs an admitted call and returns the encoded result, or an error.
// Handler panics become -32603; the server keeps serving.
func (s *Server) handle(ctx context.Context, c *call, out stream) (result []byte, jerr *Error) {
	c.req.out = out
	defer func() {
		if p := recover(); p != nil {
			s.logger.Error("mcp: handler panic", "method", c.msg.method, "panic", p, "stack", string(debug.Stack()))
			result, jerr = nil, errInternal()
		}
	}()
	return c.spec.handle(ctx, c)
}

// toError converts a handler error into a JSON-RPC error. Errors that are
// not *Error are logged and answered with a fixed message: nothing derived
// from an internal failure reaches the client.
func (s *Server) toError(method string, err error) *Error {
	var je *Error
	if errors.As(err, &je) {
		return je
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return NewError(CodeInternalError, "Request cancelled", nil)
	}
	s.logger.Warn("mcp: handler failed", "method", method, "err", err)
	return errInternal()
}

// encodeResult marshals v and splices resultType and the server identity in.
func (s *Server) encodeResult(resultType string, v any, hasMeta bool) ([]byte, *Error) {
	body, err := json.Marshal(v)
	if err != nil {
		s.logger.Error("mcp: encode result", "err", err)
		return nil, errInternal()
	}
	meta := s.infoMeta
	if hasMeta {
		meta = nil
	}
	return spliceResult(make([]byte, 0, len(body)+len(s.infoMeta)+40), resultType, body, meta), nil
}

// encodeFor encodes a result for the call's era: for a legacy session the
// plain result (v must then hold no 2026-07-28 member), for modern ones
// with resultType and the server identity (see encodeResult).
func (s *Server) encodeFor(c *call, resultType string, v any, hasMeta bool) ([]byte, *Error) {
	if !c.legacy {
		return s.encodeResult(resultType, v, hasMeta)
	}
	b, err := json.Marshal(v)
	if err != nil {
		s.logger.Error("mcp: encode result", "err", err)
		return nil, errInternal()
	}
	return b, nil
}

// resultMeta is the _meta of a result: the handler's, with the server's
// identity added for modern requests and left out for legacy ones.
func (s *Server) resultMeta(c *call, meta map[string]any) map[string]any {
	if !c.legacy {
		return s.withServerInfo(meta)
	}
	if _, ok := meta[MetaServerInfo]; !ok {
		return meta
	}
	m := make(map[string]any, len(meta))
	for k, v := range meta {
		if k != MetaServerInfo {
			m[k] = v
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// withServerInfo returns a copy of meta with the server identity added.
func (s *Server) withServerInfo(meta map[string]any) map[string]any {
	if meta == nil {
		return nil
	}
	m := make(map[string]any, len(meta)+1)
	for k, v := range meta {
		m[k] = v
	}
	if _, ok := m[MetaServerInfo]; !ok {
		m[MetaServerInfo] = s.info
	}
	return m
}

// cached is a lazily built encoded result, reset when what it encodes changes.
type cached struct {
	mu  sync.Mutex
	val []byte
}

func (c *cached) get(build func() []byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.val == nil {
		c.val = build()
	}
	return c.val
}

func (c *cached) reset() {
	c.mu.Lock()
	c.val = nil
	c.mu.Unlock()
}

// ttlMs converts a duration to the wire's integer milliseconds (never < 0).
func ttlMs(d time.Duration) int64 {
	if d < 0 {
		return 0
	}
	return d.Milliseconds()
}

func trimLower(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
