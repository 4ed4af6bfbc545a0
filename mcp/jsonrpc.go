package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpgate/mcpgate/internal/jsonx"
)

// message is one decoded JSON-RPC message from a client.
type message struct {
	id     json.RawMessage // nil for a notification
	method string
	params json.RawMessage
	// decoded holds params decoded in the same pass as the envelope (nil
	// when params is absent or null), in paramsStore; decodedErr is
	// decodeParams's error.
	decoded     *requestParams
	decodedErr  *Error
	paramsStore requestParams

	// A response to a server-to-client request (legacy sessions only).
	response bool
	result   json.RawMessage
	errObj   json.RawMessage
}

func (m *message) isNotification() bool { return m.id == nil }

// hasModernMeta reports whether the params' _meta names a protocol
// version: the mark of a 2026-07-28 request.
func (m *message) hasModernMeta() bool {
	p, _ := m.requestParams()
	return p != nil && p.Meta != nil && p.Meta.ProtocolVersion != nil
}

// requestParams returns the decoded params (an empty set when the message
// has none); see decodeParams for the errors.
func (m *message) requestParams() (*requestParams, *Error) {
	if m.decoded != nil || m.decodedErr != nil {
		return m.decoded, m.decodedErr
	}
	return decodeParams(m.params)
}

// jsonDecoder is a pooled jsonx.Reader: values it returns alias the bytes
// it was reset to, so callers reset it to bytes they own.
type jsonDecoder struct{ jsonx.Reader }

var decoderPool = sync.Pool{New: func() any { return new(jsonDecoder) }}

// getDecoder returns a pooled decoder reading b (without copying it).
func getDecoder(b []byte) *jsonDecoder {
	d := decoderPool.Get().(*jsonDecoder)
	d.Reset(b)
	return d
}

func putDecoder(d *jsonDecoder) {
	d.Release()
	decoderPool.Put(d)
}

// emptyObject reports whether v is a JSON object with no members.
func emptyObject(v []byte) bool {
	if len(v) < 2 || v[0] != '{' || v[len(v)-1] != '}' {
		return false
	}
	return len(bytes.TrimSpace(v[1:len(v)-1])) == 0
}

// messagePool holds the messages the HTTP transport decodes requests into
// and puts back once a request is answered and observed (see
// httpHandler.ServeHTTP). A message is cleared when it is put back, so that
// nothing of one request stays in the pool; what a request hands on from
// its message (ids, arguments, _meta values) aliases the body's copy, never
// the message itself.
var messagePool = sync.Pool{New: func() any { return new(message) }}

// getMessage returns a zero message from the pool.
func getMessage() *message { return messagePool.Get().(*message) }

// putMessage clears m and returns it to the pool. Nothing may refer to m,
// its params or its _meta any more.
func putMessage(m *message) {
	*m = message{}
	messagePool.Put(m)
}

// decodeMessage parses one JSON-RPC request or notification in one pass. It
// returns the request id it could read alongside any error, so that the
// error response can echo it. The message keeps its own copy of b.
func decodeMessage(b []byte) (*message, json.RawMessage, *Error) {
	return decodeMessageInto(new(message), b)
}

