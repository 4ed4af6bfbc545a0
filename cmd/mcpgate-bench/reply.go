package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/mcpgate/mcpgate/internal/jsonx"
)

// replyScanner reads JSON-RPC replies in one pass, without reflection and
// without copying the result. On a small machine the harness shares the
// cores with the servers it measures, so every microsecond it spends per
// request is taken from them; a scanner belongs to one worker and is reused.
type replyScanner struct {
	r     jsonx.Reader
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
	s.r.Reset(msg)
	defer s.r.Release()
	r, err := s.object(id, field)
	if err != nil {
		return reply{kind: errProtocol, ours: true, err: fmt.Errorf("reply is not JSON-RPC: %w", err)}
	}
	return r
}

func (s *replyScanner) object(id int64, field string) (reply, error) {
	r, d := &s.r, &s.r.Dec
	if !r.OpenObject() {
		return reply{}, errors.New("not a JSON object")
	}
	var (
		gotID, errObj []byte
		method        bool
		result        bool
		out           reply
	)
	for {
		name, ok, err := r.Name()
		if err != nil {
			return reply{}, err
		}
		if !ok {
			break
		}
		if jsonx.NameIs(name, "result") && d.PeekKind() == '{' {
			result = true
			if out.field, err = s.member(field); err != nil {
				return reply{}, err
			}
			continue
		}
		v, err := d.ReadValue()
		if err != nil {
			return reply{}, err
		}
		switch {
		case jsonx.NameIs(name, "id"):
			gotID = append(s.idb[:0], v...)
		case jsonx.NameIs(name, "method"):
			method = v.Kind() == '"' && len(v) > 2
		case jsonx.NameIs(name, "result"):
			result = v.Kind() != 'n' // null is no result
		case jsonx.NameIs(name, "error"):
			errObj = bytes.Clone(v) // error path only
		}
	}
	if !r.AtEOF() {
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
// named field (copied), skipping the others.
func (s *replyScanner) member(field string) ([]byte, error) {
	r := &s.r
	if !r.OpenObject() {
		return nil, errors.New("result is not an object")
	}
	var found []byte
	for {
		name, ok, err := r.Name()
		if err != nil || !ok {
			return found, err
		}
		if found != nil || !jsonx.NameIs(name, field) {
			if err := r.Dec.SkipValue(); err != nil {
				return nil, err
			}
			continue
		}
		v, err := r.Dec.ReadValue()
		if err != nil {
			return nil, err
		}
		s.field = append(s.field[:0], v...)
		found = s.field
	}
}
