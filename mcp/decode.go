package mcp

import (
	"encoding/json"
	"errors"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpgate/mcpgate/internal/jsonx"
)

// This file decodes a request's params (and its _meta) in one pass over
// the bytes, member by member, into the fields any method reads. The
// envelope around them is decoded by decodeMessage (jsonrpc.go), which
// calls params in the same pass; the handler-facing Request is built from
// the result by admission (server.go).

// requestParams holds every params member any method reads, so a request's
// params are decoded exactly once (by decodeParams, member by member).
type requestParams struct {
	Meta           *requestMeta
	Name           *string
	URI            *string
	TaskID         *string
	Arguments      json.RawMessage
	Cursor         *string
	InputResponses json.RawMessage
	RequestState   *string
	Notifications  json.RawMessage
	Ref            json.RawMessage
	Argument       json.RawMessage
	Context        json.RawMessage
	RequestID      json.RawMessage // notifications/cancelled

	// What Meta and the string members point into, so that a request's
	// decoded params are one allocation.
	meta requestMeta
	strs [5]string
}

// Slots of requestParams.strs.
const (
	slotName = iota
	slotURI
	slotTaskID
	slotCursor
	slotRequestState
)

type requestMeta struct {
	ProtocolVersion    json.RawMessage
	ClientCapabilities json.RawMessage
	ClientInfo         json.RawMessage
	LogLevel           json.RawMessage
	ProgressToken      json.RawMessage
	TraceParent        json.RawMessage
	TraceState         json.RawMessage
	Baggage            json.RawMessage
}

// trace returns the W3C trace context the _meta carries (members that are
// not strings are ignored).
func (m *requestMeta) trace() TraceContext {
	str := func(v json.RawMessage) string {
		if len(v) == 0 || v[0] != '"' {
			return ""
		}
		return jsonx.Unquote(v)
	}
	return TraceContext{TraceParent: str(m.TraceParent), TraceState: str(m.TraceState), Baggage: str(m.Baggage)}
}

// decodeParams decodes a request's params object. Members of the wrong type
// are reported as invalid params: a malformed _meta with a nil result, any
// other ill-typed member alongside the decoded rest, so that admission can
// finish the protocol checks (_meta, versions, method) before reporting it.
// Values alias raw.
func decodeParams(raw json.RawMessage) (*requestParams, *Error) {
	if raw == nil {
		return new(requestParams), nil
	}
	d := getDecoder(raw)
	defer putDecoder(d)
	if d.Dec.PeekKind() != '{' {
		return nil, ErrInvalidParams("Invalid params: params must be an object")
	}
	p, perr, err := d.params(new(requestParams))
	if err == nil && !d.AtEOF() {
		err = errors.New("data after the params object")
	}
	if err != nil {
		return nil, ErrInvalidParams("Invalid params: %v", err)
	}
	return p, perr
}

// params decodes the params object the decoder is at into p (see
// decodeParams for perr); err is a syntax error. The whole object is
// consumed either way.
func (d *jsonDecoder) params(p *requestParams) (_ *requestParams, perr *Error, err error) {
	if _, err := d.Dec.ReadToken(); err != nil { // '{'
		return nil, nil, err
	}
	var metaErr, typeErr *Error
	str := func(field string, slot int, v jsontext.Value) *string {
		switch v.Kind() {
		case '"':
			p.strs[slot] = jsonx.Unquote(v)
			return &p.strs[slot]
		case 'n':
		default:
			if typeErr == nil {
				typeErr = ErrInvalidParams("Invalid params: %s must be a string", field)
			}
		}
		return nil
	}
	for {
		name, ok, err := d.Name()
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			break
		}
		if jsonx.NameIs(name, "_meta") {
			switch d.Dec.PeekKind() {
			case '{':
				if err = d.meta(&p.meta); err != nil {
					return nil, nil, err
				}
				p.Meta = &p.meta
				continue
			case 'n':
				p.Meta = nil
			default:
				metaErr = errInvalidMeta("Invalid params: _meta must be an object")
			}
		}
		v, err := d.Dec.ReadValue()
		if err != nil {
			return nil, nil, err
		}
		switch {
		case jsonx.NameIs(name, "name"):
			p.Name = str("name", slotName, v)
		case jsonx.NameIs(name, "uri"):
			p.URI = str("uri", slotURI, v)
		case jsonx.NameIs(name, "taskId"):
			p.TaskID = str("taskId", slotTaskID, v)
		case jsonx.NameIs(name, "cursor"):
			p.Cursor = str("cursor", slotCursor, v)
		case jsonx.NameIs(name, "requestState"):
			p.RequestState = str("requestState", slotRequestState, v)
		case jsonx.NameIs(name, "arguments"):
			p.Arguments = json.RawMessage(v)
		case jsonx.NameIs(name, "inputResponses"):
			p.InputResponses = json.RawMessage(v)
		case jsonx.NameIs(name, "notifications"):
			p.Notifications = json.RawMessage(v)
		case jsonx.NameIs(name, "ref"):
			p.Ref = json.RawMessage(v)
		case jsonx.NameIs(name, "argument"):
			p.Argument = json.RawMessage(v)
		case jsonx.NameIs(name, "context"):
			p.Context = json.RawMessage(v)
		case jsonx.NameIs(name, "requestId"):
			p.RequestID = json.RawMessage(v)
		}
	}
	if metaErr != nil {
		return nil, metaErr, nil
	}
	return p, typeErr, nil
}

// meta decodes the _meta object the decoder is at into m, picking the
// members this package reads; the values alias the input.
func (d *jsonDecoder) meta(m *requestMeta) error {
	if _, err := d.Dec.ReadToken(); err != nil { // '{'
		return err
	}
	for {
		name, v, ok, err := d.Member()
		if err != nil || !ok {
			return err
		}
		switch {
		case jsonx.NameIs(name, MetaProtocolVersion):
			m.ProtocolVersion = json.RawMessage(v)
		case jsonx.NameIs(name, MetaClientCapabilities):
			m.ClientCapabilities = json.RawMessage(v)
		case jsonx.NameIs(name, MetaClientInfo):
			m.ClientInfo = json.RawMessage(v)
		case jsonx.NameIs(name, MetaLogLevel):
			m.LogLevel = json.RawMessage(v)
		case jsonx.NameIs(name, "progressToken"):
			m.ProgressToken = json.RawMessage(v)
		case jsonx.NameIs(name, MetaTraceParent):
			m.TraceParent = json.RawMessage(v)
		case jsonx.NameIs(name, MetaTraceState):
			m.TraceState = json.RawMessage(v)
		case jsonx.NameIs(name, MetaBaggage):
			m.Baggage = json.RawMessage(v)
		}
	}
}
