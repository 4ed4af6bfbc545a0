package mcp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
)

// This file serves clients of the initialize-based revisions (2025-11-25 and
// earlier) beside modern ones. A legacy client opens a session with
// initialize; its requests then carry Mcp-Session-Id (HTTP) or simply follow
// on the same process (stdio). The same handlers serve both eras: a legacy
// request is run through the modern method table with a Request built from
// the session, and the result is stripped of the modern members. A handler
// that pauses for input (RequireInput) gets real server-to-client requests on
// the request's stream, and runs again with the answers.
//
// Sessions are the one piece of per-client memory the server keeps, and
// only for legacy clients: they are bounded in number and expire when idle,
// and a session lives on the replica that created it (legacy clients need
// sticky routing; modern clients need none).

// LegacyVersions are the initialize-based revisions served, newest first.
var LegacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// legacyVersion negotiates: the client's version when served, else the
// newest legacy one. Never the modern revision.
func legacyVersion(requested string) string {
	for _, v := range LegacyVersions {
		if v == requested {
			return v
		}
	}
	return LegacyVersions[0]
}

func isLegacyVersion(v string) bool {
	for _, l := range LegacyVersions {
		if l == v {
			return true
		}
	}
	return false
}

// session is one legacy client.
type session struct {
	id         string
	srv        *Server
	version    string
	caps       ClientCapabilities
	clientInfo *Implementation
	principal  Principal
	sub        *subscriber
	entry      *storeEntry // the HTTP transport's bookkeeping (nil on stdio)

	mu          sync.Mutex
	logLevel    LogLevel
	watched     map[string]bool
	pending     map[string]chan legacyReply
	nextID      int64
	events      []sessionEvent // recent GET-stream events, for Last-Event-ID
	nextEventID int64
	closed      bool
	done        chan struct{}
	streamStop  func() // ends the current GET stream
	inflight    map[string]context.CancelFunc
}

type legacyReply struct {
	result json.RawMessage
	err    json.RawMessage
}

type sessionEvent struct {
	id  int64
	msg []byte
}

const maxSessionEvents = 256

func newSessionID() string {
	var b [18]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// initializeParams are the params of a legacy initialize.
type initializeParams struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ClientCapabilities `json:"capabilities"`
	ClientInfo      *Implementation    `json:"clientInfo"`
}

// newSession answers initialize: it negotiates a legacy version and
// returns the session and the encoded InitializeResult.
func (s *Server) newSession(params json.RawMessage, p Principal) (*session, []byte, *Error) {
	var ip initializeParams
	if params != nil {
		if err := json.Unmarshal(params, &ip); err != nil {
			return nil, nil, ErrInvalidParams("Invalid params: %v", err)
		}
	}
	sess := &session{
		id: newSessionID(), srv: s, version: legacyVersion(ip.ProtocolVersion),
		caps: ip.Capabilities, clientInfo: ip.ClientInfo, principal: p,
		watched: map[string]bool{}, pending: map[string]chan legacyReply{},
		done: make(chan struct{}),
	}
	caps := s.Capabilities()
	caps.Extensions = nil // the Tasks extension means nothing before 2026-07-28
	if caps.Logging == nil {
		caps.Logging = &struct{}{} // logging/setLevel is served on legacy sessions
	}
	res, err := json.Marshal(struct {
		ProtocolVersion string             `json:"protocolVersion"`
		Capabilities    ServerCapabilities `json:"capabilities"`
		ServerInfo      Implementation     `json:"serverInfo"`
		Instructions    string             `json:"instructions,omitempty"`
	}{sess.version, caps, s.info, s.opts.Instructions})
	if err != nil {
		return nil, nil, errInternal()
	}
	sess.sub = s.listeners.subscribe(listenFilter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, allResources: true}, nil)
	return sess, res, nil
}

// close ends the session: its GET stream, its broker subscription and any
// server-to-client request still waiting.
func (sess *session) close() {
	sess.mu.Lock()
	if sess.closed {
		sess.mu.Unlock()
		return
	}
	sess.closed = true
	close(sess.done)
	stop := sess.streamStop
	sess.mu.Unlock()
	if stop != nil {
		stop()
	}
	sess.srv.listeners.unsubscribe(sess.sub)
}

// deliver hands a client's response to the server-to-client request
// waiting for it; unknown ids are ignored.
func (sess *session) deliver(msg *message) {
	sess.mu.Lock()
	ch, ok := sess.pending[string(msg.id)]
	delete(sess.pending, string(msg.id))
	sess.mu.Unlock()
	if ok {
		ch <- legacyReply{result: msg.result, err: msg.errObj}
	}
}

