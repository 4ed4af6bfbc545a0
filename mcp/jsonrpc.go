package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
)

// message is one decoded JSON-RPC message from a client.
type message struct {
	id     json.RawMessage // nil for a notification
	method string
	params json.RawMessage

	// A response to a server-to-client request (legacy sessions only).
	response bool
	result   json.RawMessage
	errObj   json.RawMessage
}

func (m *message) isNotification() bool { return m.id == nil }

// envelope is the shape every client message is decoded into first.
type envelope struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// decodeMessage parses one JSON-RPC request or notification. It returns the
// request id it could read alongside any error, so that the error response
// can echo it.
func decodeMessage(b []byte) (*message, json.RawMessage, *Error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, nil, NewError(CodeInvalidRequest, "Invalid Request: empty body", nil).withStatus(http.StatusBadRequest)
	}
	switch b[0] {
	case '[':
		return nil, nil, NewError(CodeInvalidRequest, "Invalid Request: batches are not supported; send one message per request", nil).withStatus(http.StatusBadRequest)
	case '{':
	default:
		if !json.Valid(b) {
			return nil, nil, NewError(CodeParseError, "Parse error: invalid JSON", nil).withStatus(http.StatusBadRequest)
		}
		return nil, nil, NewError(CodeInvalidRequest, "Invalid Request: a message must be a JSON object", nil).withStatus(http.StatusBadRequest)
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || !json.Valid(b) {
			return nil, nil, NewError(CodeParseError, "Parse error: invalid JSON", nil).withStatus(http.StatusBadRequest)
		}
		return nil, nil, NewError(CodeInvalidRequest, "Invalid Request: "+err.Error(), nil).withStatus(http.StatusBadRequest)
	}
	id := env.ID
	if id != nil {
		if err := checkID(id); err != nil {
			return nil, nil, NewError(CodeInvalidRequest, "Invalid Request: "+err.Error(), nil).withStatus(http.StatusBadRequest)
		}
	}
	invalid := func(msg string) (*message, json.RawMessage, *Error) {
		return nil, id, NewError(CodeInvalidRequest, "Invalid Request: "+msg, nil).withStatus(http.StatusBadRequest)
	}
	if string(env.JSONRPC) != `"2.0"` {
		return invalid(`jsonrpc must be "2.0"`)
	}
	if env.Method == nil {
		if (env.Result != nil) != (env.Error != nil) && id != nil {
			// Only a legacy session may answer a server-to-client request;
			// the transport decides.
			return &message{id: id, response: true, result: env.Result, errObj: env.Error}, id, nil
		}
		return invalid("method is missing")
	}
	var method string
	if env.Method[0] != '"' || json.Unmarshal(env.Method, &method) != nil {
		return invalid("method must be a string")
	}
	if method == "" {
		return invalid("method must not be empty")
	}
	if env.Params != nil && env.Params[0] != '{' {
		if string(env.Params) == "null" {
			env.Params = nil
		} else {
			return nil, id, ErrInvalidParams("Invalid params: params must be an object").withStatus(http.StatusBadRequest)
		}
	}
	return &message{id: id, method: method, params: env.Params}, id, nil
}

// checkID accepts a string or an integer request id.
func checkID(id json.RawMessage) error {
	switch c := id[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(id, &s) != nil {
			return errors.New("id must be a string or an integer")
		}
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		if _, err := strconv.ParseInt(string(id), 10, 64); err != nil {
			return errors.New("id must be a string or an integer")
		}
		return nil
	case c == 'n':
		return errors.New("id must not be null")
	}
	return errors.New("id must be a string or an integer")
}

// Encoding. Responses are assembled by appending into pooled buffers: the
// envelope around a result is fixed text, and cached list pages are copied
// in without re-encoding.

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > 1<<20 {
		return // let huge buffers go
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}

// appendResponse appends {"jsonrpc":"2.0","id":ID,"result":RESULT}.
func appendResponse(dst []byte, id, result json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":`...)
	dst = append(dst, result...)
	return append(dst, '}')
}

// appendError appends an error response; id may be nil when it could not be
// read (the schema types id as optional, not nullable).
func appendError(dst []byte, id json.RawMessage, e *Error) []byte {
	dst = append(dst, `{"jsonrpc":"2.0",`...)
	if id != nil {
		dst = append(dst, `"id":`...)
		dst = append(dst, id...)
		dst = append(dst, ',')
	}
	dst = append(dst, `"error":`...)
	b, err := json.Marshal(e)
	if err != nil {
		b = []byte(`{"code":-32603,"message":"Internal error"}`)
	}
	dst = append(dst, b...)
	return append(dst, '}')
}

// appendNotification appends {"jsonrpc":"2.0","method":M,"params":P}.
func appendNotification(dst []byte, method string, params any) ([]byte, error) {
	dst = append(dst, `{"jsonrpc":"2.0","method":`...)
	dst = strconv.AppendQuote(dst, method)
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return dst, fmt.Errorf("mcp: encode %s params: %w", method, err)
		}
		dst = append(dst, `,"params":`...)
		dst = append(dst, b...)
	}
	return append(dst, '}'), nil
}

// spliceResult turns the encoded object body (a marshalled result without
// resultType) into a wire result: resultType first, then the body's members,
// then _meta with the server's identity unless the body carries its own.
func spliceResult(dst []byte, resultType string, body []byte, meta []byte) []byte {
	dst = append(dst, `{"resultType":"`...)
	dst = append(dst, resultType...)
	dst = append(dst, '"')
	inner := bytes.TrimSpace(body)
	if len(inner) >= 2 {
		inner = bytes.TrimSpace(inner[1 : len(inner)-1])
	} else {
		inner = nil
	}
	if len(inner) > 0 {
		dst = append(dst, ',')
		dst = append(dst, inner...)
	}
	if meta != nil {
		dst = append(dst, `,"_meta":`...)
		dst = append(dst, meta...)
	}
	return append(dst, '}')
}
