package openapi

import (
	"bytes"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
)

// appendTree appends v, a JSON tree as the schema converter builds it,
// exactly as marshalNoEscape encodes it (encoding/json without HTML
// escaping: map keys sorted, nil maps and slices as null), without
// reflection: objects, arrays, strings, booleans and the converter's own
// encodings are written here and any other value (numbers,
// json.RawMessage, the rare typed value) by marshalNoEscape itself.
// Generation encodes every schema of a document this way, every component
// schema and every tool.
func appendTree(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		if v {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case string:
		return appendTreeString(b, v), nil
	case map[string]any:
		if v == nil {
			return append(b, "null"...), nil
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		var err error
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendTreeString(b, k)
			b = append(b, ':')
			if b, err = appendTree(b, v[k]); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case []any:
		return appendList(b, v, appendTree)
	case []string:
		return appendList(b, v, func(b []byte, s string) ([]byte, error) { return appendTreeString(b, s), nil })
	case encoded:
		return append(b, v...), nil
	}
	enc, err := marshalNoEscape(v)
	return append(b, enc...), err
}

// appendList appends a JSON array of items, each by each (null for a nil
// slice, as encoding/json has it).
func appendList[T any](b []byte, items []T, each func([]byte, T) ([]byte, error)) ([]byte, error) {
	if items == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	var err error
	for i, e := range items {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = each(b, e); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// appendTreeString appends s quoted as encoding/json quotes it without HTML
// escaping. jsontext does the same but for two cases, left to encoding/json:
// invalid UTF-8 (each bad byte becomes \ufffd there) and U+2028 and U+2029
// (escaped there, for JavaScript).
func appendTreeString(b []byte, s string) []byte {
	start := len(b)
	out, err := jsontext.AppendQuote(b, s)
	if err == nil && !hasLineSeparator(out[start:]) {
		return out
	}
	enc, _ := marshalNoEscape(s) // a string always encodes
	return append(out[:start], enc...)
}

// hasLineSeparator reports whether b holds U+2028 or U+2029 (E2 80 A8,
// E2 80 A9 in UTF-8).
func hasLineSeparator(b []byte) bool {
	for {
		i := bytes.IndexByte(b, 0xe2)
		if i < 0 || i+2 >= len(b) {
			return false
		}
		if b[i+1] == 0x80 && (b[i+2] == 0xa8 || b[i+2] == 0xa9) {
			return true
		}
		b = b[i+1:]
	}
}

// encoded is a tree the converter encoded itself (appendTree): compact,
// valid JSON, written as is. encoding/json, which would compact it again,
// gives the same bytes (MarshalJSON).
type encoded []byte

// MarshalJSON is e (null when nil, as for a json.RawMessage).
func (e encoded) MarshalJSON() ([]byte, error) {
	if e == nil {
		return []byte("null"), nil
	}
	return e, nil
}
