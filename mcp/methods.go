package mcp

import (
	"context"
	"encoding/json"
	"errors"
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

// registerExtension advertises an extension in server/discover and adds
// its methods to the method table. The Tasks extension calls it once,
// before serving.
func (s *Server) registerExtension(id string, settings json.RawMessage, methods map[string]extensionMethod) {
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
		h := m.handler
		s.extMethods[name] = methodSpec{
			enabled:   func() bool { return true },
			nameParam: m.nameParam,
			handle: func(ctx context.Context, c *call) ([]byte, *Error) {
				res, err := h(ctx, &extensionRequest{Request: c.req, params: c.msg.params, taskID: deref(c.params.TaskID)})
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

// extensionMethod is a method an extension adds.
type extensionMethod struct {
	// handler returns the complete encoded result (see encodeResult).
	handler func(ctx context.Context, req *extensionRequest) (json.RawMessage, error)
	// nameParam is the params member mirrored in the Mcp-Name header
	// ("taskId" for the Tasks extension), or empty.
	nameParam string
}

// extensionRequest is a request to an extension method.
type extensionRequest struct {
	*Request
	params json.RawMessage // the raw params of the request
	taskID string          // params.taskId, when present
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

func (s *Server) handlePromptsList(ctx context.Context, c *call) ([]byte, *Error) {
	return s.prompts.current(&s.mu).listPage(s, "prompts", c.params.Cursor, c.era())
}

func (s *Server) handleResourcesList(ctx context.Context, c *call) ([]byte, *Error) {
	return s.resources.current(&s.mu).listPage(s, "resources", c.params.Cursor, c.era())
}

func (s *Server) handleTemplatesList(ctx context.Context, c *call) ([]byte, *Error) {
	return s.templates.current(&s.mu).listPage(s, "resourceTemplates", c.params.Cursor, c.era())
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
