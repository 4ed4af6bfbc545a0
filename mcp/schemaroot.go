package mcp

import (
	"bytes"
	"io"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
)

// rootKeywords reads the raw values of a schema's root "type" and "$ref"
// (nil when absent) without decoding anything else, for the checks a tool
// set runs on every tool when it is built. ok is false for anything but a
// well-formed JSON object with unique member names at its root: the
// callers then take their full decoding path, whose verdicts and messages
// stand. Names used twice deeper down do not matter to the root's
// keywords, so they are not looked for (tracking every object's names
// was a third of the time).
func rootKeywords(schema []byte) (typ, ref []byte, ok bool) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(schema), jsontext.AllowDuplicateNames(true)) // parsed in place, not copied
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, nil, false
	}
	var names []string
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, nil, false
		}
		name := tok.String()
		if slices.Contains(names, name) {
			return nil, nil, false
		}
		names = append(names, name)
		// ReadValue checks a nested value in one pass; SkipValue would
		// read it token by token, several times slower.
		v, err := dec.ReadValue()
		if err != nil {
			return nil, nil, false
		}
		switch name {
		case "type":
			typ = bytes.Clone(v)
		case "$ref":
			ref = bytes.Clone(v)
		}
	}
	if _, err := dec.ReadToken(); err != nil { // the closing brace
		return nil, nil, false
	}
	if _, err := dec.ReadToken(); err != io.EOF { // nothing after it
		return nil, nil, false
	}
	return typ, ref, true
}
