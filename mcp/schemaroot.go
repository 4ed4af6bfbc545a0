package mcp

import (
	"bytes"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// rootKeywords reads the raw values of a schema's root "type" and "$ref"
// (nil when absent) without decoding anything else, for the checks a tool
// set runs on every tool when it is built. ok is false for anything but a
// well-formed JSON object with unique member names: the callers then take
// their full decoding path, whose verdicts and messages stand.
func rootKeywords(schema []byte) (typ, ref []byte, ok bool) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(schema)) // parsed in place, not copied
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, nil, false
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, nil, false
		}
		switch name := tok.String(); name {
		case "type", "$ref":
			v, err := dec.ReadValue()
			if err != nil {
				return nil, nil, false
			}
			if name == "type" {
				typ = bytes.Clone(v)
			} else {
				ref = bytes.Clone(v)
			}
		default:
			// ReadValue checks a nested value in one pass; SkipValue
			// would read it token by token, several times slower.
			if _, err := dec.ReadValue(); err != nil {
				return nil, nil, false
			}
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
