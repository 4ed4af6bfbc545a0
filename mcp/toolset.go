package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// ToolSet is a complete set of tools, built off the request path and put in
// service in one step with Server.SetTools: the way to reload a changed API
// description while serving. Building a set validates and encodes every
// tool and, when it is swapped in, its tools/list pages; a request sees
// either the old set or the new one, never a mix, and a call in flight
// finishes with the handler it started with.
//
// A tool can be unlisted: callable by name but left out of tools/list (a
// discovery mode lists a few tools and keeps every tool callable).
//
// The set keeps a tool's schema bytes, not a copy, when they are compact
// JSON: they must not be modified once the tool is added (AddTask and
// AddDispatcher alike).
//
// A ToolSet is safe for concurrent use while it is built; once passed to
// SetTools it belongs to the server and must not be changed.
type ToolSet struct {
	srv   *Server
	mu    sync.Mutex
	reg   *registry[toolEntry]
	tasks map[string]*TaskTool
	pool  *schemaPool // one copy of each distinct schema; let go in service
	used  bool
}

// NewToolSet returns an empty set of tools for s.
func (s *Server) NewToolSet() *ToolSet {
	return &ToolSet{srv: s, reg: new(registry[toolEntry]), tasks: map[string]*TaskTool{}, pool: newSchemaPool()}
}

// Add adds (or replaces) a tool; see Server.AddTool.
func (ts *ToolSet) Add(t *Tool, h ToolHandler) error {
	if h == nil {
		return fmt.Errorf("mcp: tool %q: nil handler", t.Name)
	}
	return ts.add(t, h, nil)
}

// AddTask adds a tool that runs as a task; see Server.AddTaskTool. The
// server needs EnableTasks.
func (ts *ToolSet) AddTask(t *TaskTool) error {
	if err := ts.srv.checkTaskTool(t); err != nil {
		return err
	}
	tt := *t
	return ts.add(&tt.Tool, nil, &tt)
}

func (ts *ToolSet) add(t *Tool, h ToolHandler, task *TaskTool) error {
	w, e, err := newToolEntry(t, h, task, ts.schemaPool())
	if err != nil {
		return err
	}
	return ts.put(e, w)
}

// schemaPool is the set's pool of schemas (nil once it is in service).
func (ts *ToolSet) schemaPool() *schemaPool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.pool
}

// put adds an entry built by newToolEntry.
func (ts *ToolSet) put(e *toolEntry, w wire) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.used {
		return errors.New("mcp: the tool set is in service and cannot change")
	}
	ts.reg.put(e.tool.Name, w, e)
	if e.task != nil {
		ts.tasks[e.tool.Name] = e.task
	} else {
		delete(ts.tasks, e.tool.Name)
	}
	return nil
}

// Schemas returns a tool's input and output schemas as the set holds them:
// compact, and one copy of each distinct schema (the one its encoded
// list is made from).
// A caller that keeps its tools beside the set, as the gateway keeps the
// OpenAPI tools it compiled, can hold these instead of a second copy;
// they must not be modified. ok is false for a tool the set does not hold.
func (ts *ToolSet) Schemas(name string) (in, out json.RawMessage, ok bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	it := ts.reg.items[name]
	if it == nil {
		return nil, nil, false
	}
	return it.val.tool.InputSchema, it.val.tool.OutputSchema, true
}

// Unlist keeps the named tools callable but out of tools/list. Naming a
// tool the set does not hold is an error.
func (ts *ToolSet) Unlist(names ...string) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.used {
		return errors.New("mcp: the tool set is in service and cannot change")
	}
	for _, n := range names {
		if !ts.reg.unlist(n) {
			return fmt.Errorf("mcp: unlist %q: no such tool in the set", n)
		}
	}
	return nil
}

// Len is the number of tools in the set, listed or not.
func (ts *ToolSet) Len() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.reg.len()
}

// Stamp mixes s into the set's Version: what the set's owner knows about
// its tools that their definitions do not show (where their calls go), so
// that sets which differ in it have different versions.
func (ts *ToolSet) Stamp(s string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.reg.stamp = s
	ts.reg.snap.Store(nil)
}

// Version identifies the set's content (a hash of every tool's name,
// listing and encoded definition): two sets with the same tools have the
// same version.
func (ts *ToolSet) Version() string {
	return ts.reg.current(&ts.mu).fingerprint() // current takes ts.mu to build
}

// SetTools puts ts in service in place of the current tools, in one step:
// requests that start afterwards see only ts, calls in flight finish with
// the handler they started with. It encodes the list pages before the
// swap, so the first tools/list after it is a copy; every listen stream
// and legacy session of this process is told the list changed, then
// ServerOptions.ToolsChanged is called.
//
// A task runs with the Run its tool has in the set in service when the
// task starts (a task whose tool left the set fails); TaskRequest carries
// the version of the set it was created under, for a Run that keeps older
// definitions.
func (s *Server) SetTools(ts *ToolSet) error {
	if ts.srv != s {
		return errors.New("mcp: SetTools with a tool set of another server")
	}
	ts.mu.Lock()
	if ts.used {
		ts.mu.Unlock()
		return errors.New("mcp: SetTools with a tool set already in service")
	}
	ts.used = true
	ts.pool = nil // the schemas stay, in the tools that hold them
	ts.mu.Unlock()
	snap := ts.reg.current(&ts.mu)
	for _, t := range ts.tasks {
		s.handleTask(t)
	}
	snap.encodeAll(s, "tools")

	s.mu.Lock()
	s.tools.Store(ts.reg)
	s.setCap(&s.capsTools)
	s.mu.Unlock()
	s.toolsChanged()
	return nil
}

// ToolsVersion identifies the tool set in service (see ToolSet.Version).
func (s *Server) ToolsVersion() string {
	return s.toolSnapshot().fingerprint()
}
