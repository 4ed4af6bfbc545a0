package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// Env is the CEL environment of policy and quota conditions: the variables
// listed in the package doc. It is immutable and safe for concurrent use.
type Env struct {
	env *cel.Env
}

// NewEnv builds the condition environment.
func NewEnv() (*Env, error) {
	dyn := cel.MapType(cel.StringType, cel.DynType)
	env, err := cel.NewEnv(
		cel.Variable("caller.subject", cel.StringType),
		cel.Variable("caller.scopes", cel.ListType(cel.StringType)),
		cel.Variable("caller.claims", dyn),
		cel.Variable("tool.name", cel.StringType),
		cel.Variable("tool.api", cel.StringType),
		cel.Variable("tool.method", cel.StringType),
		cel.Variable("tool.path", cel.StringType),
		cel.Variable("tool.annotations", dyn),
		cel.Variable("args", dyn),
	)
	if err != nil {
		return nil, fmt.Errorf("policy: build the CEL environment: %w", err)
	}
	return &Env{env: env}, nil
}

// Condition is a compiled boolean CEL expression over the variables of
// [Env]. It is immutable and safe for concurrent use.
type Condition struct {
	src     string
	full    cel.Program // for calls: every variable known
	partial cel.Program // for listing: args unknown; nil when args is not read
}

// Compile compiles a boolean condition. The error is CEL's, which names the
// position and the problem.
func (e *Env) Compile(src string) (*Condition, error) {
	ast, iss := e.env.Compile(src)
	if err := iss.Err(); err != nil {
		return nil, err
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, fmt.Errorf("%q is a %s expression, want a bool", src, t)
	}
	full, err := e.env.Program(ast, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("%q: %w", src, err)
	}
	c := &Condition{src: src, full: full}
	if readsArgs(ast) {
		if c.partial, err = e.env.Program(ast, cel.EvalOptions(cel.OptPartialEval)); err != nil {
			return nil, fmt.Errorf("%q: %w", src, err)
		}
	}
	return c, nil
}

// readsArgs reports whether a checked expression refers to the args
// variable.
func readsArgs(ast *cel.Ast) bool {
	for _, r := range ast.NativeRep().ReferenceMap() {
		if r.Name == "args" {
			return true
		}
	}
	return false
}

// String is the condition's source.
func (c *Condition) String() string { return c.src }

// Eval reports whether the condition holds for in. A condition that fails to
// evaluate, or evaluates to something other than a bool, is an error.
func (c *Condition) Eval(in *Input) (bool, error) {
	v, _, err := c.full.Eval((*activation)(in))
	if err != nil {
		return false, err
	}
	b, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Errorf("%q evaluated to %v, not a bool", c.src, v)
	}
	return b, nil
}

// unknownOutcome is what a condition says when the arguments are unknown.
type unknownOutcome int

const (
	noMatch  unknownOutcome = iota // false whatever the arguments
	matches                        // true whatever the arguments
	mayMatch                       // depends on the arguments
	fails                          // fails to evaluate whatever the arguments
)

var argsUnknown = []*interpreter.AttributePattern{cel.AttributePattern("args")}

// evalUnknownArgs evaluates the condition with args unknown (CEL partial
// evaluation, for a condition that reads them).
func (c *Condition) evalUnknownArgs(in *Input) unknownOutcome {
	var (
		v   ref.Val
		err error
	)
	if c.partial == nil {
		v, _, err = c.full.Eval((*activation)(in))
	} else {
		var vars cel.PartialActivation
		if vars, err = cel.PartialVars((*activation)(in), argsUnknown...); err != nil {
			return fails
		}
		v, _, err = c.partial.Eval(vars)
	}
	switch {
	case types.IsUnknown(v):
		return mayMatch
	case err != nil:
		return fails
	}
	switch v.Value() {
	case true:
		return matches
	case false:
		return noMatch
	}
	return fails
}

// activation resolves the condition variables from an Input without
// building a map: caller and tool values are converted to CEL once (per
// Caller and per Tool), the arguments decoded on first use.
type activation Input

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "caller.subject", "caller.scopes", "caller.claims":
		c := a.Caller.vals()
		switch name {
		case "caller.subject":
			return c.subject, true
		case "caller.scopes":
			return c.scopes, true
		}
		return c.claims, true
	case "tool.name", "tool.api", "tool.method", "tool.path", "tool.annotations":
		t := a.Tool.vals()
		switch name {
		case "tool.name":
			return t.name, true
		case "tool.api":
			return t.api, true
		case "tool.method":
			return t.method, true
		case "tool.path":
			return t.path, true
		}
		return t.annotations, true
	case "args":
		return (*Input)(a).argsVal(), true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// callerVals and toolVals are the CEL values of a Caller and a Tool.
