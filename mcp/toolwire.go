package mcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// This file encodes a tool's wire form, once, when the tool is registered:
// a large API registers thousands (Microsoft Graph: 11,422, 45 MB of
// schemas), so the encoding appends the schemas in one pass each instead
// of going through encoding/json's reflection and its compaction of every
// json.RawMessage; a tool set keeps one copy of each distinct schema
// (Graph's 11,422 output schemas are 979 distinct ones); and the
// 2025-11-25 form is made from the same bytes rather than kept apart.

// A wire is an item's encoded form. Most items are one buffer, frame; a
// tool's is its frame with its two schemas set in, at inAt and outAt, so
// that the schemas can be shared with the set's other tools.
type wire struct {
	frame         []byte
	in, out       []byte
	inSum, outSum *[sha256.Size]byte // the schemas' digests (the fingerprint's), nil with no schema
	inAt, outAt   int
	legacy        legacyOut // how a 2025-11-25 session sees the outputSchema
}

// legacyOut is how a tool's outputSchema fits 2025-11-25, which requires
// "type": "object" at its root.
type legacyOut uint8

const (
	legacyKeep  legacyOut = iota // as it is (or there is none)
	legacyDrop                   // left out: its root cannot be an object
	legacyTyped                  // given "type": "object": a $ref to an object
)

// plainWire is an item encoded in one buffer.
func plainWire(b []byte) wire { return wire{frame: b, inAt: len(b), outAt: len(b)} }

// appendTo appends the item's form in era e.
func (w *wire) appendTo(dst []byte, e era) []byte {
	dst = append(dst, w.frame[:w.inAt]...)
	dst = append(dst, w.in...)
	switch {
	case e == legacyEra && w.legacy == legacyDrop:
		// frame[inAt:outAt] is the member's name: left out with it
	case e == legacyEra && w.legacy == legacyTyped:
		dst = append(dst, w.frame[w.inAt:w.outAt]...)
		dst = append(dst, `{"type":"object",`...)
		dst = append(dst, w.out[1:]...)
	default:
		dst = append(dst, w.frame[w.inAt:w.outAt]...)
		dst = append(dst, w.out...)
	}
	return append(dst, w.frame[w.outAt:]...)
}

// len is the length of the item's form in era e.
func (w *wire) len(e era) int {
	n := len(w.frame) + len(w.in) + len(w.out)
	switch {
	case e == legacyEra && w.legacy == legacyDrop:
		n -= w.outAt - w.inAt + len(w.out)
	case e == legacyEra && w.legacy == legacyTyped:
		n += len(`"type":"object",`)
	}
	return n
}

// writeTo writes what identifies the item's 2026-07-28 form to h (the
// fingerprint): its frame, where its schemas go, and their digests, each
// computed once for a schema the set's tools share (Graph's 11,422 tools
// would otherwise have some 50 MB of shared schemas hashed again).
func (w *wire) writeTo(h io.Writer) {
	var n [3 * 8]byte
	binary.BigEndian.PutUint64(n[0:], uint64(len(w.frame)))
	binary.BigEndian.PutUint64(n[8:], uint64(w.inAt))
	binary.BigEndian.PutUint64(n[16:], uint64(w.outAt))
	_, _ = h.Write(n[:])
	_, _ = h.Write(w.frame)
	for _, sum := range [2]*[sha256.Size]byte{w.inSum, w.outSum} {
		if sum == nil {
			_, _ = h.Write([]byte{0})
			continue
		}
		_, _ = h.Write([]byte{1})
		_, _ = h.Write(sum[:])
	}
}

// A schemaPool keeps one copy of each distinct schema of a tool set, with
// what is decided about it once; it is safe for concurrent use. A nil pool
// keeps every schema apart.
type schemaPool struct {
	mu      sync.Mutex
	seed    maphash.Seed
	byHash  map[uint64]*pooledSchema
	scratch sync.Pool // *[]byte, for compacting
}

// A pooledSchema is one distinct schema, compacted, and its digest.
type pooledSchema struct {
	b   []byte
	sum [sha256.Size]byte

	legacyOnce sync.Once
	legacy     legacyOut // as an outputSchema
}

func newSchemaPool() *schemaPool {
	return &schemaPool{seed: maphash.MakeSeed(), byHash: map[uint64]*pooledSchema{}}
}

