package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"
)

// Change events fanned out to subscriptions/listen streams.
type evKind uint8

const (
	evTools evKind = 1 << iota
	evPrompts
	evResources
	evResourceUpdated
	evTask
)

type event struct {
	kind evKind
	uri  string // evResourceUpdated
	id   string // evTask
}

// subscriber is one listen stream's mailbox. Events coalesce: a slow stream
// gets each kind of change once, and each updated URI or task once, so a
// publisher never blocks and nothing a stream asked for is lost. A stream
// served by a goroutine waits on wake; a parked one (see parkedStream) is
// kicked instead, and also when the broker closes.
type subscriber struct {
	filter listenFilter
	wake   chan struct{}
	kick   func() // set for parked streams instead of wake

	mu      sync.Mutex
	pending evKind
	uris    []string
	tasks   []string
}

func (sub *subscriber) offer(ev event) {
	f := &sub.filter
	switch ev.kind {
	case evTools:
		if !f.ToolsListChanged {
			return
		}
	case evPrompts:
		if !f.PromptsListChanged {
			return
		}
	case evResources:
		if !f.ResourcesListChanged {
			return
		}
	case evResourceUpdated:
		if !f.watches(ev.uri) {
			return
		}
	case evTask:
		if !f.hasTask(ev.id) {
			return
		}
	}
	sub.mu.Lock()
	sub.pending |= ev.kind
	switch ev.kind {
	case evResourceUpdated:
		if !slices.Contains(sub.uris, ev.uri) {
			sub.uris = append(sub.uris, ev.uri)
		}
	case evTask:
		if !slices.Contains(sub.tasks, ev.id) {
			sub.tasks = append(sub.tasks, ev.id)
		}
	}
	sub.mu.Unlock()
	sub.signal()
}

func (sub *subscriber) signal() {
	if sub.kick != nil {
		sub.kick()
		return
	}
	select {
	case sub.wake <- struct{}{}:
	default:
	}
}

func (sub *subscriber) take() (evKind, []string, []string) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	k, u, t := sub.pending, sub.uris, sub.tasks
	sub.pending, sub.uris, sub.tasks = 0, nil, nil
	return k, u, t
}

// broker fans events out to the live listen streams of this process.
type broker struct {
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	done   chan struct{}
	closed bool
}

func newBroker() *broker {
	return &broker{subs: map[*subscriber]struct{}{}, done: make(chan struct{})}
}

// subscribe adds a mailbox for f; with kick it signals by calling kick,
// otherwise through its wake channel.
func (b *broker) subscribe(f listenFilter, kick func()) *subscriber {
	sub := &subscriber{filter: f, kick: kick}
	if kick == nil {
		sub.wake = make(chan struct{}, 1)
	}
	b.mu.Lock()
	b.subs[sub] = struct{}{}
	closed := b.closed
	b.mu.Unlock()
	if closed && kick != nil {
		kick()
	}
	return sub
}

func (b *broker) unsubscribe(sub *subscriber) {
	b.mu.Lock()
	delete(b.subs, sub)
	b.mu.Unlock()
}

func (b *broker) publish(ev event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for sub := range b.subs {
		sub.offer(ev)
	}
}

// close ends the broker: done is closed and parked streams are kicked.
func (b *broker) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed = true
		close(b.done)
		for sub := range b.subs {
			if sub.kick != nil {
				sub.kick()
			}
		}
	}
}

// isClosed reports whether close was called.
func (b *broker) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// listenFilter is a SubscriptionFilter.
type listenFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	TaskIDs               []string `json:"taskIds,omitempty"`

	allResources bool // legacy sessions filter resource updates themselves
}

// watches reports whether uri is subscribed, or lies under a subscribed
// directory-like URI (one ending in "/").
func (f *listenFilter) watches(uri string) bool {
	if f.allResources {
		return true
	}
	for _, s := range f.ResourceSubscriptions {
		if uri == s || (strings.HasSuffix(s, "/") && strings.HasPrefix(uri, s)) {
			return true
		}
	}
	return false
}

func (f *listenFilter) hasTask(id string) bool { return slices.Contains(f.TaskIDs, id) }

// listenStream is a subscriptions/listen stream whose filter was accepted:
// what it asked for and how its notifications are rendered. It keeps only
// what rendering needs (the caller, its capabilities and the subscription
// id), so a parked stream holds no request or response.
type listenStream struct {
	srv     *Server
	id      json.RawMessage // the request id: the subscription id
	subMeta json.RawMessage // {"io.modelcontextprotocol/subscriptionId": id}
	filter  listenFilter
	req     *Request // caller and capabilities, for task notifications
	tasks   *taskExt // the Tasks extension, when enabled: task ids and notifications/tasks
	sub     *subscriber
}

// streamParker is implemented by a request's stream that can carry a
// listen stream without a goroutine of its own (an HTTP/1.x connection).
// park takes the stream over (its acknowledgement included) and reports
// whether it did; the transport then ends the request without an answer.
type streamParker interface {
	park(ctx context.Context, ls *listenStream) bool
}

// handleListen serves subscriptions/listen: the acknowledgement first, then
// the notifications the stream asked for, each tagged with the subscription
// id, until the client goes away or the server closes (which ends the stream
// with the listen result).
func (s *Server) handleListen(ctx context.Context, c *call) ([]byte, *Error) {
	ls, jerr := s.newListenStream(ctx, c)
	if jerr != nil {
		return nil, jerr
	}
	if p, ok := c.req.out.(streamParker); ok && p.park(ctx, ls) {
		return nil, nil
	}
	return ls.serve(ctx, c.req.out)
}

