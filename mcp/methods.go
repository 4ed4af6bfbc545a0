package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/mcpgate/mcpgate/mrtr"
)

// methodSpec is one row of the method table.
type methodSpec struct {
	// handle serves an admitted call and returns the encoded result.
	handle func(ctx context.Context, c *call) ([]byte, *Error)
	// enabled reports whether the server advertises the capability that
	// gates the method; a disabled method answers -32601.
	enabled func() bool
	// nameParam is the params member the Mcp-Name header mirrors, if any.
	nameParam string
}

// methodTable is the modern (2026-07-28) method table. Methods removed in
// this revision (initialize, ping, logging/setLevel, resources/subscribe, …)
// are simply absent and answer -32601 with HTTP 404.
func (s *Server) methodTable() map[string]methodSpec {
	always := func() bool { return true }
	hasTools := func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.capsTools }
	hasPrompts := func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.capsPrompts }
	hasResources := func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.capsRes }
	hasCompletion := func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.completion != nil }
	return map[string]methodSpec{
		"server/discover":          {handle: s.handleDiscover, enabled: always},
		"tools/list":               {handle: s.handleToolsList, enabled: hasTools},
		"tools/call":               {handle: s.handleToolsCall, enabled: hasTools, nameParam: "name"},
		"prompts/list":             {handle: s.handlePromptsList, enabled: hasPrompts},
		"prompts/get":              {handle: s.handlePromptsGet, enabled: hasPrompts, nameParam: "name"},
		"resources/list":           {handle: s.handleResourcesList, enabled: hasResources},
		"resources/templates/list": {handle: s.handleTemplatesList, enabled: hasResources},
		"resources/read":           {handle: s.handleResourcesRead, enabled: hasResources, nameParam: "uri"},
		"completion/complete":      {handle: s.handleComplete, enabled: hasCompletion},
		"subscriptions/listen":     {handle: s.handleListen, enabled: always},
	}
}

// HasMethod reports whether the server answers the method (built-in,
// enabled, or registered by an extension). Callers use it, for example, to
// keep client-chosen strings out of metric labels.
func (s *Server) HasMethod(name string) bool {
	_, ok := s.lookupMethod(name)
	return ok
}

func (s *Server) lookupMethod(name string) (methodSpec, bool) {
	spec, ok := s.methods[name]
	if !ok {
		s.mu.Lock()
		spec, ok = s.extMethods[name]
		s.mu.Unlock()
	}
	if !ok || !spec.enabled() {
		return methodSpec{}, false
	}
	return spec, true
}

// RegisterExtension advertises an extension in server/discover and adds its
// methods to the method table. An extension package (such as the Tasks
// extension) calls it once, before serving.
func (s *Server) RegisterExtension(id string, settings json.RawMessage, methods map[string]ExtensionMethod) {
	if settings == nil {
		settings = json.RawMessage("{}")
	}
	s.mu.Lock()
	if s.extensions == nil {
		s.extensions = map[string]json.RawMessage{}
		s.extMethods = map[string]methodSpec{}
	}
	s.extensions[id] = settings
	for name, m := range methods {
		h := m.Handler
		s.extMethods[name] = methodSpec{
			enabled:   func() bool { return true },
			nameParam: m.NameParam,
			handle: func(ctx context.Context, c *call) ([]byte, *Error) {
				res, err := h(ctx, &ExtensionRequest{Request: c.req, Params: c.msg.params, TaskID: deref(c.params.TaskID)})
				if err != nil {
					return nil, s.toError(c.msg.method, err)
				}
				return res, nil
			},
		}
	}
	s.mu.Unlock()
	s.discover.reset()
}

// ExtensionMethod is a method an extension adds.
type ExtensionMethod struct {
	// Handler returns the complete encoded result (use Server.EncodeResult).
	Handler func(ctx context.Context, req *ExtensionRequest) (json.RawMessage, error)
	// NameParam is the params member mirrored in the Mcp-Name header
	// ("taskId" for the Tasks extension), or empty.
	NameParam string
}

// ExtensionRequest is a request to an extension method.
type ExtensionRequest struct {
	*Request
	// Params are the raw params of the request.
	Params json.RawMessage
	// TaskID is params.taskId, when present.
	TaskID string
}

