package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	jsonv1 "github.com/go-json-experiment/json/v1"
)

// This file is the handler API: who is calling (Principal), what a handler
// receives about its request (Request and the per-method requests) and
// the means to report progress, log, read earlier answers and pause for
// input (RequireInput). The wire decoding behind it is in decode.go.

// Principal is the authenticated caller of a request, as resolved by the
// transport's authentication layer. The zero Principal is an anonymous
// caller. Sealed request state and tasks are bound to Subject (and Tenant).
type Principal struct {
	Subject string
	Tenant  string
	Scopes  []string
	// Claims are the validated token's claims, for rules that read them
	// (policy's caller.claims); nil when the caller is not authenticated
	// by a token. They never hold the token itself. Treat them as read-only:
	// the map is shared by every copy of the Principal.
	Claims map[string]any
	// Credential is what the caller presented (for example a bearer token),
	// kept for handlers that forward it. It prints and encodes redacted;
	// [Secret.Reveal] reads it.
	Credential Secret
}

type principalKey struct{}

// WithPrincipal returns a context carrying p; an authentication middleware
// in front of the transport sets it.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return &principalCtx{Context: ctx, p: p}
}

// PrincipalFrom returns the principal in ctx, or the anonymous principal.
func PrincipalFrom(ctx context.Context) Principal {
	if p, ok := ctx.Value(principalKey{}).(*Principal); ok {
		return *p
	}
	return Principal{}
}

// principalCtx is a context carrying a Principal, as context.WithValue
// would with principalKey, in one allocation instead of two (WithValue
// boxes the Principal apart). Its Value hands out a pointer to its own
// copy, which only PrincipalFrom reads (the key is unexported).
type principalCtx struct {
	context.Context
	p Principal
}

func (c *principalCtx) Value(key any) any {
	if key == (principalKey{}) {
		return &c.p
	}
	return c.Context.Value(key)
}

// String names the context without its principal, as context.WithValue's
// contexts name a value by its type.
func (c *principalCtx) String() string {
	parent := "context"
	if s, ok := c.Context.(fmt.Stringer); ok {
		parent = s.String()
	}
	return parent + ".WithPrincipal(mcp.Principal)"
}

// TraceContext is W3C Trace Context and Baggage as a request's _meta
// carries them (traceparent, tracestate, baggage). The values are the
// client's, unvalidated: parse them with a propagator.
type TraceContext struct {
	TraceParent string
	TraceState  string
	Baggage     string
}

// Request is what every handler receives about the request it serves: the
// client's declared capabilities and identity, the caller, the answers to
// earlier input requests, and the means to report progress and log messages.
type Request struct {
	// ID is the JSON-RPC id, exactly as the client sent it.
	ID json.RawMessage
	// Method is the JSON-RPC method.
	Method string
	// ProtocolVersion is the version named in this request's _meta.
	ProtocolVersion string
	// Capabilities are the capabilities the client declared on this request.
	Capabilities ClientCapabilities
	// Principal is the authenticated caller (zero when anonymous).
	Principal Principal
	// InputResponses holds the client's answers to the previous round's input
	// requests, keyed as they were asked (multi round-trip requests).
	InputResponses map[string]json.RawMessage
	// Round is 0 on a first call and n after the handler paused n times
	// (read from the verified requestState).
	Round int
	// Trace is the W3C trace context in the request's _meta (the keys
	// OpenTelemetry reserves there), as the client sent it: zero when
	// absent. A tracer prefers it to the transport's headers.
	Trace TraceContext

	clientInfo    *Implementation // a legacy session's, decoded at initialize
	clientInfoRaw json.RawMessage // as the request's _meta carries it
	continuation  json.RawMessage
	progressToken json.RawMessage
	logLevel      LogLevel
	progressSeen  float64
	out           stream
}

// ClientInfo is the client's self-reported identity, when it sent a
// well-formed one (display only: anything may be written there). It is
// decoded from the request on each call.
func (r *Request) ClientInfo() *Implementation {
	if r.clientInfo != nil || len(r.clientInfoRaw) == 0 || string(r.clientInfoRaw) == "null" {
		return r.clientInfo
	}
	var info Implementation
	if json.Unmarshal(r.clientInfoRaw, &info) != nil {
		return nil
	}
	return &info
}

// Progress sends notifications/progress for this request when the client
// asked for progress; otherwise it does nothing. progress must increase.
func (r *Request) Progress(progress, total float64, message string) error {
	if r.progressToken == nil || r.out == nil {
		return nil
	}
	type params struct {
		ProgressToken json.RawMessage `json:"progressToken"`
		Progress      float64         `json:"progress"`
		Total         float64         `json:"total,omitempty"`
		Message       string          `json:"message,omitempty"`
	}
	r.progressSeen = progress
	return r.notify("notifications/progress", params{r.progressToken, progress, total, message})
}

