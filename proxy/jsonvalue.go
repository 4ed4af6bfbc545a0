package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// decodeValue decodes one JSON document into the values jsonschema
// validates and the request builder reads: map[string]any, []any, string,
// bool, nil and json.Number (numbers keep their literal). It accepts what
// jsonschema.UnmarshalJSON accepts (duplicate names, last one wins; invalid
// UTF-8 in strings replaced by U+FFFD) in one pass without reflection.
func (d *valueDecoder) decodeValue(b []byte) (any, error) {
	d.buf = *bytes.NewBuffer(b)
	d.dec.Reset(&d.buf, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	defer func() { // drop the reference to b
		d.buf = bytes.Buffer{}
		d.dec.Reset(&d.buf)
	}()
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		return nil, errors.New("invalid data after the top-level value")
	}
	return v, nil
}

// valueDecoder is a reusable decodeValue state; valueDecoders pools them
// (a Proxy owns one pool).
type valueDecoder struct {
	buf bytes.Buffer
	dec jsontext.Decoder
}

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
	tok, err := d.dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		m := map[string]any{}
		for d.dec.PeekKind() != '}' {
			tok, err := d.dec.ReadToken()
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
		_, err = d.dec.ReadToken()
		return m, err
	case '[':
		a := []any{}
		for d.dec.PeekKind() != ']' {
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err = d.dec.ReadToken()
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