// decodeMessageInto is decodeMessage into msg, which must be zero (a new
// or a pooled one); it returns msg itself, or nil with an error.
func decodeMessageInto(msg *message, b []byte) (*message, json.RawMessage, *Error) {
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
			return nil, nil, errParse()
		}
		return nil, nil, NewError(CodeInvalidRequest, "Invalid Request: a message must be a JSON object", nil).withStatus(http.StatusBadRequest)
	}
	b = bytes.Clone(b) // what the message keeps aliases this copy
	d := getDecoder(b)
	defer putDecoder(d)
	if !d.OpenObject() {
		return nil, nil, errParse()
	}
	var (
		jsonrpc, id, method, params, result, errObj jsontext.Value
		decoded                                     *requestParams
		decodedErr                                  *Error
	)
	for {
		name, ok, err := d.Name()
		if err != nil {
			return nil, nil, errParseAt(err)
		}
		if !ok {
			break
		}
		if jsonx.NameIs(name, "params") && d.Dec.PeekKind() == '{' {
			// Decoded here, in the same pass; the raw bytes are kept too.
			start := d.Dec.InputOffset()
			if decoded, decodedErr, err = d.params(&msg.paramsStore); err != nil {
				return nil, nil, errParseAt(err)
			}
			params = bytes.TrimLeft(b[start:d.Dec.InputOffset()], " \t\r\n:")
			continue
		}
		v, err := d.Dec.ReadValue()
		if err != nil {
			return nil, nil, errParseAt(err)
		}
		switch {
		case jsonx.NameIs(name, "jsonrpc"):
			jsonrpc = v
		case jsonx.NameIs(name, "id"):
			id = v
		case jsonx.NameIs(name, "method"):
			method = v
		case jsonx.NameIs(name, "params"):
			params, decoded, decodedErr = v, nil, nil
		case jsonx.NameIs(name, "result"):
			result = v
		case jsonx.NameIs(name, "error"):
			errObj = v
		}
	}
	if !d.AtEOF() {
		return nil, nil, errParse()
	}
	rid := json.RawMessage(id)
	if rid != nil {
		if err := checkID(rid); err != nil {
			return nil, nil, NewError(CodeInvalidRequest, "Invalid Request: "+err.Error(), nil).withStatus(http.StatusBadRequest)
		}
	}
	invalid := func(msg string) (*message, json.RawMessage, *Error) {
		return nil, rid, NewError(CodeInvalidRequest, "Invalid Request: "+msg, nil).withStatus(http.StatusBadRequest)
	}
	if string(jsonrpc) != `"2.0"` {
		return invalid(`jsonrpc must be "2.0"`)
	}
	if method == nil {
		if (result != nil) != (errObj != nil) && id != nil {
			// Only a legacy session may answer a server-to-client request;
			// the transport decides.
			msg.id, msg.response, msg.result, msg.errObj = rid, true, json.RawMessage(result), json.RawMessage(errObj)
			return msg, rid, nil
		}
		return invalid("method is missing")
	}
	if method.Kind() != '"' {
		return invalid("method must be a string")
	}
	m := methodName(method)
	if m == "" {
		return invalid("method must not be empty")
	}
	switch params.Kind() {
	case 0, '{':
	case 'n':
		params = nil
	default:
		return nil, rid, ErrInvalidParams("Invalid params: params must be an object").withStatus(http.StatusBadRequest)
	}
	msg.id, msg.method, msg.params, msg.decoded, msg.decodedErr = rid, m, json.RawMessage(params), decoded, decodedErr
	return msg, rid, nil
}

// methodName returns the method a JSON string names; the methods this
// package serves are returned without allocating.
func methodName(quoted jsontext.Value) string {
	if len(quoted) >= 2 && bytes.IndexByte(quoted, '\\') < 0 {
		switch name := quoted[1 : len(quoted)-1]; string(name) {
		case "tools/call":
			return "tools/call"
		case "tools/list":
			return "tools/list"
		case "subscriptions/listen":
			return "subscriptions/listen"
		case "server/discover":
			return "server/discover"
		case "resources/read":
			return "resources/read"
		case "prompts/get":
			return "prompts/get"
		case "notifications/cancelled":
			return "notifications/cancelled"
		}
	}
	return jsonx.Unquote(quoted)
}

func errParse() *Error {
	return NewError(CodeParseError, "Parse error: invalid JSON", nil).withStatus(http.StatusBadRequest)
}

// errParseAt is the parse error for a read that failed with err. A member
// name used twice in one object is refused as not valid JSON (-32700),
// wherever it is in the message (envelope, params, _meta, arguments, input
// responses, a response's result): RFC 8259 leaves such a document's
// meaning to the reader, and two readers on the way (a proxy, a WAF, this
// server) that pick different members would each see a different request.
// The message names the member by its JSON Pointer; like every parse
// error it carries no id.
func errParseAt(err error) *Error {
	if ptr, ok := jsonx.DuplicateName(err); ok {
		return NewError(CodeParseError, "Parse error: duplicate member name at "+strconv.Quote(ptr), nil).withStatus(http.StatusBadRequest)
	}
	return errParse()
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
	dst = appendResponseHead(dst, id)
	dst = append(dst, result...)
	return append(dst, '}')
}

// The head of a response, before its result.
const (
	responseHead1 = `{"jsonrpc":"2.0","id":`
	responseHead2 = `,"result":`
)

// appendResponseHead appends {"jsonrpc":"2.0","id":ID,"result":, the
// response before its result.
func appendResponseHead(dst []byte, id json.RawMessage) []byte {
	dst = append(dst, responseHead1...)
	dst = append(dst, id...)
	return append(dst, responseHead2...)
}

// responseIn completes and returns the response in *buf when result was
// encoded there right after the response's head for id (see call.resp), so
// that it is written without a copy; ok is false for any other result.
func responseIn(buf *[]byte, id, result json.RawMessage) (_ []byte, ok bool) {
	if buf == nil || len(result) == 0 {
		return nil, false
	}
	b := *buf
	head := len(b) - len(result)
	if head != len(responseHead1)+len(id)+len(responseHead2) || &b[head] != &result[0] {
		return nil, false
	}
	b = append(b, '}')
	*buf = b
	return b, true
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
