package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// This file encodes a tool's wire form, once, when the tool is registered:
// a large API registers thousands (Microsoft Graph: 11,422, 60 MB of
// schemas), so the encoding appends the schemas in one pass each instead
// of going through encoding/json's reflection and its compaction of every
// json.RawMessage, and the 2025-11-25 form is a splice of the same bytes
// rather than a second copy.

// A splice derives an item's 2025-11-25 wire form from its 2026-07-28 one:
// wire[:at] + insert + wire[skip:]. The zero splice means the two forms are
// the same.
type splice struct {
	differs  bool
	at, skip int
	insert   string
}

// appendTo appends wire to dst as s changes it.
func (s splice) appendTo(dst, wire []byte) []byte {
	if !s.differs {
		return append(dst, wire...)
	}
	dst = append(dst, wire[:s.at]...)
	dst = append(dst, s.insert...)
	return append(dst, wire[s.skip:]...)
}

// len is the length of wire as s changes it.
func (s splice) len(wire []byte) int {
	if !s.differs {
		return len(wire)
	}
	return len(wire) - (s.skip - s.at) + len(s.insert)
}

// encodeToolWire encodes t with its members in encoding/json's order (name,
// title, description, icons, inputSchema, outputSchema, annotations,
// _meta). The schemas are checked to be JSON and compacted, as
// encoding/json does with a json.RawMessage (duplicate names and invalid
// UTF-8 pass, as they do there; strings are not re-escaped). The splice
// gives the 2025-11-25 form: an outputSchema that cannot be object-rooted
// is left out, and one whose $ref names an object gets "type": "object"
// (see legacyOutput).
func encodeToolWire(t *Tool) (toolWire, error) {
	// The small members first, so that the buffer is sized once.
	var icons, annotations, meta []byte
	var err error
	if len(t.Icons) > 0 {
		if icons, err = marshalMember(`,"icons":`, t.Icons); err != nil {
			return toolWire{}, err
		}
	}
	if t.Annotations != nil {
		if annotations, err = marshalMember(`,"annotations":`, t.Annotations); err != nil {
			return toolWire{}, err
		}
	}
	if len(t.Meta) > 0 {
		if meta, err = marshalMember(`,"_meta":`, t.Meta); err != nil {
			return toolWire{}, err
		}
	}
	size := 64 + len(t.Name) + len(t.Title) + len(t.Description) + len(t.InputSchema) + len(t.OutputSchema) +
		len(icons) + len(annotations) + len(meta)
	b := make([]byte, 0, size+size/64)
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
	var w toolWire
	w.in[0] = len(b)
	if b, err = appendSchema(b, t.InputSchema); err != nil {
		return toolWire{}, fmt.Errorf("inputSchema: %w", err)
	}
	w.in[1] = len(b)
	if len(t.OutputSchema) > 0 {
		member := len(b)
		b = append(b, `,"outputSchema":`...)
		w.out[0] = len(b)
		if b, err = appendSchema(b, t.OutputSchema); err != nil {
			return toolWire{}, fmt.Errorf("outputSchema: %w", err)
		}
		w.out[1] = len(b)
		w.legacy = legacyOutput(b, member, w.out[0], w.out[1])
	}
	b = append(b, annotations...)
	b = append(b, meta...)
	b = append(b, '}')
	if cap(b)-len(b) > len(b)/16 { // escapes outgrew the estimate: no slack kept
		b = append(make([]byte, 0, len(b)), b...)
	}
	w.wire = b
	return w, nil
}

// A toolWire is a tool's encoded form, where its schemas are in it, and the
// splice that gives its 2025-11-25 form.
type toolWire struct {
	wire    []byte
	in, out [2]int // the schemas' values: wire[in[0]:in[1]]; out is zero without one
	legacy  splice
}

// schemas are the tool's schemas as wire holds them, capacity-bounded so
// that an append copies.
func (w *toolWire) schemas() (in, out json.RawMessage) {
	in = w.wire[w.in[0]:w.in[1]:w.in[1]]
	if w.out[1] > 0 {
		out = w.wire[w.out[0]:w.out[1]:w.out[1]]
	}
	return in, out
}

// legacyOutput is the splice that makes the outputSchema member
// wire[member:end] (its value at wire[value:end]) fit 2025-11-25, which
// requires "type": "object" at the schema's root: none when it has it, the
// type inserted when the root is a $ref to an object, else the member left
// out.
func legacyOutput(wire []byte, member, value, end int) splice {
	fixed, ok := objectRootedSchema(wire[value:end])
	switch {
	case !ok:
		return splice{differs: true, at: member, skip: end}
	case fixed != nil:
		// The root is an object with members (a $ref), and no "type".
		return splice{differs: true, at: value + 1, skip: value + 1, insert: `"type":"object",`}
	}
	return splice{}
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