// serve runs one legacy request and returns the legacy-shaped result; resp
// is the transport's buffer for the answer (see call.resp), or nil.
func (sess *session) serve(ctx context.Context, msg *message, out stream, ob *observation, resp *[]byte) ([]byte, *Error) {
	s := sess.srv
	switch msg.method {
	case "initialize":
		return nil, NewError(CodeInvalidRequest, "Invalid Request: the session is already initialized", nil)
	case "ping":
		return []byte("{}"), nil
	case "logging/setLevel":
		var p struct {
			Level LogLevel `json:"level"`
		}
		if json.Unmarshal(msg.params, &p) != nil || p.Level.severity() < 0 {
			return nil, ErrInvalidParams("Invalid params: level must be one of debug, info, notice, warning, error, critical, alert, emergency")
		}
		sess.mu.Lock()
		sess.logLevel = p.Level
		sess.mu.Unlock()
		return []byte("{}"), nil
	case "resources/subscribe", "resources/unsubscribe":
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(msg.params, &p) != nil || p.URI == "" {
			return nil, ErrInvalidParams("Invalid params: uri is required")
		}
		if _, ok := s.lookupMethod("resources/read"); !ok {
			return nil, errMethodNotFound(msg.method)
		}
		sess.mu.Lock()
		if msg.method == "resources/subscribe" {
			sess.watched[p.URI] = true
		} else {
			delete(sess.watched, p.URI)
		}
		sess.mu.Unlock()
		return []byte("{}"), nil
	case "server/discover", "subscriptions/listen":
		return nil, errMethodNotFound(msg.method) // modern-only methods
	}
	spec, ok := s.methods[msg.method]
	if !ok || !spec.enabled() {
		return nil, errMethodNotFound(msg.method)
	}
	params, jerr := msg.requestParams()
	if jerr != nil {
		return nil, jerr
	}
	for round := 0; ; round++ {
		c := &call{msg: msg, params: params, spec: spec, legacy: true, obs: ob, resp: resp}
		c.req = &c.request
		sess.fillRequest(c.req, msg, params)
		res, jerr := s.handle(ctx, c, out)
		c.msg, c.params = nil, nil // a handler may keep the call; the message may be pooled
		switch {
		case jerr != nil:
			return nil, legacyError(msg.method, jerr)
		case c.paused == nil && res == nil:
			return nil, errInternal()
		case c.paused == nil:
			return res, nil // handlers encode legacy calls in the 2025-11-25 shape
		case round >= 10:
			return nil, NewError(CodeInternalError, "Too many input rounds", nil)
		}
		answers, jerr := sess.ask(ctx, out, c.paused.requests)
		if jerr != nil {
			return nil, jerr
		}
		raw, _ := json.Marshal(answers)
		params.InputResponses = raw
		state := c.paused.state
		params.RequestState = &state
	}
}

// fillRequest builds the handler-facing Request of a legacy request: the
// session's capabilities, version and log level stand in for _meta.
func (sess *session) fillRequest(r *Request, msg *message, p *requestParams) {
	sess.mu.Lock()
	lvl := sess.logLevel
	sess.mu.Unlock()
	*r = Request{
		ID: msg.id, Method: msg.method, ProtocolVersion: sess.version,
		Capabilities: sess.caps, clientInfo: sess.clientInfo, Principal: sess.principal, logLevel: lvl,
	}
	if p.Meta != nil {
		r.Trace = p.Meta.trace()
		if len(p.Meta.ProgressToken) > 0 && checkID(p.Meta.ProgressToken) == nil {
			r.progressToken = p.Meta.ProgressToken
		}
	}
}

// ask sends each input request as a real server-to-client request on the
// request's stream and waits for every answer.
func (sess *session) ask(ctx context.Context, out stream, reqs map[string]InputRequest) (map[string]json.RawMessage, *Error) {
	type waiting struct {
		key string
		ch  chan legacyReply
	}
	var ws []waiting
	for key, ir := range reqs {
		var params json.RawMessage
		if ir.Params != nil {
			var err error
			if params, err = json.Marshal(ir.Params); err != nil {
				return nil, errInternal()
			}
		}
		if ir.Method == MethodElicit {
			params = legacyElicitParams(params)
		}
		sess.mu.Lock()
		sess.nextID++
		id := strconv.Quote("mcpgate-" + strconv.FormatInt(sess.nextID, 10))
		ch := make(chan legacyReply, 1)
		sess.pending[id] = ch
		sess.mu.Unlock()
		msg := []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":` + strconv.Quote(ir.Method))
		if params != nil {
			msg = append(append(msg, `,"params":`...), params...)
		}
		msg = append(msg, '}')
		if err := out.send(msg); err != nil {
			return nil, NewError(CodeInternalError, "Could not send "+ir.Method+" to the client", nil)
		}
		ws = append(ws, waiting{key, ch})
	}
	answers := make(map[string]json.RawMessage, len(ws))
	for _, w := range ws {
		select {
		case r := <-w.ch:
			if r.err != nil {
				var e Error
				_ = json.Unmarshal(r.err, &e)
				return nil, NewError(CodeInternalError, "The client could not answer the "+w.key+" request: "+e.Message, nil)
			}
			answers[w.key] = r.result
		case <-ctx.Done():
			return nil, NewError(CodeInternalError, "Request cancelled", nil)
		case <-sess.done:
			return nil, NewError(CodeInternalError, "Session ended", nil)
		}
	}
	return answers, nil
}

