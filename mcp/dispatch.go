package mcp

import (
	"context"
	"encoding/json"
	"fmt"
)

// A Dispatch reads a dispatching tool's call and names the tool it hands
// the call to, with that tool's arguments (a JSON object, or nil). An
// error ends the call as a tool handler's error would.
type Dispatch func(ctx context.Context, req *CallToolRequest) (tool string, args json.RawMessage, err error)

// AddDispatcher adds a tool that hands each of its calls to another tool
// of the set, named by the call (a discovery mode's "call" tool): the
// named tool then runs exactly as a direct tools/call of it would,
// validation, input rounds and, for a task tool, the task included, and
// answers the call. A name no tool has, a tool the ToolFilter hides from
// the caller, or another dispatcher, is answered like a call of an unknown
// tool. A paused call's requestState binds the dispatcher's own name and
// arguments, so the state of one inner call never resumes another.
func (ts *ToolSet) AddDispatcher(t *Tool, d Dispatch) error {
	if d == nil {
		return fmt.Errorf("mcp: tool %q: nil dispatch", t.Name)
	}
	w, e, err := newToolEntry(t, nil, nil, ts.schemaPool())
	if err != nil {
		return err
	}
	e.dispatch = d
	return ts.put(e, w)
}

// dispatchTool runs a dispatcher's call: name and args are the
// dispatcher's (the binding of any pause), the inner tool's come from d.
func (s *Server) dispatchTool(ctx context.Context, c *call, e *toolEntry, name string, args json.RawMessage) ([]byte, *Error) {
	inner, innerArgs, err := e.dispatch(ctx, &CallToolRequest{Request: c.req, Name: name, Arguments: args})
	if err != nil {
		return s.toolOutcome(ctx, c, name, args, nil, err)
	}
	t := s.lookupTool(inner)
	if t == nil || t.dispatch != nil || (s.opts.ToolFilter != nil && !s.opts.ToolFilter(ctx, c.req.Principal, &t.tool)) {
		return nil, ErrInvalidParams("Unknown tool: %s", inner)
	}
	if innerArgs != nil && innerArgs[0] != '{' {
		return nil, ErrInvalidParams("Invalid params: arguments must be an object")
	}
	if t.task != nil {
		return s.callTaskToolAs(ctx, c, t.task, inner, innerArgs, name, args)
	}
	res, err := t.handler(ctx, &CallToolRequest{Request: c.req, Name: inner, Arguments: innerArgs})
	return s.toolOutcome(ctx, c, name, args, res, err)
}
