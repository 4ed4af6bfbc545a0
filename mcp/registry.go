package mcp

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// registry keeps one kind of primitive in registration order. Writers hold
// the mutex the registry's owner passes to current (Server.mu, or a
// ToolSet's own while it is built); readers load an immutable snapshot
// without locking. Each item's wire form is encoded once at registration,
// and each snapshot encodes its list pages once, on first use. An unlisted
// item can be looked up but is left out of the list pages.
type registry[T any] struct {
	order []string
	items map[string]*item[T]
	stamp string // mixed into the fingerprint (ToolSet.Stamp)
	snap  atomic.Pointer[snapshot[T]]
}

type item[T any] struct {
	key      string
	wire     wire
	val      *T
	unlisted bool
}

type snapshot[T any] struct {
	list  []*item[T]          // the listed items, in order: the list pages
	index map[string]int      // position in list of each listed key
	all   []*item[T]          // every item, listed or not, in order
	byKey map[string]*item[T] // every item by key

	pages [2]pageCache // by era

	versionOnce sync.Once
	version     string
	stamp       string // the registry's, when the snapshot was taken
}

// put adds or replaces key; a replaced item keeps its position.
func (r *registry[T]) put(key string, w wire, v *T) {
	if r.items == nil {
		r.items = make(map[string]*item[T])
	}
	if _, ok := r.items[key]; !ok {
		r.order = append(r.order, key)
	}
	r.items[key] = &item[T]{key: key, wire: w, val: v}
	r.snap.Store(nil)
}

// unlist leaves key out of the list pages (it can still be looked up)
// and reports whether key is there.
func (r *registry[T]) unlist(key string) bool {
	it, ok := r.items[key]
	if !ok {
		return false
	}
	if !it.unlisted {
		r.items[key] = &item[T]{key: it.key, wire: it.wire, val: it.val, unlisted: true}
		r.snap.Store(nil)
	}
	return true
}

// len is the number of items, listed or not.
func (r *registry[T]) len() int { return len(r.order) }

// remove deletes key and reports whether it was there.
func (r *registry[T]) remove(key string) bool {
	if _, ok := r.items[key]; !ok {
		return false
	}
	delete(r.items, key)
	for i, k := range r.order {
		if k == key {
			r.order = append(r.order[:i:i], r.order[i+1:]...)
			break
		}
	}
	r.snap.Store(nil)
	return true
}

// current returns the snapshot, rebuilding it under mu after a change.
func (r *registry[T]) current(mu *sync.Mutex) *snapshot[T] {
	if s := r.snap.Load(); s != nil {
		return s
	}
	mu.Lock()
	defer mu.Unlock()
	if s := r.snap.Load(); s != nil {
		return s
	}
	s := &snapshot[T]{list: make([]*item[T], 0, len(r.order)), index: make(map[string]int, len(r.order)),
		all: make([]*item[T], len(r.order)), byKey: make(map[string]*item[T], len(r.order)), stamp: r.stamp}
	for i, k := range r.order {
		it := r.items[k]
		s.all[i], s.byKey[k] = it, it
		if !it.unlisted {
			s.index[k] = len(s.list)
			s.list = append(s.list, it)
		}
	}
	r.snap.Store(s)
	return s
}

func (s *snapshot[T]) get(key string) *T {
	if it, ok := s.byKey[key]; ok {
		return it.val
	}
	return nil
}

// encodeAll encodes the list pages now (they are otherwise encoded on the
// first list request).
func (s *snapshot[T]) encodeAll(srv *Server, field string) {
	s.pagesOf(srv, field, modern)
}

// fingerprint identifies the snapshot's content: the SHA-256 of every
// item's key, listing and wire form (its schemas by their own SHA-256),
// base64url; computed once.
func (s *snapshot[T]) fingerprint() string {
	s.versionOnce.Do(func() {
		h := sha256.New()
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s.stamp)))
		h.Write(n[:])
		h.Write([]byte(s.stamp))
		for _, it := range s.all {
			binary.BigEndian.PutUint64(n[:], uint64(len(it.key)))
			h.Write(n[:])
			h.Write([]byte(it.key))
			it.wire.writeTo(h)
			if it.unlisted {
				h.Write([]byte{1})
			} else {
				h.Write([]byte{0})
			}
		}
		s.version = base64.RawURLEncoding.EncodeToString(h.Sum(nil))
	})
	return s.version
}

