package mcp

import (
	"context"
	"encoding/json"
	"time"
)

// Observer watches every request the server serves, on every transport and
// in both protocol eras: the hook for metrics by method and for a tracing
// span per MCP request. Set it in ServerOptions.Observer; without one the
// server does no observing work at all.
//
// Notifications and a legacy client's responses to server-to-client
// requests are not requests and are not observed; nor is a message whose
// method cannot be read (a parse error or a malformed envelope).
type Observer interface {
	// Begin is called once a request's method is known, before any
	// admission check. The context it returns is the one the request is
	// served with: its handler sees it (a tracer puts its span there).
	Begin(ctx context.Context, r *RequestInfo) context.Context
	// End is called exactly once per Begin, with the context Begin
	// returned, when the request is answered or, for one that ends without
	// an answer (a listen stream whose client left), when it ends.
	End(ctx context.Context, r *RequestInfo, o Outcome)
}

// RequestInfo describes an observed request. Observers must not change it.
type RequestInfo struct {
	// Method is the JSON-RPC method.
	Method string
	// Name is the tool or prompt name, the resource URI or the task id the
	// request is about; empty for other methods.
	Name string
	// ID is the JSON-RPC id, exactly as the client sent it.
	ID json.RawMessage
	// ProtocolVersion is the request's era: the version in its _meta
	// (empty when it has none) for a modern request, the session's
	// negotiated version for a legacy one.
	ProtocolVersion string
	// Legacy is set for requests of an initialize-based (2025-11-25 or
	// earlier) session, initialize included.
	Legacy bool
	// Transport is "http", "stdio" or "memory" (the in-process Client).
	Transport string
	// Trace is the W3C trace context of the request's _meta (see
	// Request.Trace); a tracer falls back to the transport's headers.
	Trace TraceContext
	// Start is when the request was read.
	Start time.Time
}

// Outcome is how an observed request ended.
type Outcome struct {
	// Duration is the time from RequestInfo.Start to the answer.
	Duration time.Duration
	// ErrorCode is the JSON-RPC error code of the answer; 0 for a result
	// (or no answer).
	ErrorCode int
	// ResultType is the result's resultType (complete, input_required,
	// task); empty for an error, no answer, or a legacy result.
	ResultType string
	// ToolError is set when tools/call answered a result with isError
	// true: the call failed, the request did not.
	ToolError bool
}

// observation is one observed request in flight; nil when the server has
// no observer, and every method is a no-op on nil.
type observation struct {
	o         Observer
	ctx       context.Context
	info      RequestInfo
	toolError bool
	ended     bool
}

// observe begins observing msg; it returns the context to serve it with.
// legacy is the request's session version ("" for a modern request, whose
// version is read from its _meta).
func (s *Server) observe(ctx context.Context, msg *message, transport, legacy string) (context.Context, *observation) {
	o := s.opts.Observer
	if o == nil {
		return ctx, nil
	}
	ob := &observation{o: o, info: RequestInfo{
		Method: msg.method, ID: msg.id, Transport: transport, Start: time.Now(),
		ProtocolVersion: legacy, Legacy: legacy != "",
	}}
	if p, _ := msg.requestParams(); p != nil {
		ob.info.Name = p.subject(msg.method)
		if p.Meta != nil {
			ob.info.Trace = p.Meta.trace()
			if v := p.Meta.ProtocolVersion; legacy == "" && len(v) > 0 && v[0] == '"' {
				ob.info.ProtocolVersion = versionOf(v)
			}
		}
	}
	ob.ctx = o.Begin(ctx, &ob.info)
	return ob.ctx, ob
}

// setVersion records the version a legacy initialize negotiated.
func (ob *observation) setVersion(v string) {
	if ob != nil {
		ob.info.ProtocolVersion = v
	}
}

// end reports the answer: a result or an error (both nil: no answer).
func (ob *observation) end(result []byte, jerr *Error) {
	if ob == nil || ob.ended {
		return
	}
	ob.ended = true
	out := Outcome{Duration: time.Since(ob.info.Start), ToolError: ob.toolError}
	if jerr != nil {
		out.ErrorCode, out.ToolError = jerr.Code, false
	} else {
		out.ResultType = resultTypeOf(result)
	}
	ob.o.End(ob.ctx, &ob.info, out)
}

// resultTypeOf reads the resultType every modern result starts with.
func resultTypeOf(result []byte) string {
	const prefix = `{"resultType":"`
	if len(result) <= len(prefix) || string(result[:len(prefix)]) != prefix {
		return ""
	}
	rest := result[len(prefix):]
	for _, rt := range [...]string{ResultComplete, ResultInputRequired, ResultTask} {
		if len(rest) > len(rt) && string(rest[:len(rt)]) == rt && rest[len(rt)] == '"' {
			return rt
		}
	}
	return ""
}

// subject is the params member naming what a request is about.
func (p *requestParams) subject(method string) string {
	var v *string
	switch method {
	case "tools/call", "prompts/get":
		v = p.Name
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		v = p.URI
	case "tasks/get", "tasks/update", "tasks/cancel":
		v = p.TaskID
	}
	if v == nil {
		return ""
	}
	return *v
}
