package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// decodeTree decodes a JSON document into the generic tree the builder
// reads: what encoding/json gives with UseNumber (map[string]any, []any,
// string, json.Number, bool, nil), with its semantics (the last of two
// members of one name wins, invalid UTF-8 becomes U+FFFD), in one pass:
// 1.6–1.9× faster with 45 % fewer bytes allocated (BenchmarkDecodeTree on
// GitHub's and Microsoft Graph's documents). Member names and short strings are interned
// (a document repeats "description" and "string" tens of thousands of
// times); ctx is looked at every ctxEvery values, so that a stopped
// reload stops decoding.
func decodeTree(ctx context.Context, data []byte) (any, error) {
	v, _, err := decodeTreeFrom(ctx, bytes.NewBuffer(data)) // a *bytes.Buffer is parsed in place
	return v, err
}

// decodeTreeFrom is decodeTree reading r as it goes, so that a document
// read from a file is never held whole beside its tree (Microsoft Graph's
// is 19 MiB, at the moment the tree is largest). It also reports whether
// the document may hold a local reference into its paths (mayReferToPaths
// of its bytes: every '#' of a JSON document is in one of its strings,
// which it checks one by one).
func decodeTreeFrom(ctx context.Context, r io.Reader) (tree any, pathRefs bool, err error) {
	t, v, err := decodeRoot(ctx, r, false)
	if err != nil {
		return nil, false, err
	}
	return v, t.pathRefs, nil
}

// A rawPathItem is a path item of a document's root "paths" object left
// undecoded (checked, and copied out of the input).
type rawPathItem []byte

// decodeDocumentTree is decodeTreeFrom leaving the path items of the root
// "paths" object as rawPathItem values, unless a string may refer into
// the paths: the builder then decodes each when it builds it and drops it
// once built, so that the document's tree is never whole (Microsoft
// Graph's paths are 85 % of its bytes, and their tree some 80 MB). The
// decoder returned decodes them (pathItem), with the same interned
// strings.
func decodeDocumentTree(ctx context.Context, r io.Reader) (tree any, t *treeDecoder, pathRefs bool, err error) {
	t, v, err := decodeRoot(ctx, r, true)
	if err != nil {
		return nil, nil, false, err
	}
	if root, ok := v.(map[string]any); ok && t.pathRefs {
		if paths, ok := root["paths"].(map[string]any); ok {
			for k, item := range paths { // a reference into the paths needs them decoded
				if raw, ok := item.(rawPathItem); ok {
					if paths[k], err = t.pathItem(raw); err != nil {
						return nil, nil, false, err
					}
				}
			}
		}
	}
	return v, t, t.pathRefs, nil
}

// decodeRoot decodes one document from r, with the root's path items left
// raw when rawPaths is set.
func decodeRoot(ctx context.Context, r io.Reader, rawPaths bool) (*treeDecoder, any, error) {
	t := &treeDecoder{ctx: ctx, interned: map[string]string{}}
	t.dec.Reset(r, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var v any
	var err error
	if rawPaths && t.dec.PeekKind() == '{' {
		v, err = t.object(rootMembers)
	} else {
		v, err = t.value()
	}
	if err != nil {
		return nil, nil, err
	}
	if _, err := t.dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, nil, &jsontext.SyntacticError{ByteOffset: t.dec.InputOffset(), Err: errors.New("data after the end of the document")}
	}
	return t, v, nil
}

// pathItem decodes a path item left raw.
func (t *treeDecoder) pathItem(raw rawPathItem) (any, error) {
	t.dec.Reset(bytes.NewBuffer(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	return t.value()
}

type treeDecoder struct {
	dec      jsontext.Decoder
	ctx      context.Context
	values   int
	interned map[string]string
	pathRefs bool // mayReferToPaths of a string read so far
}

// Strings up to internMax bytes are interned, in a table of at most
// internCap of them (a bound, not a cache: past it strings are copied).
const (
	internMax = 32
	internCap = 1 << 16
	ctxEvery  = 1 << 14
)

func (t *treeDecoder) value() (any, error) {
	if t.values++; t.values%ctxEvery == 0 {
		if err := t.ctx.Err(); err != nil {
			return nil, err
		}
	}
	switch t.dec.PeekKind() {
	case '{':
		return t.object(decodedMembers)
	case '[':
		if _, err := t.dec.ReadToken(); err != nil {
			return nil, err
		}
		a := []any{}
		for t.dec.PeekKind() != ']' {
			v, err := t.value()
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := t.dec.ReadToken()
		return a, err
	}
	raw, err := t.dec.ReadValue()
	if err != nil {
		return nil, err
	}
	switch raw.Kind() {
	case '"':
		return t.str(raw)
	case '0':
		return json.Number(raw), nil
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case 'n':
		return nil, nil
	}
	return nil, fmt.Errorf("openapi: unexpected JSON value %.20q", raw)
}

// members says how object decodes its members' values.
type members uint8

const (
	decodedMembers members = iota
	rootMembers            // decoded, but the "paths" object's left raw
	rawMembers             // left raw (rawPathItem)
)

// object decodes an object, its members' values as how says.
func (t *treeDecoder) object(how members) (any, error) {
	if _, err := t.dec.ReadToken(); err != nil {
		return nil, err
	}
	m := map[string]any{}
	for t.dec.PeekKind() != '}' {
		raw, err := t.dec.ReadValue()
		if err != nil {
			return nil, err
		}
		name, err := t.str(raw)
		if err != nil {
			return nil, err
		}
		var v any
		switch {
		case how == rawMembers:
			v, err = t.rawValue()
		case how == rootMembers && name == "paths" && t.dec.PeekKind() == '{':
			v, err = t.object(rawMembers)
		default:
			v, err = t.value()
		}
		if err != nil {
			return nil, err
		}
		m[name] = v
	}
	_, err := t.dec.ReadToken()
	return m, err
}

// rawValue reads a value left raw: checked, and copied out of the input.
func (t *treeDecoder) rawValue() (rawPathItem, error) {
	raw, err := t.dec.ReadValue()
	if err != nil {
		return nil, err
	}
	if !t.pathRefs {
		t.pathRefs = mayReferToPaths(raw)
	}
	return rawPathItem(bytes.Clone(raw)), nil
}

// str unquotes a JSON string the decoder has validated: in place when it
// has no escapes and is valid UTF-8 (almost every string of a document),
// through encoding/json otherwise, for its exact semantics.
func (t *treeDecoder) str(raw jsontext.Value) (string, error) {
	s := raw[1 : len(raw)-1]
	escaped := bytes.IndexByte(s, '\\') >= 0
	if !t.pathRefs && (escaped || bytes.IndexByte(s, '#') >= 0) {
		t.pathRefs = mayReferToPaths(raw)
	}
	if escaped || !utf8.Valid(s) {
		var out string
		err := json.Unmarshal(raw, &out)
		return out, err
	}
	if len(s) > internMax {
		return string(s), nil
	}
	if v, ok := t.interned[string(s)]; ok {
		return v, nil
	}
	v := string(s)
	if len(t.interned) < internCap {
		t.interned[v] = v
	}
	return v, nil
}
