package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcpgate/mcpgate/openapi"
)

// Endpoint is one tool compiled for dispatch: the path template split into
// literal and parameter parts, the arguments sorted by location, header
// rules checked, redaction paths split and the inputSchema compiled (lazily,
// once). Build it with [Proxy.Endpoint] when the tool set changes; it is
// immutable and safe for concurrent use. It keeps the tool itself and
// points at its arguments, not copies (a large API compiles thousands): do
// not modify a tool after compiling it.
type Endpoint struct {
	proxy *Proxy
	tool  *openapi.Tool
	// parsed route
	method    string
	pathParts []pathPart // expanded after the base URL's path
	queryTmpl []pathPart // literal "?a={x}" text of the template, if any
	names     paramNames // the arguments by name
	query     []*param
	headers   []*param
	cookies   []*param
	bodyProps []*param
	whole     *param
	body      *openapi.Body
	bodyKind  bodyKind
	redact    [][]string
	warnings  []string

	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
	fast       *fastSchema // nil: the schema is validated by jsonschema alone
	formats    *formatNode // integer format ranges; nil: none declared

	outOnce   sync.Once
	outSchema *jsonschema.Schema
	outErr    error
}

// param is one argument with its serialization rules resolved: the
// tool's own (generated arguments have their style set), or a copy with
// the default style.
type param = openapi.Argument

// paramNames are an endpoint's arguments sorted by name, found by
// binary search: a map per endpoint would cost several hundred bytes, times
// thousands of tools.
type paramNames []*param

// find is the argument named name (as bytes: the comparisons do not
// allocate), or nil.
func (ns paramNames) find(name []byte) *param {
	lo, hi := 0, len(ns)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ns[m].Name < string(name) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(ns) && ns[lo].Name == string(name) {
		return ns[lo]
	}
	return nil
}

// pathPart is a literal (already escaped) or a parameter reference.
type pathPart struct {
	literal string
	param   *param
}

type bodyKind int

const (
	bodyNone bodyKind = iota
	bodyJSON
	bodyForm
	bodyMultipart
	bodyBinary // base64 argument decoded to raw bytes
	bodyText   // string argument sent as is
)

// Name is the tool name.
func (e *Endpoint) Name() string { return e.tool.Name }

// Proxy is the proxy the endpoint was compiled by: the one to call it with.
func (e *Endpoint) Proxy() *Proxy { return e.proxy }

// Tool returns the tool the endpoint was compiled from.
func (e *Endpoint) Tool() *openapi.Tool { return e.tool }

// Warnings lists what was dropped while compiling (for example a header
// parameter no argument may set).
func (e *Endpoint) Warnings() []string { return e.warnings }

// compiledSchema compiles the inputSchema on first use.
func (e *Endpoint) compiledSchema() (*jsonschema.Schema, error) {
	e.schemaOnce.Do(func() {
		if len(e.tool.InputSchema) == 0 {
			return
		}
		if doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(e.tool.InputSchema)); err == nil {
			e.formats = compileFormats(doc)
		}
		e.schema, e.schemaErr = openapi.CompileInputSchema(e.tool)
		if e.schemaErr != nil {
			e.proxy.log.Warn("proxy: inputSchema does not compile; arguments will not be validated", "tool", e.tool.Name, "error", e.schemaErr)
			return
		}
		var err error
		if e.fast, err = compileFast(e.tool.InputSchema); err != nil {
			e.proxy.log.Debug("proxy: inputSchema has no fast path; jsonschema validates every call", "tool", e.tool.Name, "reason", err)
		}
	})
	return e.schema, e.schemaErr
}

// compiledOutputSchema compiles the outputSchema on first use (nil when
// the tool declares none).
func (e *Endpoint) compiledOutputSchema() (*jsonschema.Schema, error) {
	e.outOnce.Do(func() {
		if len(e.tool.OutputSchema) == 0 {
			return
		}
		e.outSchema, e.outErr = openapi.CompileSchema(e.tool.Name+"/output", e.tool.OutputSchema)
		if e.outErr != nil {
			e.proxy.log.Warn("proxy: outputSchema does not compile; results will not be checked", "tool", e.tool.Name, "error", e.outErr)
		}
	})
	return e.outSchema, e.outErr
}

// Endpoint compiles one tool. It fails only when the tool cannot be
// dispatched at all (a template parameter without an argument, an unknown
// argument location, an unsupported method); droppable problems become
// [Endpoint.Warnings] and are logged.
func (p *Proxy) Endpoint(t *openapi.Tool) (*Endpoint, error) {
	if t == nil {
		return nil, errors.New("proxy: nil tool")
	}
	e := &Endpoint{proxy: p, tool: t}
	e.method = strings.ToUpper(t.Route.Method)
	if !validHeaderName(e.method) {
		return nil, fmt.Errorf("proxy: tool %s: invalid method %q", t.Name, t.Route.Method)
	}
	byParam, err := e.compileArguments()
	if err == nil {
		err = e.compileTemplate(byParam)
	}
	if err != nil {
		return nil, fmt.Errorf("proxy: tool %s: %w", t.Name, err)
	}
	e.compileBody()
	for _, path := range t.RedactResponse {
		if path = strings.TrimSpace(path); path != "" {
			e.redact = append(e.redact, strings.Split(path, "."))
		}
	}
	for _, w := range e.warnings {
		p.log.Warn("proxy: endpoint warning", "tool", t.Name, "warning", w)
	}
	return e, nil
}