type callerVals struct{ subject, scopes, claims ref.Val }

type toolVals struct{ name, api, method, path, annotations ref.Val }

var (
	noCaller = &callerVals{
		subject: types.String(""),
		scopes:  types.NewStringList(types.DefaultTypeAdapter, nil),
		claims:  types.NewStringInterfaceMap(types.DefaultTypeAdapter, map[string]any{}),
	}
	noTool = (&Tool{}).build()
)

func (c *Caller) vals() *callerVals {
	if c == nil {
		return noCaller
	}
	c.once.Do(func() {
		claims := c.Claims
		if claims == nil {
			claims = map[string]any{}
		}
		c.cel = &callerVals{
			subject: types.String(c.Subject),
			scopes:  types.NewStringList(types.DefaultTypeAdapter, c.Scopes),
			claims:  types.NewStringInterfaceMap(types.DefaultTypeAdapter, claims),
		}
	})
	return c.cel
}

func (t *Tool) vals() *toolVals {
	if t == nil {
		return noTool
	}
	t.once.Do(func() { t.cel = t.build() })
	return t.cel
}

func (t *Tool) build() *toolVals {
	a := t.Annotations
	return &toolVals{
		name:   types.String(t.Name),
		api:    types.String(t.API),
		method: types.String(t.Method),
		path:   types.String(t.Path),
		annotations: types.NewStringInterfaceMap(types.DefaultTypeAdapter, map[string]any{
			"title":           a.Title,
			"readOnlyHint":    a.ReadOnlyHint,
			"destructiveHint": a.DestructiveHint,
			"idempotentHint":  a.IdempotentHint,
			"openWorldHint":   a.OpenWorldHint,
		}),
	}
}

// argsVal is the CEL value of the arguments: a map, or an error value when
// they do not decode to a JSON object (which fails the rule reading them).
func (in *Input) argsVal() ref.Val {
	if in.argsCEL == nil {
		args, err := in.decodedArgs()
		if err != nil {
			in.argsCEL = types.NewErr("arguments: %v", err)
		} else {
			in.argsCEL = types.NewStringInterfaceMap(types.DefaultTypeAdapter, args)
		}
	}
	return in.argsCEL
}

// decodedArgs decodes in.Args once.
func (in *Input) decodedArgs() (map[string]any, error) {
	if !in.decoded {
		in.decoded = true
		in.args, in.argsErr = decodeArgs(in.Args)
	}
	return in.args, in.argsErr
}

var errNotObject = errors.New("not a JSON object")

// decodeArgs decodes a JSON object into CEL-friendly Go values: integers
// become int64 (so args.id == 2 compares ints), other numbers float64.
func decodeArgs(raw []byte) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	d := decoders.Get().(*pooledDecoder)
	defer d.release()
	d.r.Reset(raw)
	d.dec.Reset(&d.r, jsontext.AllowDuplicateNames(true))
	dec := &d.dec
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("trailing data after the arguments")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errNotObject
	}
	return m, nil
}

// pooledDecoder is a reusable decoder: a jsontext.Decoder is large.
type pooledDecoder struct {
	r   bytes.Reader
	dec jsontext.Decoder
}

var decoders = sync.Pool{New: func() any { return new(pooledDecoder) }}

func (d *pooledDecoder) release() {
	d.r.Reset(nil)
	d.dec.Reset(&d.r)
	decoders.Put(d)
}

func decodeValue(dec *jsontext.Decoder) (any, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		m := map[string]any{}
		for dec.PeekKind() != '}' {
			name, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			key := name.String() // before the next read voids the token
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			m[key] = v
		}
		_, err := dec.ReadToken()
		return m, err
	case '[':
		l := []any{}
		for dec.PeekKind() != ']' {
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		_, err := dec.ReadToken()
		return l, err
	case '"':
		return tok.String(), nil
	case '0':
		if i, err := tok.Int(); err == nil {
			return i, nil
		}
		return tok.Float()
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case 'n':
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok.Kind())
}