// Log sends notifications/message when the request's _meta asked for log
// messages at level or below; otherwise it does nothing.
func (r *Request) Log(level LogLevel, logger string, data any) error {
	if r.logLevel == "" || r.out == nil || level.severity() < r.logLevel.severity() {
		return nil
	}
	type params struct {
		Level  LogLevel `json:"level"`
		Logger string   `json:"logger,omitempty"`
		Data   any      `json:"data"`
	}
	return r.notify("notifications/message", params{level, logger, data})
}

func (r *Request) notify(method string, params any) error {
	buf := getBuf()
	defer putBuf(buf)
	b, err := appendNotification(*buf, method, params)
	if err != nil {
		return err
	}
	*buf = b
	return r.out.send(b)
}

// Continuation decodes the continuation the handler paused with in the
// previous round into v. The continuation was sealed by the server, so unlike
// the arguments it cannot have been changed by the client. It round-trips as
// JSON: decode it into the type it was paused with.
func (r *Request) Continuation(v any) error {
	if r.continuation == nil {
		return errors.New("mcp: no continuation: this is the first round")
	}
	if err := json.Unmarshal(r.continuation, v); err != nil {
		return fmt.Errorf("mcp: decode continuation: %w", err)
	}
	return nil
}

// ContinuationAs decodes the request's continuation into a T.
func ContinuationAs[T any](r *Request) (T, error) {
	var v T
	err := r.Continuation(&v)
	return v, err
}

// Elicitation returns the client's answer to the elicitation asked under key,
// and whether a well-formed answer is there.
func (r *Request) Elicitation(key string) (ElicitResult, bool) {
	return inputResponse(r, key, func(res *ElicitResult) bool { return res.Action != "" })
}

// Sampling returns the client's answer to the sampling request under key.
func (r *Request) Sampling(key string) (CreateMessageResult, bool) {
	return inputResponse(r, key, func(res *CreateMessageResult) bool { return res.Content != nil })
}

// Roots returns the client's answer to the roots/list request under key.
func (r *Request) Roots(key string) (ListRootsResult, bool) {
	return inputResponse(r, key, func(res *ListRootsResult) bool { return res.Roots != nil })
}

// inputResponse decodes the answer under key; well says whether a decoded
// answer is well formed. A missing or malformed answer is the zero T.
func inputResponse[T any](r *Request, key string, well func(*T) bool) (T, bool) {
	var res, zero T
	raw, ok := r.InputResponses[key]
	if !ok || json.Unmarshal(raw, &res) != nil || !well(&res) {
		return zero, false
	}
	return res, true
}

// InputRequiredError is returned by a handler to end this round with an
// InputRequiredResult: the client gathers the answers to Requests and
// retries; the handler then runs again with Request.InputResponses filled and
// its Continuation back. Build it with RequireInput.
type InputRequiredError struct {
	Requests     map[string]InputRequest
	Continuation any
}

func (e *InputRequiredError) Error() string {
	return "mcp: input required (" + strconv.Itoa(len(e.Requests)) + " requests)"
}

// RequireInput pauses the handler: it returns an error that the server turns
// into an InputRequiredResult asking the client for requests, with the
// continuation sealed into requestState. Anything the handler must trust in
// the next round belongs in the continuation, not in the arguments (which the
// client controls).
func RequireInput(requests map[string]InputRequest, continuation any) error {
	return &InputRequiredError{Requests: requests, Continuation: continuation}
}

// CallToolRequest is a tools/call request.
type CallToolRequest struct {
	*Request
	Name      string
	Arguments json.RawMessage
}

// Bind decodes the arguments into v, as encoding/json.Unmarshal does.
func (r *CallToolRequest) Bind(v any) error { return bindArguments(r.Arguments, v) }

// bindArguments decodes tool arguments (absent: {}) into v with
// encoding/json's rules, through go-json-experiment's implementation of
// them, which allocates a sixth as often.
func bindArguments(args json.RawMessage, v any) error {
	if args == nil {
		args = json.RawMessage("{}")
	}
	return jsonv1.Unmarshal(args, v)
}

// GetPromptRequest is a prompts/get request.
type GetPromptRequest struct {
	*Request
	Name      string
	Arguments map[string]string
}

// ReadResourceRequest is a resources/read request. Vars holds the variables
// of the matched resource template, if the URI matched one.
type ReadResourceRequest struct {
	*Request
	URI  string
	Vars map[string]string
}

// ErrResourceNotFound answers -32602 naming the unknown URI.
func ErrResourceNotFound(uri string) *Error {
	return NewError(CodeInvalidParams, "Resource not found", map[string]string{"uri": uri})
}

// Handler types.
type (
	ToolHandler       func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error)
	PromptHandler     func(ctx context.Context, req *GetPromptRequest) (*GetPromptResult, error)
	ResourceHandler   func(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error)
	CompletionHandler func(ctx context.Context, req *CompleteRequest) (*Completion, error)
)

// stream is a request's way back to the client for notifications that
// precede its response.
type stream interface {
	// send writes one complete JSON-RPC notification.
	send(msg []byte) error
	// keepalive writes a transport-level keep-alive, if the transport has one.
	keepalive() error
}