// EncodeResult encodes v as a result of the given resultType with the
// server's identity in _meta. v must encode as a JSON object without
// resultType and _meta members.
func (s *Server) EncodeResult(resultType string, v any) (json.RawMessage, error) {
	b, jerr := s.encodeResult(resultType, v, false)
	if jerr != nil {
		return nil, jerr
	}
	return b, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (s *Server) handleDiscover(ctx context.Context, c *call) ([]byte, *Error) {
	return s.discover.get(func() []byte {
		type discoverResult struct {
			SupportedVersions []string           `json:"supportedVersions"`
			Capabilities      ServerCapabilities `json:"capabilities"`
			Instructions      string             `json:"instructions,omitempty"`
			TTLMs             int64              `json:"ttlMs"`
			CacheScope        string             `json:"cacheScope"`
		}
		b, _ := s.encodeResult(ResultComplete, discoverResult{
			SupportedVersions: []string{ProtocolVersion},
			Capabilities:      s.Capabilities(),
			Instructions:      s.opts.Instructions,
			TTLMs:             ttlMs(s.opts.ListTTL),
			CacheScope:        s.opts.CacheScope,
		}, false)
		return b
	}), nil
}

func (s *Server) handleToolsList(ctx context.Context, c *call) ([]byte, *Error) {
	snap := s.toolSnapshot()
	call, list := s.opts.ToolFilter, s.opts.ListFilter
	if call != nil || list != nil {
		return snap.filteredPage(s, "tools", c.params.Cursor, func(e *toolEntry) bool {
			p := c.req.Principal
			return (call == nil || call(ctx, p, &e.tool)) && (list == nil || list(ctx, p, &e.tool))
		}, c.era())
	}
	return snap.listPage(s, "tools", c.params.Cursor, c.era())
}

func (s *Server) handlePromptsList(ctx context.Context, c *call) ([]byte, *Error) {
	return s.prompts.current(&s.mu).listPage(s, "prompts", c.params.Cursor, c.era())
}

func (s *Server) handleResourcesList(ctx context.Context, c *call) ([]byte, *Error) {
	return s.resources.current(&s.mu).listPage(s, "resources", c.params.Cursor, c.era())
}

func (s *Server) handleTemplatesList(ctx context.Context, c *call) ([]byte, *Error) {
	return s.templates.current(&s.mu).listPage(s, "resourceTemplates", c.params.Cursor, c.era())
}

func (s *Server) handleToolsCall(ctx context.Context, c *call) ([]byte, *Error) {
	if c.params.Name == nil {
		return nil, ErrInvalidParams("Invalid params: name is required")
	}
	name := *c.params.Name
	e := s.lookupTool(name)
	if e == nil || (s.opts.ToolFilter != nil && !s.opts.ToolFilter(ctx, c.req.Principal, &e.tool)) {
		return nil, ErrInvalidParams("Unknown tool: %s", name)
	}
	args := c.params.Arguments
	if string(args) == "null" {
		args = nil
	}
	if args != nil && args[0] != '{' {
		return nil, ErrInvalidParams("Invalid params: arguments must be an object")
	}
	if err := s.resume(ctx, c, name, args); err != nil {
		return nil, err
	}
	if e.task != nil {
		return s.callTaskTool(ctx, c, e.task, name, args)
	}
	res, err := e.handler(ctx, &CallToolRequest{Request: c.req, Name: name, Arguments: args})
	return s.toolOutcome(ctx, c, name, args, res, err)
}

func (s *Server) handlePromptsGet(ctx context.Context, c *call) ([]byte, *Error) {
	if c.params.Name == nil {
		return nil, ErrInvalidParams("Invalid params: name is required")
	}
	name := *c.params.Name
	e := s.prompts.current(&s.mu).get(name)
	if e == nil {
		return nil, ErrInvalidParams("Unknown prompt: %s", name)
	}
	var args map[string]string
	if a := c.params.Arguments; a != nil && string(a) != "null" {
		if err := json.Unmarshal(a, &args); err != nil {
			return nil, ErrInvalidParams("Invalid params: prompt arguments must be an object of strings")
		}
	}
	for _, pa := range e.prompt.Arguments {
		if _, ok := args[pa.Name]; pa.Required && !ok {
			return nil, ErrInvalidParams("Invalid params: missing required argument %q", pa.Name)
		}
	}
	if err := s.resume(ctx, c, name, c.params.Arguments); err != nil {
		return nil, err
	}
	res, err := e.handler(ctx, &GetPromptRequest{Request: c.req, Name: name, Arguments: args})
	if err != nil {
		var ir *InputRequiredError
		if errors.As(err, &ir) {
			return s.pause(ctx, c, name, c.params.Arguments, ir)
		}
		return nil, s.toError(c.msg.method, err)
	}
	if res == nil {
		return nil, s.toError(c.msg.method, errors.New("prompt handler returned no result"))
	}
	out := *res
	if out.Messages == nil {
		out.Messages = []PromptMessage{}
	}
	out.Meta = s.resultMeta(c, res.Meta)
	return s.encodeFor(c, ResultComplete, &out, out.Meta != nil)
}

func (s *Server) handleResourcesRead(ctx context.Context, c *call) ([]byte, *Error) {
	if c.params.URI == nil {
		return nil, ErrInvalidParams("Invalid params: uri is required")
	}
	uri := *c.params.URI
	req := &ReadResourceRequest{Request: c.req, URI: uri}
	var h ResourceHandler
	if e := s.resources.current(&s.mu).get(uri); e != nil {
		h = e.handler
	} else {
		for _, it := range s.templates.current(&s.mu).list {
			t := it.val
			if m := t.match.FindStringSubmatch(uri); m != nil {
				req.Vars = make(map[string]string, len(t.vars))
				for i, v := range t.vars {
					req.Vars[v] = m[i+1]
				}
				h = t.handler
				break
			}
		}
	}
	if h == nil {
		return nil, ErrResourceNotFound(uri)
	}
	if err := s.resume(ctx, c, uri, nil); err != nil {
		return nil, err
	}
	res, err := h(ctx, req)
	if err != nil {
		var ir *InputRequiredError
		if errors.As(err, &ir) {
			return s.pause(ctx, c, uri, nil, ir)
		}
		return nil, s.toError(c.msg.method, err)
	}
	if res == nil || len(res.Contents) == 0 {
		// An empty read must not stand for a missing resource.
		return nil, ErrResourceNotFound(uri)
	}
	out := *res
	switch {
	case c.legacy:
		out.TTLMs, out.Scope = nil, "" // cache hints are 2026-07-28's
	case out.TTLMs == nil:
		t := ttlMs(s.opts.ResourceTTL)
		out.TTLMs = &t
	}
	if out.Scope == "" && !c.legacy {
		out.Scope = s.opts.CacheScope
	}
	out.Meta = s.resultMeta(c, res.Meta)
	return s.encodeFor(c, ResultComplete, &out, out.Meta != nil)
}

func (s *Server) handleComplete(ctx context.Context, c *call) ([]byte, *Error) {
	req := &CompleteRequest{Request: c.req}
	if c.params.Ref == nil || json.Unmarshal(c.params.Ref, &req.Ref) != nil {
		return nil, ErrInvalidParams("Invalid params: ref must be an object")
	}
	if c.params.Argument == nil || json.Unmarshal(c.params.Argument, &req.Argument) != nil {
		return nil, ErrInvalidParams("Invalid params: argument must be an object with name and value")
	}
	if c.params.Context != nil {
		var ctxArgs struct {
			Arguments map[string]string `json:"arguments"`
		}
		if json.Unmarshal(c.params.Context, &ctxArgs) != nil {
			return nil, ErrInvalidParams("Invalid params: context.arguments must be an object of strings")
		}
		req.Context = ctxArgs.Arguments
	}
	switch req.Ref.Type {
	case "ref/prompt":
		if s.prompts.current(&s.mu).get(req.Ref.Name) == nil {
			return nil, ErrInvalidParams("Unknown prompt: %s", req.Ref.Name)
		}
	case "ref/resource":
		if req.Ref.URI == "" {
			return nil, ErrInvalidParams("Invalid params: ref.uri is required")
		}
	default:
		return nil, ErrInvalidParams("Invalid params: ref.type must be ref/prompt or ref/resource")
	}
	s.mu.Lock()
	h := s.completion
	s.mu.Unlock()
	comp, err := h(ctx, req)
	if err != nil {
		return nil, s.toError(c.msg.method, err)
	}
	if comp == nil {
		comp = &Completion{}
	}
	if comp.Values == nil {
		comp.Values = []string{}
	}
	if len(comp.Values) > 100 {
		comp.Values, comp.HasMore = comp.Values[:100], true
	}
	return s.encodeFor(c, ResultComplete, struct {
		Completion *Completion `json:"completion"`
	}{comp}, false)
}

// resume reads the retry members of a multi round-trip request: the input
// responses (each must be an object) and the sealed requestState, verified
// against this request before anything in it is used.
func (s *Server) resume(ctx context.Context, c *call, name string, args json.RawMessage) *Error {
	if raw := c.params.InputResponses; raw != nil && string(raw) != "null" {
		var m map[string]json.RawMessage
		if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
			return ErrInvalidParams("Invalid params: inputResponses must be an object")
		}
		for k, v := range m {
			if len(v) == 0 || v[0] != '{' {
				return ErrInvalidParams("Invalid params: inputResponses[%q] must be an object", k)
			}
		}
		c.req.InputResponses = m
	}
	if c.params.RequestState == nil {
		return nil
	}
	round, cont, err := s.opts.StateCodec.Open(ctx, *c.params.RequestState, s.binding(c, name, args))
	if err != nil {
		var je *Error
		if errors.As(err, &je) {
			return je
		}
		return ErrInvalidParams("Invalid requestState: %v", err)
	}
	c.req.Round, c.req.continuation = round, cont
	return nil
}