// newListenStream checks the filter and keeps what the stream needs.
func (s *Server) newListenStream(ctx context.Context, c *call) (*listenStream, *Error) {
	raw := c.params.Notifications
	if raw == nil || raw[0] != '{' {
		return nil, ErrInvalidParams("Invalid params: notifications must be an object")
	}
	var want listenFilter
	if err := json.Unmarshal(raw, &want); err != nil {
		return nil, ErrInvalidParams("Invalid params: malformed notifications filter: %v", err)
	}
	s.mu.Lock()
	caps := struct{ tools, prompts, res bool }{s.capsTools, s.capsPrompts, s.capsRes}
	tx := s.tasks
	s.mu.Unlock()
	if len(want.TaskIDs) > 0 && !c.req.Capabilities.HasExtension(ExtensionTasks) {
		return nil, ErrMissingCapability("taskIds needs the "+ExtensionTasks+" extension",
			ClientCapabilities{Extensions: map[string]json.RawMessage{ExtensionTasks: json.RawMessage("{}")}})
	}
	got := listenFilter{
		ToolsListChanged:     want.ToolsListChanged && caps.tools,
		PromptsListChanged:   want.PromptsListChanged && caps.prompts,
		ResourcesListChanged: want.ResourcesListChanged && caps.res,
	}
	if caps.res {
		got.ResourceSubscriptions = want.ResourceSubscriptions
	}
	if tx != nil && len(want.TaskIDs) > 0 {
		got.TaskIDs = tx.authorize(ctx, c.req, want.TaskIDs)
	}
	subMeta, _ := json.Marshal(map[string]json.RawMessage{MetaSubscriptionID: c.msg.id})
	r := c.req
	kept := &Request{ID: r.ID, Method: r.Method, ProtocolVersion: r.ProtocolVersion, Capabilities: r.Capabilities, Principal: r.Principal}
	return &listenStream{srv: s, id: c.msg.id, subMeta: subMeta, filter: got, req: kept, tasks: tx}, nil
}

// subscribe joins the broker; see broker.subscribe for kick.
func (ls *listenStream) subscribe(kick func()) {
	ls.sub = ls.srv.listeners.subscribe(ls.filter, kick)
}

func (ls *listenStream) unsubscribe() { ls.srv.listeners.unsubscribe(ls.sub) }

// ack is the notifications/subscriptions/acknowledged message.
func (ls *listenStream) ack() []byte {
	type ackParams struct {
		Meta          json.RawMessage `json:"_meta"`
		Notifications listenFilter    `json:"notifications"`
	}
	b, _ := appendNotification(nil, "notifications/subscriptions/acknowledged", ackParams{ls.subMeta, ls.filter})
	return b
}

// final is the listen result that ends the stream when the server closes.
func (ls *listenStream) final() []byte {
	meta, _ := json.Marshal(map[string]any{MetaSubscriptionID: ls.id, MetaServerInfo: ls.srv.info})
	return []byte(`{"resultType":"complete","_meta":` + string(meta) + `}`)
}

// deliver renders what the mailbox collected and hands each message to
// emit, stopping at the first error.
func (ls *listenStream) deliver(ctx context.Context, emit func([]byte) error) error {
	type plain struct {
		Meta json.RawMessage `json:"_meta"`
	}
	type updated struct {
		Meta json.RawMessage `json:"_meta"`
		URI  string          `json:"uri"`
	}
	kinds, uris, taskIDs := ls.sub.take()
	var err error
	send := func(method string, params any) {
		if err != nil {
			return
		}
		var b []byte
		if b, err = appendNotification(nil, method, params); err == nil {
			err = emit(b)
		}
	}
	if kinds&evTools != 0 {
		send("notifications/tools/list_changed", plain{ls.subMeta})
	}
	if kinds&evPrompts != 0 {
		send("notifications/prompts/list_changed", plain{ls.subMeta})
	}
	if kinds&evResources != 0 {
		send("notifications/resources/list_changed", plain{ls.subMeta})
	}
	for _, u := range uris {
		send("notifications/resources/updated", updated{ls.subMeta, u})
	}
	for _, id := range taskIDs {
		if ls.tasks == nil {
			break
		}
		if p, ok := ls.tasks.notification(ctx, ls.req, id); ok {
			send("notifications/tasks", withMeta(p, ls.subMeta))
		}
	}
	return err
}

// serve runs the stream on the request's goroutine (stdio, the in-memory
// client, HTTP/2): it waits for changes, keep-alive ticks, the client
// leaving and the server closing.
func (ls *listenStream) serve(ctx context.Context, out stream) ([]byte, *Error) {
	ls.subscribe(nil)
	defer ls.unsubscribe()
	if out.send(ls.ack()) != nil {
		return nil, nil
	}
	keepalive := time.NewTicker(ls.srv.opts.KeepAlive)
	defer keepalive.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, nil // the client left: nothing more is sent
		case <-ls.srv.listeners.done:
			return ls.final(), nil
		case <-keepalive.C:
			if out.keepalive() != nil {
				return nil, nil
			}
		case <-ls.sub.wake:
			if ls.deliver(ctx, out.send) != nil {
				return nil, nil
			}
		}
	}
}

// withMeta adds "_meta": meta to the encoded object p.
func withMeta(p json.RawMessage, meta json.RawMessage) json.RawMessage {
	if len(p) < 2 {
		return p
	}
	out := make([]byte, 0, len(p)+len(meta)+10)
	out = append(out, `{"_meta":`...)
	out = append(out, meta...)
	if inner := strings.TrimSpace(string(p[1 : len(p)-1])); inner != "" {
		out = append(out, ',')
		out = append(out, inner...)
	}
	return append(out, '}')
}
