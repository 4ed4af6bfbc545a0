package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// The single-pass decoder (decodeMessage, decodeParams) replaced one built
// on encoding/json. That one is kept here as the reference the new one is
// fuzzed against: for any input both must reach the same verdict (error
// code and HTTP status, or the same id, method, params and members).
// Known, intended differences are excluded: encoding/json matches member
// names case-insensitively ("ID" as "id"); the JSON-RPC names are exact.
// encoding/json takes the last of two members with one name; both refuse
// such a message (the reference checks names with jsontext first).

type refEnvelope struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

func refDecodeMessage(b []byte) (*message, json.RawMessage, *Error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, nil, NewError(CodeInvalidRequest, "empty", nil).withStatus(http.StatusBadRequest)
	}
	switch b[0] {
	case '[':
		return nil, nil, NewError(CodeInvalidRequest, "batch", nil).withStatus(http.StatusBadRequest)
	case '{':
	default:
		if !json.Valid(b) {
			return nil, nil, errParse()
		}
		return nil, nil, NewError(CodeInvalidRequest, "not an object", nil).withStatus(http.StatusBadRequest)
	}
	if json.Valid(b) && !jsontext.Value(b).IsValid(jsontext.AllowInvalidUTF8(true)) {
		return nil, nil, errParse() // a member name used twice in one object
	}
	var env refEnvelope
	if err := json.Unmarshal(b, &env); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || !json.Valid(b) {
			return nil, nil, errParse()
		}
		return nil, nil, NewError(CodeInvalidRequest, err.Error(), nil).withStatus(http.StatusBadRequest)
	}
	id := env.ID
	if id != nil && checkID(id) != nil {
		return nil, nil, NewError(CodeInvalidRequest, "bad id", nil).withStatus(http.StatusBadRequest)
	}
	invalid := func() (*message, json.RawMessage, *Error) {
		return nil, id, NewError(CodeInvalidRequest, "invalid", nil).withStatus(http.StatusBadRequest)
	}
	if string(env.JSONRPC) != `"2.0"` {
		return invalid()
	}
	if env.Method == nil {
		if (env.Result != nil) != (env.Error != nil) && id != nil {
			return &message{id: id, response: true, result: env.Result, errObj: env.Error}, id, nil
		}
		return invalid()
	}
	var method string
	if env.Method[0] != '"' || json.Unmarshal(env.Method, &method) != nil || method == "" {
		return invalid()
	}
	if env.Params != nil && env.Params[0] != '{' {
		if string(env.Params) != "null" {
			return nil, id, ErrInvalidParams("not an object").withStatus(http.StatusBadRequest)
		}
		env.Params = nil
	}
	return &message{id: id, method: method, params: env.Params}, id, nil
}

type refParams struct {
	Meta *struct {
		ProtocolVersion    json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
		ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
		ClientInfo         json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
		LogLevel           json.RawMessage `json:"io.modelcontextprotocol/logLevel"`
		ProgressToken      json.RawMessage `json:"progressToken"`
	} `json:"_meta"`
	Name           *string         `json:"name"`
	URI            *string         `json:"uri"`
	TaskID         *string         `json:"taskId"`
	Arguments      json.RawMessage `json:"arguments"`
	Cursor         *string         `json:"cursor"`
	InputResponses json.RawMessage `json:"inputResponses"`
	RequestState   *string         `json:"requestState"`
	Notifications  json.RawMessage `json:"notifications"`
	Ref            json.RawMessage `json:"ref"`
	Argument       json.RawMessage `json:"argument"`
	Context        json.RawMessage `json:"context"`
	RequestID      json.RawMessage `json:"requestId"`
}

// caseVariantNames reports whether b spells a member name this package
// reads in another case, where encoding/json and the new decoder differ.
func caseVariantNames(b []byte) bool {
	lower := bytes.ToLower(b)
	for _, n := range []string{"jsonrpc", "id", "method", "params", "result", "error", "_meta", "name", "uri", "taskid",
		"arguments", "cursor", "inputresponses", "requeststate", "notifications", "ref", "argument", "context", "requestid",
		"protocolversion", "clientcapabilities", "clientinfo", "loglevel", "progresstoken"} {
		if bytes.Count(lower, []byte(n)) != bytes.Count(b, []byte(n)) {
			return true
		}
	}
	return bytes.Contains(b, []byte(`\u`)) // an escaped letter may hide a case variant
}

