package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/mcpgate/mcpgate/mcp"
)

// callError is a problem of one call that the caller (or the upstream's
// answer to the credential) caused: invalid arguments, a failed
// authentication. Whatever builds a request returns one as an error, and
// [Proxy.Do] and [Proxy.Poll] turn it into the tool error result, in one
// place (callError.result); any other error out of the request build is a
// programming fault.
type callError struct{ msg string }

func (e *callError) Error() string { return e.msg }

// result is the tool error the caller receives.
func (e *callError) result() *mcp.CallToolResult { return mcp.ToolError(e.msg) }

// invalidArguments is the callError for argument problems.
func invalidArguments(problems string) *callError {
	return &callError{msg: "Invalid arguments: " + problems}
}

// argErrors collects argument problems found while building the request
// (things the schema cannot express, such as control bytes in a header).
type argErrors []string

func (a *argErrors) add(format string, args ...any) { *a = append(*a, fmt.Sprintf(format, args...)) }

// err is nil without problems, else their callError.
func (a argErrors) err() error {
	if len(a) == 0 {
		return nil
	}
	return invalidArguments(strings.Join(a, "; "))
}

// decodeArgs parses and validates the arguments; the error is a
// *callError saying what is wrong with them.
func (e *Endpoint) decodeArgs(args json.RawMessage) (map[string]any, error) {
	var v any
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		v = map[string]any{}
	} else {
		var err error
		v, err = e.proxy.values.decode(trimmed, e.names)
		if err != nil {
			if errors.As(err, new(*numberError)) {
				return nil, invalidArguments(err.Error())
			}
			return nil, invalidArguments("not valid JSON: " + err.Error())
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, invalidArguments("the arguments must be a JSON object")
	}
	// A schema that does not compile was logged once by compiledSchema;
	// the call is then dispatched unvalidated rather than making the tool
	// unusable (the upstream still validates).
	// The fast path only ever vouches for valid arguments; whatever it
	// cannot vouch for is decided, and explained, by jsonschema.
	if sch, err := e.compiledSchema(); err == nil && sch != nil && (e.fast == nil || !e.fast.accepts(v)) {
		if err := validate(sch, v); err != nil {
			return nil, invalidArguments(validationMessage(err))
		}
	}
	if e.formats != nil {
		var bad argErrors
		e.formats.check(m, nil, &bad)
		if err := bad.err(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// validate runs jsonschema, turning a panic into an error: jsonschema v6
// dereferences a nil big.Rat when a number it cannot parse (such as
// 1e10000000) meets a numeric keyword, and client input must never crash
// a worker. (decodeValue already refuses such numbers; this is defence in
// depth.)
func validate(sch *jsonschema.Schema, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("a value could not be checked (a number may be out of range): %v", r)
		}
	}()
	return sch.Validate(v)
}

// validationMessage lists every leaf problem as "/location: message".
func validationMessage(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var msgs []string
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(escapePointer(e.InstanceLocation), "/")
			add := func(msg string) {
				if !seen[msg] {
					seen[msg] = true
					msgs = append(msgs, msg)
				}
			}
			if req, ok := e.ErrorKind.(*kind.Required); ok {
				// one line per missing property, at the property's location
				for _, name := range req.Missing {
					add(strings.TrimSuffix(loc, "/") + "/" + escapePointer([]string{name})[0] + ": missing required property")
				}
				return
			}
			add(loc + ": " + e.BasicOutput().Error.String())
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(msgs) == 0 {
		return err.Error()
	}
	return strings.Join(msgs, "; ")
}

func escapePointer(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		t = strings.ReplaceAll(t, "~", "~0")
		out[i] = strings.ReplaceAll(t, "/", "~1")
	}
	return out
}
