// Package jsonx reads JSON in one pass, without reflection, straight from a
// byte slice: a thin layer over go-json-experiment's jsontext shared by the
// MCP codec, the proxy's argument decoder and the load harness. It also
// owns the one canonical form of a JSON number ([Number], number.go), which
// the MRTR arguments hash and the proxy's forwarding share, and the limits
// beyond which a number literal is refused.
//
// Invariants: a Reader never copies its input, so every value it returns
// aliases the slice it was reset to and stays valid as long as that slice
// does. A Reader refuses an object with two members of the same name,
// anywhere in the document and however the names are escaped (RFC 7493
// I-JSON; the request smuggling split where one reader takes the first
// "method" and another the last): the error matches [ErrDuplicateName] and
// [DuplicateName] tells where. Invalid UTF-8 inside strings is tolerated,
// as with encoding/json.
package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// Reader reads one JSON document. The zero value is ready for Reset; a
// Reader is not safe for concurrent use (pool them).
type Reader struct {
	buf bytes.Buffer
	// Dec is the underlying decoder, for token-level reading.
	Dec jsontext.Decoder
}

// Reset points r at b, without copying it.
func (r *Reader) Reset(b []byte) {
	r.buf = *bytes.NewBuffer(b) // jsontext reads a bytes.Buffer's bytes in place
	r.Dec.Reset(&r.buf, jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(true))
}

// ErrDuplicateName is matched (errors.Is) by the error of a read that met
// an object member name already used in the same object.
var ErrDuplicateName = jsontext.ErrDuplicateName

// DuplicateName reports whether err is a duplicate member name and, if so,
// the JSON Pointer (RFC 6901) of the second occurrence, relative to the
// document the Reader was reset to (for example "/params/arguments/id").
func DuplicateName(err error) (pointer string, ok bool) {
	var se *jsontext.SyntacticError
	if !errors.Is(err, jsontext.ErrDuplicateName) || !errors.As(err, &se) {
		return "", false
	}
	return string(se.JSONPointer), true
}

// Release drops r's reference to its input, before r is pooled.
func (r *Reader) Release() {
	r.buf = bytes.Buffer{}
	r.Dec.Reset(&r.buf)
}

// OpenObject reads the '{' that starts an object.
func (r *Reader) OpenObject() bool {
	tok, err := r.Dec.ReadToken()
	return err == nil && tok.Kind() == '{'
}

// Name reads the next object member name, leaving r at its value. ok is
// false at the end of the object (the '}' is consumed); err is a syntax
// error.
func (r *Reader) Name() (name jsontext.Value, ok bool, err error) {
	if r.Dec.PeekKind() == '}' {
		_, err = r.Dec.ReadToken()
		return nil, false, err
	}
	if name, err = r.Dec.ReadValue(); err != nil {
		return nil, false, err
	}
	return name, true, nil
}

// Member reads the next object member name and value; see Name.
func (r *Reader) Member() (name, value jsontext.Value, ok bool, err error) {
	if name, ok, err = r.Name(); !ok || err != nil {
		return nil, nil, ok, err
	}
	if value, err = r.Dec.ReadValue(); err != nil {
		return nil, nil, false, err
	}
	return name, value, true, nil
}

// AtEOF reports whether nothing but whitespace follows the document.
func (r *Reader) AtEOF() bool {
	_, err := r.Dec.ReadToken()
	return err == io.EOF
}

// NameIs reports whether the quoted member name is want. A name written
// with escapes is unquoted the slow way.
func NameIs(quoted []byte, want string) bool {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return len(quoted) == len(want)+2 && string(quoted[1:len(quoted)-1]) == want
	}
	var s string
	return json.Unmarshal(quoted, &s) == nil && s == want
}

// Unquote returns the string a valid JSON string literal denotes.
func Unquote(v []byte) string {
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	var s string
	_ = json.Unmarshal(v, &s) // v was validated by the Reader
	return s
}