// era picks the shape of an encoded list page: 2026-07-28, or the
// 2025-11-25 shape of legacy sessions (no resultType, no cache hints, no
// serverInfo, and each item's legacy wire form).
type era int

const (
	modern era = iota
	legacyEra
)

// pageCache holds one era's list pages of a snapshot, encoded once.
type pageCache struct {
	once  sync.Once
	pages [][]byte
}

// listPage returns the encoded result of the page a cursor names. field is
// the result's array member ("tools", "prompts", …).
func (s *snapshot[T]) listPage(srv *Server, field string, cursor *string, e era) ([]byte, *Error) {
	size := srv.opts.PageSize
	start := 0
	if cursor != nil {
		key, err := base64.RawURLEncoding.DecodeString(*cursor)
		i, ok := s.index[string(key)]
		if err != nil || !ok {
			return nil, ErrInvalidParams("Invalid cursor")
		}
		start = i
	}
	if start%size == 0 {
		if pages := s.pagesOf(srv, field, e); start/size < len(pages) {
			return pages[start/size], nil
		}
	}
	return s.encodePage(srv, field, start, srv.opts.CacheScope, e), nil
}

// pagesOf returns the era's pages, encoding them on first use.
func (s *snapshot[T]) pagesOf(srv *Server, field string, e era) [][]byte {
	pc := &s.pages[e]
	pc.once.Do(func() { pc.pages = s.encodePages(srv, field, e) })
	return pc.pages
}

// filteredPage is listPage over the items keep admits, encoded per request
// and marked private: what it lists depends on the caller.
func (s *snapshot[T]) filteredPage(srv *Server, field string, cursor *string, keep func(*T) bool, e era) ([]byte, *Error) {
	var visible []*item[T]
	for _, it := range s.list {
		if keep(it.val) {
			visible = append(visible, it)
		}
	}
	start := 0
	if cursor != nil {
		key, err := base64.RawURLEncoding.DecodeString(*cursor)
		if err != nil {
			return nil, ErrInvalidParams("Invalid cursor")
		}
		start = -1
		for i, it := range visible {
			if it.key == string(key) {
				start = i
				break
			}
		}
		if start < 0 {
			return nil, ErrInvalidParams("Invalid cursor")
		}
	}
	sub := &snapshot[T]{list: visible}
	return sub.encodePage(srv, field, start, CachePrivate, e), nil
}

func (s *snapshot[T]) encodePages(srv *Server, field string, e era) [][]byte {
	n := (len(s.list) + srv.opts.PageSize - 1) / srv.opts.PageSize
	if n == 0 {
		n = 1
	}
	pages := make([][]byte, n)
	for p := range pages {
		pages[p] = s.encodePage(srv, field, p*srv.opts.PageSize, srv.opts.CacheScope, e)
	}
	return pages
}

// encodePage encodes the page starting at start: for modern, resultType,
// the items, nextCursor, the cache hints and the server's identity; for a
// legacy session the items (in their legacy form) and nextCursor only.
func (s *snapshot[T]) encodePage(srv *Server, field string, start int, scope string, e era) []byte {
	end := min(start+srv.opts.PageSize, len(s.list))
	start = min(start, end)
	items := s.list[start:end]
	size := 128 + len(srv.infoMeta)
	for _, it := range items {
		size += it.wireLen(e) + 1
	}
	b := make([]byte, 0, size)
	if e == modern {
		b = append(b, `{"resultType":"complete","`...)
	} else {
		b = append(b, `{"`...)
	}
	b = append(b, field...)
	b = append(b, `":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = it.appendWire(b, e)
	}
	b = append(b, ']')
	if end < len(s.list) {
		b = append(b, `,"nextCursor":"`...)
		b = append(b, base64.RawURLEncoding.EncodeToString([]byte(s.list[end].key))...)
		b = append(b, '"')
	}
	if e == modern {
		b = append(b, `,"ttlMs":`...)
		b = strconv.AppendInt(b, ttlMs(srv.opts.ListTTL), 10)
		b = append(b, `,"cacheScope":"`...)
		b = append(b, scope...)
		b = append(b, `","_meta":`...)
		b = append(b, srv.infoMeta...)
	}
	return append(b, '}')
}

// appendWire appends the item's encoded form in an era.
func (it *item[T]) appendWire(b []byte, e era) []byte { return it.wire.appendTo(b, e) }

// wireLen is the length of the item's encoded form in an era.
func (it *item[T]) wireLen(e era) int { return it.wire.len(e) }

// Registry entries.

