package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mcpgate/mcpgate/internal/jsonx"
)

// decodeValue decodes one JSON document into the values jsonschema
// validates and the request builder reads: map[string]any, []any, string,
// bool, nil and json.Number (numbers keep their literal). It accepts what
// jsonschema.UnmarshalJSON accepts (invalid UTF-8 in strings replaced by
// U+FFFD), except a member name used twice in one object (refused, see
// package jsonx), in one pass without reflection.
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
type valueDecoder struct{ jsonx.Reader }

type valueDecoders struct{ pool sync.Pool }

func (p *valueDecoders) decode(b []byte) (any, error) {
	d, _ := p.pool.Get().(*valueDecoder)
	if d == nil {
		d = new(valueDecoder)
	}
	defer p.pool.Put(d)
	return d.decodeValue(b)
}

func (d *valueDecoder) value() (any, error) {
	tok, err := d.Dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		m := map[string]any{}
		for d.Dec.PeekKind() != '}' {
			tok, err := d.Dec.ReadToken()
			if err != nil {
				return nil, err
			}
			name := tok.String() // before the next read voids tok
			v, err := d.value()
			if err != nil {
				return nil, err
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
				return nil, err
			}
			a = append(a, v)
		}
		_, err = d.Dec.ReadToken()
		return a, err
	case '"':
		return tok.String(), nil
	case '0':
		return json.Number(tok.String()), nil
	case 't', 'f':
		return tok.Bool(), nil
	case 'n':
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok.Kind())
}