func (s *Server) binding(c *call, name string, args json.RawMessage) mrtr.Binding {
	return mrtr.Binding{Method: c.msg.method, Name: name, Subject: c.req.Principal.Subject, Arguments: args}
}

// pause answers a round with an InputRequiredResult, after checking that the
// client declared every capability the input requests need.
func (s *Server) pause(ctx context.Context, c *call, name string, args json.RawMessage, ir *InputRequiredError) ([]byte, *Error) {
	if missing, what := missingCapabilities(&c.req.Capabilities, ir.Requests); missing != nil {
		return nil, ErrMissingCapability("This request needs the client's "+what+" capability", *missing)
	}
	cont, err := json.Marshal(ir.Continuation)
	if err != nil {
		return nil, s.toError(c.msg.method, err)
	}
	token, err := s.opts.StateCodec.Seal(ctx, s.binding(c, name, args), c.req.Round+1, cont)
	if err != nil {
		return nil, s.toError(c.msg.method, err)
	}
	if c.legacy {
		// A legacy session asks the client itself and runs the handler
		// again (session.serve); nothing is encoded.
		c.paused = &pausedRound{requests: ir.Requests, state: token}
		return nil, nil
	}
	return s.encodeResult(ResultInputRequired, struct {
		InputRequests map[string]InputRequest `json:"inputRequests,omitempty"`
		RequestState  string                  `json:"requestState"`
	}{ir.Requests, token}, false)
}

// missingCapabilities returns the capabilities the input requests need that
// the client did not declare, and a word naming them.
func missingCapabilities(caps *ClientCapabilities, reqs map[string]InputRequest) (*ClientCapabilities, string) {
	var need ClientCapabilities
	var names []string
	for _, r := range reqs {
		switch r.Method {
		case MethodElicit:
			url := false
			switch p := r.Params.(type) {
			case ElicitParams:
				url = p.Mode == "url"
			case *ElicitParams:
				url = p != nil && p.Mode == "url"
			}
			if caps.Elicitation == nil || (url && caps.Elicitation.URL == nil) {
				need.Elicitation = &ElicitationCapability{}
				if url {
					need.Elicitation.URL = &struct{}{}
				}
				names = append(names, "elicitation")
			}
		case MethodCreateMessage:
			if caps.Sampling == nil {
				need.Sampling = &SamplingCapability{}
				names = append(names, "sampling")
			}
		case MethodListRoots:
			if caps.Roots == nil {
				need.Roots = &struct{}{}
				names = append(names, "roots")
			}
		}
	}
	if names == nil {
		return nil, ""
	}
	return &need, strings.Join(names, " and ")
}