type promptEntry struct {
	prompt  Prompt
	handler PromptHandler
}

type resourceEntry struct {
	res     Resource
	handler ResourceHandler
}

type templateEntry struct {
	tmpl    ResourceTemplate
	handler ResourceHandler
	match   *regexp.Regexp
	vars    []string
}

// AddPrompt registers (or replaces) a prompt.
func (s *Server) AddPrompt(p *Prompt, h PromptHandler) error {
	if p.Name == "" {
		return fmt.Errorf("mcp: prompt without a name")
	}
	wire, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("mcp: prompt %q: encode: %w", p.Name, err)
	}
	s.mu.Lock()
	s.prompts.put(p.Name, plainWire(wire), &promptEntry{prompt: *p, handler: h})
	s.setCap(&s.capsPrompts)
	s.mu.Unlock()
	s.listeners.publish(event{kind: evPrompts})
	return nil
}

// RemovePrompts removes prompts by name and notifies listening clients.
func (s *Server) RemovePrompts(names ...string) {
	s.mu.Lock()
	changed := false
	for _, n := range names {
		changed = s.prompts.remove(n) || changed
	}
	s.mu.Unlock()
	if changed {
		s.listeners.publish(event{kind: evPrompts})
	}
}

// AddResource registers (or replaces) a resource with a fixed URI.
func (s *Server) AddResource(r *Resource, h ResourceHandler) error {
	if r.URI == "" || r.Name == "" {
		return fmt.Errorf("mcp: resource needs a uri and a name")
	}
	wire, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("mcp: resource %q: encode: %w", r.URI, err)
	}
	s.mu.Lock()
	s.resources.put(r.URI, plainWire(wire), &resourceEntry{res: *r, handler: h})
	s.setCap(&s.capsRes)
	s.mu.Unlock()
	s.listeners.publish(event{kind: evResources})
	return nil
}

// AddResourceTemplate registers a resource template. Reads of URIs that
// match it (RFC 6570 {var} and {+var} expressions) reach h with the
// variables in ReadResourceRequest.Vars.
func (s *Server) AddResourceTemplate(t *ResourceTemplate, h ResourceHandler) error {
	if t.URITemplate == "" || t.Name == "" {
		return fmt.Errorf("mcp: resource template needs a uriTemplate and a name")
	}
	re, vars, err := compileTemplate(t.URITemplate)
	if err != nil {
		return fmt.Errorf("mcp: resource template %q: %w", t.URITemplate, err)
	}
	wire, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("mcp: resource template %q: encode: %w", t.URITemplate, err)
	}
	s.mu.Lock()
	s.templates.put(t.URITemplate, plainWire(wire), &templateEntry{tmpl: *t, handler: h, match: re, vars: vars})
	s.setCap(&s.capsRes)
	s.mu.Unlock()
	s.listeners.publish(event{kind: evResources})
	return nil
}

// ResourceUpdated tells clients listening on uri (or on a prefix of it) that
// the resource changed.
func (s *Server) ResourceUpdated(uri string) {
	s.listeners.publish(event{kind: evResourceUpdated, uri: uri})
}

// SetCompletionHandler installs the completion/complete handler and
// advertises the completions capability.
func (s *Server) SetCompletionHandler(h CompletionHandler) {
	s.mu.Lock()
	s.completion = h
	s.mu.Unlock()
	s.discover.reset()
}

// setCap turns a capability on; callers hold s.mu.
func (s *Server) setCap(c *bool) {
	if !*c {
		*c = true
		s.discover.reset()
	}
}

// compileTemplate turns a level-1/2 RFC 6570 template into a matcher.
func compileTemplate(tmpl string) (*regexp.Regexp, []string, error) {
	var b strings.Builder
	var vars []string
	b.WriteString("^")
	for rest := tmpl; rest != ""; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(regexp.QuoteMeta(rest))
			break
		}
		b.WriteString(regexp.QuoteMeta(rest[:i]))
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, nil, fmt.Errorf("unclosed expression")
		}
		expr := rest[i+1 : i+j]
		rest = rest[i+j+1:]
		pattern := `([^/?#]+)`
		if strings.HasPrefix(expr, "+") {
			expr, pattern = expr[1:], `(.+)`
		}
		if expr == "" || strings.ContainsAny(expr, ",:*?#/;&=.") {
			return nil, nil, fmt.Errorf("unsupported expression {%s}", expr)
		}
		vars = append(vars, expr)
		b.WriteString(pattern)
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	return re, vars, err
}