// schema is raw checked and compacted, the pool's copy when it has one. A
// schema it has seen, written compactly (as generated schemas are), is
// neither compacted nor checked again: Graph's 11,422 tools have 979
// distinct output schemas. On a hash collision the newcomer keeps its own
// copy. A schema already compact is kept as it is, not copied (its bytes
// are never modified; generated schemas are compact: Graph's are 25 MB).
func (p *schemaPool) schema(raw json.RawMessage) (*pooledSchema, error) {
	if p == nil {
		b, err := compactSchema(raw)
		return newPooledSchema(b), err
	}
	h := maphash.Bytes(p.seed, raw)
	p.mu.Lock()
	have := p.byHash[h]
	p.mu.Unlock()
	if have != nil && bytes.Equal(have.b, raw) {
		return have, nil
	}
	b, err := p.compact(raw)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(b, raw) {
		h = maphash.Bytes(p.seed, b)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	have, ok := p.byHash[h]
	switch {
	case !ok:
		have = newPooledSchema(b)
		p.byHash[h] = have
	case !bytes.Equal(have.b, b):
		have = newPooledSchema(b)
	}
	return have, nil
}

func newPooledSchema(b []byte) *pooledSchema {
	return &pooledSchema{b: b, sum: sha256.Sum256(b)}
}

// compact is raw compacted: raw itself (capacity-bounded) when it is
// compact with little room past its end, else a copy of its size.
func (p *schemaPool) compact(raw json.RawMessage) ([]byte, error) {
	bp, _ := p.scratch.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer p.scratch.Put(bp)
	b, err := appendSchema((*bp)[:0], raw)
	*bp = b
	if err != nil {
		return nil, err
	}
	if bytes.Equal(b, raw) && cap(raw)-len(raw) <= len(raw)/8 {
		return raw[:len(raw):len(raw)], nil
	}
	return bytes.Clone(b)[:len(b):len(b)], nil
}

// legacyOut is how the schema, as an outputSchema, fits 2025-11-25
// (objectRootedSchema decides, once).
func (s *pooledSchema) legacyOut() legacyOut {
	s.legacyOnce.Do(func() {
		if fixed, ok := objectRootedSchema(s.b); !ok {
			s.legacy = legacyDrop
		} else if fixed != nil { // the root is an object with members (a $ref), and no "type"
			s.legacy = legacyTyped
		}
	})
	return s.legacy
}

// encodeToolWire encodes t with its members in encoding/json's order (name,
// title, description, icons, inputSchema, outputSchema, annotations,
// _meta), its schemas kept once in pool. The schemas are checked to be
// JSON and compacted, as encoding/json does with a json.RawMessage
// (duplicate names and invalid UTF-8 pass, as they do there; strings are
// not re-escaped). In the 2025-11-25 form an outputSchema that cannot be
// object-rooted is left out, and one whose $ref names an object gets
// "type": "object" (objectRootedSchema decides).
func encodeToolWire(t *Tool, pool *schemaPool) (wire, error) {
	// The small members first, so that the frame is sized once.
	var icons, annotations, meta []byte
	var err error
	if len(t.Icons) > 0 {
		if icons, err = marshalMember(`,"icons":`, t.Icons); err != nil {
			return wire{}, err
		}
	}
	if t.Annotations != nil {
		if annotations, err = marshalMember(`,"annotations":`, t.Annotations); err != nil {
			return wire{}, err
		}
	}
	if len(t.Meta) > 0 {
		if meta, err = marshalMember(`,"_meta":`, t.Meta); err != nil {
			return wire{}, err
		}
	}
	var w wire
	in, err := pool.schema(t.InputSchema)
	if err != nil {
		return wire{}, fmt.Errorf("inputSchema: %w", err)
	}
	w.in, w.inSum = in.b, &in.sum
	if len(t.OutputSchema) > 0 {
		out, err := pool.schema(t.OutputSchema)
		if err != nil {
			return wire{}, fmt.Errorf("outputSchema: %w", err)
		}
		w.out, w.outSum, w.legacy = out.b, &out.sum, out.legacyOut()
	}
	size := 80 + len(t.Name) + len(t.Title) + len(t.Description) + len(icons) + len(annotations) + len(meta)
	b := make([]byte, 0, size+size/16)
	b = append(b, `{"name":`...)
	b = appendJSONString(b, t.Name)
	if t.Title != "" {
		b = append(b, `,"title":`...)
		b = appendJSONString(b, t.Title)
	}
	if t.Description != "" {
		b = append(b, `,"description":`...)
		b = appendJSONString(b, t.Description)
	}
	b = append(b, icons...)
	b = append(b, `,"inputSchema":`...)
	w.inAt = len(b)
	if w.out != nil {
		b = append(b, `,"outputSchema":`...)
	}
	w.outAt = len(b)
	b = append(b, annotations...)
	b = append(b, meta...)
	b = append(b, '}')
	if cap(b)-len(b) > len(b)/8 { // escapes outgrew the estimate: no slack kept
		b = append(make([]byte, 0, len(b)), b...)
	}
	w.frame = b
	return w, nil
}

// compactSchema is raw compacted in a buffer of its size (capacity-bounded,
// so that an append copies).
func compactSchema(raw json.RawMessage) ([]byte, error) {
	b, err := appendSchema(make([]byte, 0, len(raw)), raw)
	if err != nil {
		return nil, err
	}
	if cap(b)-len(b) > len(b)/8 {
		b = append(make([]byte, 0, len(b)), b...)
	}
	return b[:len(b):len(b)], nil
}

// appendSchema appends a raw schema, compacted; it must be one JSON value.
func appendSchema(b []byte, raw json.RawMessage) ([]byte, error) {
	start := len(b)
	b, err := jsontext.AppendFormat(b, raw,
		jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true), jsontext.PreserveRawStrings(true))
	if err != nil {
		return b[:start], err
	}
	return b, nil
}

// appendJSONString appends s quoted; each byte of invalid UTF-8 becomes
// U+FFFD, as encoding/json has it.
func appendJSONString(b []byte, s string) []byte {
	start := len(b)
	out, err := jsontext.AppendQuote(b, s)
	if err != nil {
		out, _ = jsontext.AppendQuote(out[:start], string([]rune(s))) // []rune: U+FFFD for each bad byte
	}
	return out
}

// marshalMember is name and v as encoding/json encodes it (for the small
// members: icons, annotations, _meta).
func marshalMember(name string, v any) ([]byte, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Trim(name, `,":`), err)
	}
	return append([]byte(name), enc...), nil
}
