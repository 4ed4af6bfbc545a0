package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// This file is the tools primitive: registering tools one by one (a whole
// set is swapped in by SetTools, toolset.go), tools/list, and tools/call
// with the encoding of an ordinary (not task) tool's result. Task tools
// are served by tasks.go.

type toolEntry struct {
	tool     Tool
	handler  ToolHandler
	headers  []headerParam // x-mcp-header annotated arguments
	task     *TaskTool     // set for tools that can run as a task
	dispatch Dispatch      // set for a tool that hands its calls to others
}

// AddTool registers (or replaces) a tool with a raw JSON Schema as its input
// schema; an empty schema means a tool without arguments. The schema's root
// must be an object schema. Listening clients are told the list changed.
func (s *Server) AddTool(t *Tool, h ToolHandler) error {
	if h == nil {
		return fmt.Errorf("mcp: tool %q: nil handler", t.Name)
	}
	return s.addTool(t, h, nil)
}

func (s *Server) addTool(t *Tool, h ToolHandler, task *TaskTool) error {
	w, e, err := newToolEntry(t, h, task, nil)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.tools.Load().put(e.tool.Name, w, e)
	s.setCap(&s.capsTools)
	s.mu.Unlock()
	s.toolsChanged()
	return nil
}

// newToolEntry validates t and encodes its wire form, its schemas kept in
// pool (nil: kept apart).
func newToolEntry(t *Tool, h ToolHandler, task *TaskTool, pool *schemaPool) (wire, *toolEntry, error) {
	if err := validToolName(t.Name); err != nil {
		return wire{}, nil, err
	}
	tool := *t
	if len(tool.InputSchema) == 0 {
		tool.InputSchema = json.RawMessage(`{"type":"object","additionalProperties":false}`)
	}
	headers, err := headerParams(tool.InputSchema)
	if err != nil {
		return wire{}, nil, fmt.Errorf("mcp: tool %q: %w", t.Name, err)
	}
	w, err := encodeToolWire(&tool, pool)
	if err != nil {
		return wire{}, nil, fmt.Errorf("mcp: tool %q: encode: %w", t.Name, err)
	}
	tool.InputSchema, tool.OutputSchema = w.in, w.out // one copy of the schemas: the wire's
	if task != nil {                                  // the caller's own copy (AddTaskTool, ToolSet.AddTask)
		task.Tool.InputSchema, task.Tool.OutputSchema = tool.InputSchema, tool.OutputSchema
	}
	return w, &toolEntry{tool: tool, handler: h, headers: headers, task: task}, nil
}

// RemoveTools removes tools by name and notifies listening clients.
func (s *Server) RemoveTools(names ...string) {
	s.mu.Lock()
	changed := false
	for _, n := range names {
		changed = s.tools.Load().remove(n) || changed
	}
	s.mu.Unlock()
	if changed {
		s.toolsChanged()
	}
}

// toolsChanged tells listening clients of this process, then the
// ToolsChanged callback, that the tool list changed.
func (s *Server) toolsChanged() {
	s.listeners.publish(event{kind: evTools})
	if f := s.opts.ToolsChanged; f != nil {
		f()
	}
}

func (s *Server) lookupTool(name string) *toolEntry {
	return s.toolSnapshot().get(name)
}

// toolSnapshot is the current tool set's snapshot.
func (s *Server) toolSnapshot() *snapshot[toolEntry] {
	return s.tools.Load().current(&s.mu)
}

// validToolName enforces the spec's SHOULD: 1–128 of [A-Za-z0-9_.-].
func validToolName(name string) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("mcp: tool name %q must be 1 to 128 characters", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("mcp: tool name %q has a character other than A-Z a-z 0-9 _ - or a dot", name)
		}
	}
	return nil
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
	switch {
	case e.dispatch != nil:
		return s.dispatchTool(ctx, c, e, name, args)
	case e.task != nil:
		return s.callTaskTool(ctx, c, e.task, name, args)
	}
	c.toolReq = CallToolRequest{Request: c.req, Name: name, Arguments: args}
	res, err := e.handler(ctx, &c.toolReq)
	return s.toolOutcome(ctx, c, name, args, res, err)
}

// toolOutcome encodes what a synchronous tool run returned.
func (s *Server) toolOutcome(ctx context.Context, c *call, name string, args json.RawMessage, res *CallToolResult, err error) ([]byte, *Error) {
	if err != nil {
		var ir *InputRequiredError
		var je *Error
		switch {
		case errors.As(err, &ir):
			return s.pause(ctx, c, name, args, ir)
		case errors.As(err, &je):
			return nil, je
		case ctx.Err() != nil:
			return nil, s.toError(c.msg.method, ctx.Err())
		}
		// A plain error from a tool handler is a tool execution error the
		// model can read (handlers choose what they put in it).
		res = ToolError(err.Error())
	}
	if res == nil {
		return nil, s.toError(c.msg.method, errors.New("tool handler returned no result"))
	}
	meta := res.Meta
	if meta != nil {
		meta = s.resultMeta(c, meta)
	}
	out := *res
	out.Meta = meta
	if c.obs != nil {
		c.obs.toolError = out.IsError
	}
	info := s.infoMeta
	if c.legacy {
		info = nil
	}
	b, err := s.encodeToolResult(c, &out, info)
	if err != nil {
		s.logger.Error("mcp: encode tools/call result", "tool", name, "err", err)
		return nil, errInternal()
	}
	return b, nil
}

// encodeToolResult encodes a tools/call result: into the buffer the
// transport lent the call, after the response's head (see call.resp), or
// else into a buffer of its own.
func (s *Server) encodeToolResult(c *call, r *CallToolResult, info []byte) ([]byte, error) {
	hint := resultSizeHint(r) + len(info)
	if c.resp == nil {
		return appendToolResult(make([]byte, 0, hint), r, info, c.era())
	}
	head := appendResponseHead((*c.resp)[:0], c.msg.id)
	b, err := appendToolResult(slices.Grow(head, hint), r, info, c.era())
	if err != nil {
		return nil, err
	}
	*c.resp, c.resp = b, nil
	return b[len(head):len(b):len(b)], nil
}