// compileArguments sorts the route's arguments by location, with their
// serialization defaults; it returns the path parameters by name.
func (e *Endpoint) compileArguments() (map[string]*param, error) {
	byParam := map[string]*param{}
	args := e.tool.Route.Arguments
	e.names = make(paramNames, 0, len(args))
	for i := range args {
		a := &args[i]
		pa := a
		switch a.In {
		case openapi.InPath:
			pa = withStyle(a, "simple")
			byParam[a.Param] = pa
		case openapi.InQuery:
			pa = withStyle(a, "form")
			e.query = append(e.query, pa)
		case openapi.InHeader:
			if !validHeaderName(a.Param) {
				e.warn(fmt.Sprintf("header parameter %q has an invalid name; dropped", a.Param))
				continue
			}
			if forbiddenHeader(a.Param) {
				e.warn(fmt.Sprintf("header parameter %q is reserved (credential, hop-by-hop or framing); dropped", a.Param))
				continue
			}
			e.headers = append(e.headers, pa)
		case openapi.InCookie:
			if !validCookieName(a.Param) {
				e.warn(fmt.Sprintf("cookie parameter %q has an invalid name; dropped", a.Param))
				continue
			}
			e.cookies = append(e.cookies, pa)
		case openapi.InBodyProperty:
			e.bodyProps = append(e.bodyProps, pa)
		case openapi.InWholeBody:
			if e.whole != nil {
				return nil, errors.New("two whole-body arguments")
			}
			e.whole = pa
		default:
			return nil, fmt.Errorf("argument %q has unknown location %q", a.Name, a.In)
		}
		e.names = append(e.names, pa)
	}
	slices.SortStableFunc(e.names, func(a, b *param) int { return strings.Compare(a.Name, b.Name) })
	return byParam, nil
}

// withStyle is a, or a copy with style def when a says none (generated
// arguments always do; a copy per argument was 9 MB for Graph).
func withStyle(a *openapi.Argument, def string) *param {
	if a.Style != "" {
		return a
	}
	c := *a
	c.Style = def
	return &c
}

// compileTemplate splits the path template ("/a/{x}/b?lit={y}") into
// literal and parameter parts.
func (e *Endpoint) compileTemplate(byParam map[string]*param) error {
	tmpl, qtmpl, _ := strings.Cut(e.tool.Route.Path, "?")
	if !strings.HasPrefix(tmpl, "/") {
		tmpl = "/" + tmpl
	}
	if i := strings.IndexByte(qtmpl, '#'); i >= 0 {
		qtmpl = qtmpl[:i]
	}
	var err error
	if e.pathParts, err = splitTemplate(tmpl, byParam, true); err != nil {
		return err
	}
	if qtmpl != "" {
		e.queryTmpl, err = splitTemplate(qtmpl, byParam, false)
	}
	return err
}

// compileBody decides how the body is encoded, from its media type and
// arguments (a body argument without a declared body is JSON, or binary
// for a base64 whole body).
func (e *Endpoint) compileBody() {
	b := e.tool.Route.Body
	if b == nil {
		if len(e.bodyProps) > 0 || e.whole != nil {
			e.body = &openapi.Body{ContentType: "application/json"}
			e.bodyKind = bodyJSON
			if e.whole != nil && e.whole.Base64 {
				e.body.ContentType = "application/octet-stream"
				e.bodyKind = bodyBinary
			}
		}
		return
	}
	e.body = b
	ct := mediaType(b.ContentType)
	switch {
	case strings.HasPrefix(ct, "multipart/"):
		e.bodyKind = bodyMultipart
	case ct == "application/x-www-form-urlencoded":
		e.bodyKind = bodyForm
	case e.whole != nil && e.whole.Base64:
		e.bodyKind = bodyBinary
	case isJSONType(ct) || ct == "*/*":
		e.bodyKind = bodyJSON
	case e.whole != nil:
		e.bodyKind = bodyText
	default:
		e.bodyKind = bodyJSON
	}
}

func (e *Endpoint) warn(msg string) { e.warnings = append(e.warnings, msg) }

// splitTemplate splits a template into escaped literals and parameters.
func splitTemplate(tmpl string, byParam map[string]*param, path bool) ([]pathPart, error) {
	var parts []pathPart
	for tmpl != "" {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			parts = append(parts, literalPart(tmpl, path))
			break
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("unterminated {…} in path template %q", tmpl)
		}
		if i > 0 {
			parts = append(parts, literalPart(tmpl[:i], path))
		}
		name := tmpl[i+1 : i+j]
		pa := byParam[name]
		if pa == nil {
			return nil, fmt.Errorf("path template parameter {%s} has no argument", name)
		}
		parts = append(parts, pathPart{param: pa})
		tmpl = tmpl[i+j+1:]
	}
	return parts, nil
}

func literalPart(s string, path bool) pathPart {
	if path {
		return pathPart{literal: string(appendPathLiteral(nil, s))}
	}
	// a literal query template: keep its structure (=, &), escape the rest
	return pathPart{literal: string(appendEscaped(nil, s, keepQueryLiteral))}
}

// Endpoints compiles every tool of a generated result, keyed by tool name.
// Tools that cannot be compiled are left out and reported in the joined
// error (the others are still returned).
func (p *Proxy) Endpoints(tools []openapi.Tool) (map[string]*Endpoint, error) {
	out := make(map[string]*Endpoint, len(tools))
	var errs []error
	for i := range tools {
		e, err := p.Endpoint(&tools[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[e.tool.Name] = e
	}
	return out, errors.Join(errs...)
}