func FuzzDecodeMatchesReference(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":{"a":1,"a":2}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"action":"decline","action":"accept"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"name":1,"_meta":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"name":null,"cursor":"c","_meta":null}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x"} x`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if caseVariantNames(b) {
			t.Skip("member names in another case: encoding/json folds them, the decoder does not")
		}
		msg, id, jerr := decodeMessage(b)
		rmsg, rid, rerr := refDecodeMessage(b)
		if (jerr == nil) != (rerr == nil) {
			t.Fatalf("decodeMessage error %v, reference %v", jerr, rerr)
		}
		if !bytes.Equal(id, rid) {
			t.Fatalf("id %q, reference %q", id, rid)
		}
		if jerr != nil {
			if jerr.Code != rerr.Code || jerr.HTTPStatus() != rerr.HTTPStatus() {
				t.Fatalf("error %d/%d (%s), reference %d/%d (%s)", jerr.Code, jerr.HTTPStatus(), jerr.Message, rerr.Code, rerr.HTTPStatus(), rerr.Message)
			}
			return
		}
		if msg.response != rmsg.response || !bytes.Equal(msg.params, rmsg.params) ||
			!bytes.Equal(msg.result, rmsg.result) || !bytes.Equal(msg.errObj, rmsg.errObj) {
			t.Fatalf("message %+v, reference %+v", msg, rmsg)
		}
		if utf8.ValidString(msg.method) && msg.method != rmsg.method {
			t.Fatalf("method %q, reference %q", msg.method, rmsg.method)
		}
		if msg.params == nil {
			return
		}
		p, perr := decodeParams(msg.params)
		if mp, mperr := msg.requestParams(); !reflect.DeepEqual(mp, p) || !reflect.DeepEqual(mperr, perr) {
			t.Fatalf("params decoded with the envelope %+v (%v), on their own %+v (%v)", mp, mperr, p, perr)
		}
		var rp refParams
		rerrP := json.Unmarshal(msg.params, &rp)
		if (perr == nil) != (rerrP == nil) {
			t.Fatalf("decodeParams error %v, reference %v", perr, rerrP)
		}
		if perr != nil {
			return
		}
		str := func(a, b *string) bool {
			return (a == nil) == (b == nil) && (a == nil || !utf8.ValidString(*a) || *a == *b)
		}
		if !str(p.Name, rp.Name) || !str(p.URI, rp.URI) || !str(p.TaskID, rp.TaskID) || !str(p.Cursor, rp.Cursor) || !str(p.RequestState, rp.RequestState) {
			t.Fatalf("string members differ: %+v vs %+v", p, rp)
		}
		for _, pair := range [][2]json.RawMessage{{p.Arguments, rp.Arguments}, {p.InputResponses, rp.InputResponses},
			{p.Notifications, rp.Notifications}, {p.Ref, rp.Ref}, {p.Argument, rp.Argument}, {p.Context, rp.Context}, {p.RequestID, rp.RequestID}} {
			if !bytes.Equal(pair[0], pair[1]) {
				t.Fatalf("raw member %q, reference %q", pair[0], pair[1])
			}
		}
		if (p.Meta == nil) != (rp.Meta == nil) {
			t.Fatalf("_meta %+v, reference %+v", p.Meta, rp.Meta)
		}
		if p.Meta != nil && (!bytes.Equal(p.Meta.ProtocolVersion, rp.Meta.ProtocolVersion) || !bytes.Equal(p.Meta.ClientCapabilities, rp.Meta.ClientCapabilities) ||
			!bytes.Equal(p.Meta.ClientInfo, rp.Meta.ClientInfo) || !bytes.Equal(p.Meta.LogLevel, rp.Meta.LogLevel) || !bytes.Equal(p.Meta.ProgressToken, rp.Meta.ProgressToken)) {
			t.Fatalf("_meta %+v, reference %+v", p.Meta, rp.Meta)
		}
	})
}