// legacyElicitParams adds the elicitationId a 2025-11-25 URL-mode
// elicitation requires.
func legacyElicitParams(p json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(p, &m) != nil || string(m["mode"]) != `"url"` {
		return p
	}
	if _, ok := m["elicitationId"]; !ok {
		m["elicitationId"], _ = json.Marshal(newSessionID())
	}
	b, err := json.Marshal(m)
	if err != nil {
		return p
	}
	return b
}

// objectRootedSchema reports whether schema can be an object-rooted
// outputSchema, returning a rewritten schema (nil: unchanged) when the
// root only needs "type": "object" added.
func objectRootedSchema(schema json.RawMessage) (json.RawMessage, bool) {
	// Most roots say "type" or have no "$ref": decided without decoding
	// the rest.
	if typ, ref, ok := rootKeywords(schema); ok {
		switch {
		case typ != nil:
			return nil, string(typ) == `"object"`
		case ref == nil:
			return nil, false
		}
	}
	return objectRootedSchemaDecoded(schema)
}

// objectRootedSchemaDecoded is objectRootedSchema on the decoded schema.
func objectRootedSchemaDecoded(schema json.RawMessage) (json.RawMessage, bool) {
	var root map[string]json.RawMessage
	if json.Unmarshal(schema, &root) != nil {
		return nil, false
	}
	if string(root["type"]) == `"object"` {
		return nil, true
	}
	if _, typed := root["type"]; typed {
		return nil, false
	}
	var ref string
	if json.Unmarshal(root["$ref"], &ref) != nil || !strings.HasPrefix(ref, "#/$defs/") {
		return nil, false
	}
	var defs map[string]map[string]json.RawMessage
	if json.Unmarshal(root["$defs"], &defs) != nil || string(defs[strings.TrimPrefix(ref, "#/$defs/")]["type"]) != `"object"` {
		return nil, false
	}
	root["type"] = json.RawMessage(`"object"`)
	b, err := json.Marshal(root)
	if err != nil {
		return nil, false
	}
	return b, true
}

// legacyError maps modern errors to their legacy form: a missing resource
// was -32002 before 2026-07-28.
func legacyError(method string, e *Error) *Error {
	if e == nil {
		return errInternal()
	}
	out := *e
	out.status = 0 // legacy clients read 404 as "session gone"
	if method == "resources/read" && e.Code == CodeInvalidParams && e.Message == "Resource not found" {
		out.Code = -32002
	}
	return &out
}

// nextEvent renders a session notification for the GET stream and records
// it for Last-Event-ID resumption.
func (sess *session) nextEvent(msg []byte) sessionEvent {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	sess.nextEventID++
	ev := sessionEvent{id: sess.nextEventID, msg: append([]byte(nil), msg...)}
	sess.events = append(sess.events, ev)
	if len(sess.events) > maxSessionEvents {
		sess.events = sess.events[len(sess.events)-maxSessionEvents:]
	}
	return ev
}

// eventsAfter returns the recorded events after id.
func (sess *session) eventsAfter(id int64) []sessionEvent {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	var out []sessionEvent
	for _, ev := range sess.events {
		if ev.id > id {
			out = append(out, ev)
		}
	}
	return out
}

// pendingNotifications renders what the session's subscriber collected:
// list changes, and updates of the resources this session subscribed to.
func (sess *session) pendingNotifications() [][]byte {
	kinds, uris, _ := sess.sub.take()
	var out [][]byte
	add := func(method string, params any) {
		if b, err := appendNotification(nil, method, params); err == nil {
			out = append(out, b)
		}
	}
	if kinds&evTools != 0 {
		add("notifications/tools/list_changed", nil)
	}
	if kinds&evPrompts != 0 {
		add("notifications/prompts/list_changed", nil)
	}
	if kinds&evResources != 0 {
		add("notifications/resources/list_changed", nil)
	}
	sess.mu.Lock()
	watched := make([]string, 0, len(uris))
	for _, u := range uris {
		for w := range sess.watched {
			if u == w || (len(w) > 0 && w[len(w)-1] == '/' && len(u) > len(w) && u[:len(w)] == w) {
				watched = append(watched, u)
				break
			}
		}
	}
	sess.mu.Unlock()
	for _, u := range watched {
		add("notifications/resources/updated", map[string]string{"uri": u})
	}
	return out
}
