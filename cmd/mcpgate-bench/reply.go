package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// replyScanner reads JSON-RPC replies in one pass, without reflection and
// without copying the result. On a small machine the harness shares the
// cores with the servers it measures, so every microsecond it spends per
// request is taken from them; a scanner belongs to one worker and is reused.
type replyScanner struct {
	buf   bytes.Buffer
	dec   jsontext.Decoder
	idb   [24]byte
	field []byte // the member member() found
}

// reply is what the harness needs from one JSON-RPC message.
type reply struct {
	// field is the raw value of the result member asked for (nil when the
	// result has no such member); it stays valid until the next scan.
	field []byte
	kind  errKind
	// ours is false for a notification or a server request (a message with
	// a method), which the caller skips.
	ours bool
	err  error
}

// scan decodes msg, the reply to request id, and returns result[field].
// A response for another id, an error response, a response without a result
// and malformed JSON are classified as failures with an explanation.
func (s *replyScanner) scan(msg []byte, id int64, field string) reply {
	s.buf.Reset()
	s.buf.Write(msg)
	s.dec.Reset(&s.buf, jsontext.AllowDuplicateNames(true)) // no name tracking: the harness only picks members
	r, err := s.object(id, field)
	if err != nil {
		return reply{kind: errProtocol, ours: true, err: fmt.Errorf("reply is not JSON-RPC: %w", err)}
	}
	return r
}

func (s *replyScanner) object(id int64, field string) (reply, error) {
	d := &s.dec
	if t, err := d.ReadToken(); err != nil || t.Kind() != '{' {
		return reply{}, errors.Join(errors.New("not a JSON object"), err)
	}
	var (
		gotID, errObj []byte
		method        bool
		result        bool
		out           reply
	)
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return reply{}, err
		}
		switch {
		case nameIs(name, "id"):
			v, err := d.ReadValue()
			if err != nil {
				return reply{}, err
			}
			gotID = append(s.idb[:0], v...)
		case nameIs(name, "method"):
			v, err := d.ReadValue()
			if err != nil {
				return reply{}, err
			}
			method = v.Kind() == '"' && len(v) > 2
		case nameIs(name, "result"):
			if d.PeekKind() != '{' {
				v, err := d.ReadValue()
				if err != nil {
					return reply{}, err
				}
				result = v.Kind() != 'n' // null is no result
				continue
			}
			result = true
			if out.field, err = s.member(field); err != nil {
				return reply{}, err
			}
		case nameIs(name, "error"):
			v, err := d.ReadValue()
			if err != nil {
				return reply{}, err
			}
			errObj = bytes.Clone(v) // error path only
		default:
			if err := d.SkipValue(); err != nil {
				return reply{}, err
			}
		}
	}
	if _, err := d.ReadToken(); err != nil { // '}'
		return reply{}, err
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return reply{}, errors.New("data after the message")
	}
	if method {
		return reply{kind: okKind}, nil
	}
	out.ours = true
	var want [20]byte
	if !bytes.Equal(gotID, strconv.AppendInt(want[:0], id, 10)) {
		return reply{kind: errProtocol, ours: true, err: fmt.Errorf("reply id %s, want %d", gotID, id)}, nil
	}
	if errObj != nil {
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(errObj, &e)
		return reply{kind: errJSONRPC, ours: true, err: fmt.Errorf("JSON-RPC error %d: %s", e.Code, e.Message)}, nil
	}
	if !result {
		return reply{kind: errProtocol, ours: true, err: errors.New("response has neither result nor error")}, nil
	}
	out.kind = okKind
	return out, nil
}

// member reads the result object and returns the raw value of its member
// named field, skipping the others.
func (s *replyScanner) member(field string) ([]byte, error) {
	d := &s.dec
	if _, err := d.ReadToken(); err != nil { // '{'
		return nil, err
	}
	var found []byte
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		if found == nil && nameIs(name, field) {
			v, err := d.ReadValue()
			if err != nil {
				return nil, err
			}
			s.field = append(s.field[:0], v...)
			found = s.field
			continue
		}
		if err := d.SkipValue(); err != nil {
			return nil, err
		}
	}
	_, err := d.ReadToken() // '}'
	return found, err
}

// nameIs reports whether the quoted object member name is want. Names with
// escapes are unquoted the slow way: no server writes "id" as "\u0069d", but
// it is valid JSON.
func nameIs(quoted jsontext.Value, want string) bool {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return len(quoted) == len(want)+2 && string(quoted[1:len(quoted)-1]) == want
	}
	var s string
	return json.Unmarshal(quoted, &s) == nil && s == want
}
