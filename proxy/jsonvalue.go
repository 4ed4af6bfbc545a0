package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/internal/jsonx"
)

// decodeValue decodes one JSON document into the values jsonschema
// validates and the request builder reads: map[string]any, []any, string,
// bool, nil and json.Number. A json.Number holds the canonical form of the
// literal (jsonx: 28.0 and 2.8e1 are 28, -0 is 0, digits kept exact), the
// form the MRTR arguments hash uses and the only one the proxy forwards, so
// a request is sent exactly as it was confirmed. It accepts what
// jsonschema.UnmarshalJSON accepts (invalid UTF-8 in strings replaced by
// U+FFFD) in one pass without reflection, except a member name used twice
// in one object (refused, see package jsonx) and numbers beyond the limits
// of [jsonx.Number.Check], refused with a *numberError before anything
// spends more than linear time on them (math/big, which jsonschema uses for
// every numeric keyword, is quadratic in the digits).
func (d *valueDecoder) decodeValue(b []byte) (any, error) {
	d.Reset(b)
	defer d.Release()
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	if !d.AtEOF() {
		return nil, errors.New("invalid data after the top-level value")
	}
	return v, nil
}

// valueDecoder is a reusable decodeValue state; valueDecoders pools them
// (a Proxy owns one pool).
type valueDecoder struct {
	jsonx.Reader
	num   []byte     // scratch for canonical numbers
	names paramNames // known member names, whose strings are reused
}

type valueDecoders struct{ pool sync.Pool }

// decode decodes b; a member name found in names (an endpoint's
// arguments) reuses the argument's name instead of a new string.
func (p *valueDecoders) decode(b []byte, names paramNames) (any, error) {
	d, _ := p.pool.Get().(*valueDecoder)
	if d == nil {
		d = new(valueDecoder)
	}
	d.names = names
	defer func() {
		d.names = nil
		p.pool.Put(d)
	}()
	return d.decodeValue(b)
}

func (d *valueDecoder) value() (any, error) {
	if d.Dec.PeekKind() == '0' {
		return d.number()
	}
	tok, err := d.Dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		m := map[string]any{}
		for d.Dec.PeekKind() != '}' {
			name, err := d.name()
			if err != nil {
				return nil, err
			}
			v, err := d.value()
			if err != nil {
				return nil, inMember(err, name)
			}
			m[name] = v
		}
		_, err = d.Dec.ReadToken()
		return m, err
	case '[':
		a := []any{}
		for d.Dec.PeekKind() != ']' {
			v, err := d.value()
			if err != nil {
				return nil, inMember(err, strconv.Itoa(len(a)))
			}
			a = append(a, v)
		}
		_, err = d.Dec.ReadToken()
		return a, err
	case '"':
		return tok.String(), nil
	case 't', 'f':
		return tok.Bool(), nil
	case 'n':
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok.Kind())
}

// number reads a number literal, refuses one beyond the limits and
// returns its canonical form.
func (d *valueDecoder) number() (any, error) {
	lit, err := d.Dec.ReadValue()
	if err != nil {
		return nil, err
	}
	x, err := jsonx.ParseNumber(lit)
	if err == nil {
		err = x.Check()
	}
	if err != nil {
		return nil, &numberError{err: err}
	}
	if x.IsCanonical() {
		if i, ok := x.Int64(); ok && 0 <= i && i < int64(len(smallNumbers)) {
			return smallNumbers[i], nil
		}
		return json.Number(lit), nil
	}
	d.num = x.Append(d.num[:0])
	return json.Number(d.num), nil
}

// smallNumbers holds 0..999 as decoded values (json.Number in an any),
// built once: ids, counts and limits cost no allocation. Read-only.
var smallNumbers = func() (t [1000]any) {
	for i := range t {
		t[i] = json.Number(strconv.Itoa(i))
	}
	return t
}()

// name reads an object member name. The name of a known argument reuses
// its string; another one is decoded like encoding/json does (invalid
// UTF-8 replaced by U+FFFD).
func (d *valueDecoder) name() (string, error) {
	raw, err := d.Dec.ReadValue()
	if err != nil {
		return "", err
	}
	if inner := raw[1 : len(raw)-1]; bytes.IndexByte(inner, '\\') < 0 {
		if pa := d.names.find(inner); pa != nil {
			return pa.Name, nil
		}
		if utf8.Valid(inner) {
			return string(inner), nil
		}
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	return s, nil
}

// numberError is a number refused by decodeValue, at the JSON pointer
// where it was found.
type numberError struct {
	path []string // reference tokens, innermost first
	err  error
}

func (e *numberError) Error() string {
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(escapePointer(e.path[i : i+1])[0])
	}
	if b.Len() == 0 {
		b.WriteByte('/')
	}
	b.WriteString(": ")
	b.WriteString(e.err.Error())
	return b.String()
}

// inMember adds the member name (or array index) an error occurred in to
// a numberError on its way up; other errors (syntax) pass unchanged.
func inMember(err error, name string) error {
	if ne, ok := err.(*numberError); ok {
		ne.path = append(ne.path, name)
	}
	return err
}
