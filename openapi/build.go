package openapi

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// This file builds an OpenAPI 3 document (kin-openapi types) from one
// generic encoding/json decode. kin-openapi's own UnmarshalJSON methods
// re-scan and re-decode every subtree once per nesting level (each level
// decodes into its struct and again into a map for extensions), which is
// quadratic in depth: on GitHub's 12 MiB description it is most of the
// load time. Here every byte is decoded once; the builder keeps exactly what
// tool generation reads (callbacks, webhooks, examples and links are not
// tools and are left out), and kin's ResolveRefsIn then resolves the refs.

// buildOpenAPI3 builds kin types from a generic decode of a 3.x document.
// When dropPaths is set (no reference points into the paths), each path
// item is deleted from root once built, so that the decoded tree shrinks
// as kin's types grow: on Microsoft Graph's document that is 60 MB less at
// the peak. A path item left raw (rawPathItem) is decoded by dec when it is
// built.
//
// With deferPaths, path items that can be built apart from the document
// (deferrable) are left unbuilt, in b.deferred, for Generate (deferred.go).
func buildOpenAPI3(root map[string]any, dropPaths, deferPaths bool, dec *treeDecoder) (*openapi3.T, *builder, error) {
	b := &builder{root: root, memo: newRefMemo(), dropPaths: dropPaths, deferPaths: deferPaths, dec: dec}
	t := b.doc(root)
	if b.err != nil {
		return nil, nil, b.err
	}
	return t, b, nil
}

type builder struct {
	is31     bool
	err      error
	warnings []string
	// root is the generic decode, where local $refs are resolved
	// (refs.go); memo holds the value built for each referenced node.
	root     map[string]any
	memo     refMemo
	refDepth int
	// external is set when a reference is left for kin's loader: one to
	// another file or URL, or a path item's $ref.
	external bool
	// refDescriptions holds descriptions written beside a $ref.
	refDescriptions map[*openapi3.SchemaRef]string
	dropPaths       bool
	dec             *treeDecoder // decodes the path items left raw
	transient       bool         // building a path item decoded from raw (memoizes)
	deferPaths      bool         // leave deferrable path items unbuilt
	deferred        map[string]any
}

func (b *builder) warn(place, msg string) {
	if len(b.warnings) < 100 {
		b.warnings = append(b.warnings, place+": "+msg)
	}
}

// fail records the first structural error, naming its place.
func (b *builder) fail(place string, format string, args ...any) {
	if b.err == nil {
		b.err = &placeError{place: place, err: fmt.Errorf(format, args...)}
	}
}

type placeError struct {
	place string
	err   error
}

func (e *placeError) Error() string { return e.err.Error() }
func (e *placeError) Unwrap() error { return e.err }

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func boolean(m map[string]any, k string) bool {
	v, _ := m[k].(bool)
	return v
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func (b *builder) doc(root map[string]any) *openapi3.T {
	t := &openapi3.T{OpenAPI: str(root, "openapi"), Extensions: xExtensions(root)}
	b.is31 = strings.HasPrefix(t.OpenAPI, "3.1") || strings.HasPrefix(t.OpenAPI, "3.2")
	if info := obj(root["info"]); info != nil {
		t.Info = &openapi3.Info{Title: str(info, "title"), Version: str(info, "version"), Description: str(info, "description")}
	} else {
		t.Info = &openapi3.Info{}
	}
	t.Servers = b.servers(root["servers"])
	t.Security = b.security(root["security"])
	t.Components = b.components(obj(root["components"]))
	t.Paths = openapi3.NewPaths()
	if paths := obj(root["paths"]); paths != nil && b.deferPaths && b.dropPaths && !b.external && deferrable(paths) {
		b.deferred = paths
	} else if paths != nil {
		for p, v := range paths {
			if strings.HasPrefix(p, "x-") {
				continue
			}
			raw, lazy := v.(rawPathItem)
			if lazy {
				var err error
				if v, err = b.dec.pathItem(raw); err != nil {
					b.fail("paths."+p, "%w", err)
					break
				}
			}
			if item := obj(v); item != nil {
				b.transient = lazy
				t.Paths.Set(p, b.pathItem("paths."+p, item))
				b.transient = false
			}
			if b.dropPaths {
				delete(paths, p)
			}
		}
	} else if root["paths"] != nil {
		b.fail("paths", "not an object")
	}
	return t
}

func xExtensions(m map[string]any) map[string]any {
	var ext map[string]any
	for k, v := range m {
		if strings.HasPrefix(k, "x-") {
			if ext == nil {
				ext = map[string]any{}
			}
			ext[k] = v
		}
	}
	return ext
}

func (b *builder) servers(v any) openapi3.Servers {
	list, _ := v.([]any)
	var out openapi3.Servers
	for _, e := range list {
		m := obj(e)
		if m == nil {
			continue
		}
		s := &openapi3.Server{URL: str(m, "url"), Description: str(m, "description")}
		if vars := obj(m["variables"]); vars != nil {
			s.Variables = map[string]*openapi3.ServerVariable{}
			for name, vv := range vars {
				vm := obj(vv)
				if vm == nil {
					continue
				}
				sv := &openapi3.ServerVariable{Default: fmt.Sprint(vm["default"]), Description: str(vm, "description")}
				if enum, ok := vm["enum"].([]any); ok {
					for _, e := range enum {
						sv.Enum = append(sv.Enum, fmt.Sprint(e))
					}
				}
				s.Variables[name] = sv
			}
		}
		out = append(out, s)
	}
	return out
}

func (b *builder) security(v any) openapi3.SecurityRequirements {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	out := openapi3.SecurityRequirements{}
	for _, e := range list {
		m := obj(e)
		req := openapi3.SecurityRequirement{}
		for name, scopes := range m {
			var ss []string
			if l, ok := scopes.([]any); ok {
				for _, s := range l {
					ss = append(ss, fmt.Sprint(s))
				}
			}
			if ss == nil {
				ss = []string{}
			}
			req[name] = ss
		}
		out = append(out, req)
	}
	return out
}

func (b *builder) components(m map[string]any) *openapi3.Components {
	c := &openapi3.Components{}
	if m == nil {
		return c
	}
	if s := obj(m["schemas"]); s != nil {
		c.Schemas = make(openapi3.Schemas, len(s))
		for k, v := range s {
			place := "components.schemas." + k
			if m, ok := v.(map[string]any); ok && m["$ref"] == nil {
				c.Schemas[k] = &openapi3.SchemaRef{Value: b.schemaNode(place, m)}
			} else {
				c.Schemas[k] = b.schemaRef(place, v)
			}
		}
	}
	if s := obj(m["parameters"]); s != nil {
		c.Parameters = make(openapi3.ParametersMap, len(s))
		for k, v := range s {
			c.Parameters[k] = b.parameterRef("components.parameters."+k, v)
		}
	}
	if s := obj(m["headers"]); s != nil {
		c.Headers = make(openapi3.Headers, len(s))
		for k, v := range s {
			c.Headers[k] = b.headerRef("components.headers."+k, v)
		}
	}
	if s := obj(m["requestBodies"]); s != nil {
		c.RequestBodies = make(openapi3.RequestBodies, len(s))
		for k, v := range s {
			c.RequestBodies[k] = b.requestBodyRef("components.requestBodies."+k, v)
		}
	}
	if s := obj(m["responses"]); s != nil {
		c.Responses = make(openapi3.ResponseBodies, len(s))
		for k, v := range s {
			c.Responses[k] = b.responseRef("components.responses."+k, v)
		}
	}
	if s := obj(m["securitySchemes"]); s != nil {
		c.SecuritySchemes = make(openapi3.SecuritySchemes, len(s))
		for k, v := range s {
			c.SecuritySchemes[k] = b.securitySchemeRef("components.securitySchemes."+k, v)
		}
	}
	return c
}

// localRef reads m's $ref: empty when m is no reference. follow says the
// reference is local and may be followed, to target (the caller builds
// it, then leaves the reference: b.refDepth--); otherwise it is external
// (noted) or cannot be followed (already reported).
func (b *builder) localRef(place string, m map[string]any) (ref string, target any, follow bool) {
	ref = str(m, "$ref")
	if ref == "" {
		return "", nil, false
	}
	if !isLocal(ref) {
		b.external = true
		return ref, nil, false
	}
	if t, ok := b.target(place, ref); ok && b.follow(place, ref) {
		return ref, t, true
	}
	return ref, nil, false
}

func (b *builder) securitySchemeRef(place string, v any) *openapi3.SecuritySchemeRef {
	m := obj(v)
	if m == nil {
		return &openapi3.SecuritySchemeRef{Value: &openapi3.SecurityScheme{}}
	}
	if ref, target, follow := b.localRef(place, m); ref != "" {
		r := &openapi3.SecuritySchemeRef{Ref: ref}
		if follow {
			r.Value = b.securitySchemeRef(place, target).Value
			b.refDepth--
		}
		return r
	}
	return &openapi3.SecuritySchemeRef{Value: memoized(b.memo.security, b.memoizes(), m, func() *openapi3.SecurityScheme { return b.securityScheme(m) })}
}

func (b *builder) securityScheme(m map[string]any) *openapi3.SecurityScheme {
	s := &openapi3.SecurityScheme{Type: str(m, "type"), Description: str(m, "description"), Name: str(m, "name"), In: str(m, "in"),
		Scheme: str(m, "scheme"), BearerFormat: str(m, "bearerFormat"), OpenIdConnectUrl: str(m, "openIdConnectUrl")}
	if flows := obj(m["flows"]); flows != nil {
		s.Flows = &openapi3.OAuthFlows{}
		flow := func(k string) *openapi3.OAuthFlow {
			f := obj(flows[k])
			if f == nil {
				return nil
			}
			out := &openapi3.OAuthFlow{AuthorizationURL: str(f, "authorizationUrl"), TokenURL: str(f, "tokenUrl"), RefreshURL: str(f, "refreshUrl"), Scopes: map[string]string{}}
			for name, d := range obj(f["scopes"]) {
				out.Scopes[name] = fmt.Sprint(d)
			}
			return out
		}
		s.Flows.Implicit, s.Flows.Password = flow("implicit"), flow("password")
		s.Flows.ClientCredentials, s.Flows.AuthorizationCode = flow("clientCredentials"), flow("authorizationCode")
	}
	return s
}

func (b *builder) pathItem(place string, m map[string]any) *openapi3.PathItem {
	item := &openapi3.PathItem{Ref: str(m, "$ref"), Summary: str(m, "summary"), Description: str(m, "description")}
	if item.Ref != "" {
		b.external = true // kin's loader resolves path item references
	}
	item.Servers = b.servers(m["servers"])
	item.Parameters = b.parameters(place+".parameters", m["parameters"])
	for _, method := range methodOrder() {
		lm := strings.ToLower(method)
		if om := obj(m[lm]); om != nil {
			item.SetOperation(method, b.operation(place+"."+lm, om))
		} else if m[lm] != nil {
			b.fail(place+"."+lm, "operation is not an object")
		}
	}
	return item
}

func (b *builder) operation(place string, m map[string]any) *openapi3.Operation {
	op := &openapi3.Operation{
		Summary: str(m, "summary"), Description: str(m, "description"), OperationID: fmt.Sprint(orEmpty(m["operationId"])),
		Deprecated: boolean(m, "deprecated"), Extensions: xExtensions(m),
	}
	if tags, ok := m["tags"].([]any); ok {
		for _, t := range tags {
			op.Tags = append(op.Tags, fmt.Sprint(t))
		}
	}
	op.Parameters = b.parameters(place+".parameters", m["parameters"])
	if rb := m["requestBody"]; rb != nil {
		op.RequestBody = b.requestBodyRef(place+".requestBody", rb)
	}
	op.Responses = openapi3.NewResponses()
	if rs := obj(m["responses"]); rs != nil {
		op.Responses = openapi3.NewResponsesWithCapacity(len(rs))
		for code, v := range rs {
			if strings.HasPrefix(code, "x-") {
				continue
			}
			op.Responses.Set(code, b.responseRef(place+".responses."+code, v))
		}
	}
	if sec, ok := m["security"]; ok {
		s := b.security(sec)
		if s == nil {
			s = openapi3.SecurityRequirements{}
		}
		op.Security = &s
	}
	if srv, ok := m["servers"]; ok {
		s := b.servers(srv)
		op.Servers = &s
	}
	return op
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

func (b *builder) parameters(place string, v any) openapi3.Parameters {
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		b.fail(place, "not an array")
		return nil
	}
	out := make(openapi3.Parameters, 0, len(list))
	for i, e := range list {
		out = append(out, b.parameterRef(fmt.Sprintf("%s[%d]", place, i), e))
	}
	return out
}

func (b *builder) parameterRef(place string, v any) *openapi3.ParameterRef {
	m := obj(v)
	if m == nil {
		b.fail(place, "parameter is not an object")
		return &openapi3.ParameterRef{}
	}
	if ref, target, follow := b.localRef(place, m); ref != "" {
		r := &openapi3.ParameterRef{Ref: ref}
		if follow {
			r.Value = b.parameterRef(place, target).Value
			b.refDepth--
		}
		return r
	}
	return &openapi3.ParameterRef{Value: memoized(b.memo.parameters, b.memoizes(), m, func() *openapi3.Parameter { return b.parameter(place, m) })}
}

func (b *builder) parameter(place string, m map[string]any) *openapi3.Parameter {
	p := &openapi3.Parameter{
		Name: str(m, "name"), In: str(m, "in"), Description: str(m, "description"), Style: str(m, "style"),
		AllowEmptyValue: boolean(m, "allowEmptyValue"), AllowReserved: boolean(m, "allowReserved"),
		Deprecated: boolean(m, "deprecated"), Required: boolean(m, "required"),
	}
	if e, ok := m["explode"].(bool); ok {
		p.Explode = &e
	}
	if s, ok := m["schema"]; ok {
		p.Schema = b.schemaRef(place+".schema", s)
	}
	if c := obj(m["content"]); c != nil {
		p.Content = b.content(place+".content", c)
	}
	return p
}

func (b *builder) headerRef(place string, v any) *openapi3.HeaderRef {
	m := obj(v)
	if m == nil {
		return &openapi3.HeaderRef{Value: &openapi3.Header{}}
	}
	if ref, target, follow := b.localRef(place, m); ref != "" {
		r := &openapi3.HeaderRef{Ref: ref}
		if follow {
			r.Value = b.headerRef(place, target).Value
			b.refDepth--
		}
		return r
	}
	return &openapi3.HeaderRef{Value: memoized(b.memo.headers, b.memoizes(), m, func() *openapi3.Header { return &openapi3.Header{Parameter: *b.parameter(place, m)} })}
}

func (b *builder) requestBodyRef(place string, v any) *openapi3.RequestBodyRef {
	m := obj(v)
	if m == nil {
		b.fail(place, "request body is not an object")
		return &openapi3.RequestBodyRef{}
	}
	if ref, target, follow := b.localRef(place, m); ref != "" {
		r := &openapi3.RequestBodyRef{Ref: ref}
		if follow {
			r.Value = b.requestBodyRef(place, target).Value
			b.refDepth--
		}
		return r
	}
	return &openapi3.RequestBodyRef{Value: memoized(b.memo.bodies, b.memoizes(), m, func() *openapi3.RequestBody {
		rb := &openapi3.RequestBody{Description: str(m, "description"), Required: boolean(m, "required")}
		rb.Content = b.content(place+".content", obj(m["content"]))
		return rb
	})}
}

func (b *builder) responseRef(place string, v any) *openapi3.ResponseRef {
	m := obj(v)
	if m == nil {
		return &openapi3.ResponseRef{Value: &openapi3.Response{}}
	}
	if ref, target, follow := b.localRef(place, m); ref != "" {
		r := &openapi3.ResponseRef{Ref: ref}
		if follow {
			r.Value = b.responseRef(place, target).Value
			b.refDepth--
		}
		return r
	}
	return &openapi3.ResponseRef{Value: memoized(b.memo.responses, b.memoizes(), m, func() *openapi3.Response { return b.response(place, m) })}
}

func (b *builder) response(place string, m map[string]any) *openapi3.Response {
	desc := str(m, "description")
	r := &openapi3.Response{Description: &desc}
	if c := obj(m["content"]); c != nil {
		r.Content = b.content(place+".content", c)
	}
	if h := obj(m["headers"]); h != nil {
		r.Headers = make(openapi3.Headers, len(h))
		for k, v := range h {
			r.Headers[k] = b.headerRef(place+".headers."+k, v)
		}
	}
	return r
}

func (b *builder) content(place string, m map[string]any) openapi3.Content {
	if m == nil {
		return nil
	}
	c := make(openapi3.Content, len(m))
	for ct, v := range m {
		mm := obj(v)
		mt := &openapi3.MediaType{}
		if mm != nil {
			if s, ok := mm["schema"]; ok {
				mt.Schema = b.schemaRef(place+"."+ct+".schema", s)
			}
			if enc := obj(mm["encoding"]); enc != nil {
				mt.Encoding = make(map[string]*openapi3.Encoding, len(enc))
				for name, ev := range enc {
					em := obj(ev)
					if em == nil {
						continue
					}
					e := &openapi3.Encoding{ContentType: str(em, "contentType"), Style: str(em, "style"), AllowReserved: boolean(em, "allowReserved")}
					if x, ok := em["explode"].(bool); ok {
						e.Explode = &x
					}
					mt.Encoding[name] = e
				}
			}
		}
		c[ct] = mt
	}
	return c
}

// schemaRef builds a schema or a reference to one.
func (b *builder) schemaRef(place string, v any) *openapi3.SchemaRef {
	switch x := v.(type) {
	case bool:
		return &openapi3.SchemaRef{Value: &openapi3.Schema{Always: &x}}
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok && ref != "" {
			if !b.is31 || !hasSchemaSiblings(x) {
				r := b.refTo(place, ref)
				// A description written beside $ref is kept for the agent
				// (2020-12 allows it there).
				if d, ok := x["description"].(string); ok && strings.TrimSpace(d) != "" {
					if b.refDescriptions == nil {
						b.refDescriptions = map[*openapi3.SchemaRef]string{}
					}
					b.refDescriptions[r] = strings.TrimSpace(d)
				}
				return r
			}
			// OpenAPI 3.1: keywords beside $ref apply too; keep both.
			s := &openapi3.Schema{}
			b.fillSchema(place, s, x)
			s.AllOf = append(openapi3.SchemaRefs{b.refTo(place, ref)}, s.AllOf...)
			return &openapi3.SchemaRef{Value: s}
		}
		s := &openapi3.Schema{}
		b.fillSchema(place, s, x)
		return &openapi3.SchemaRef{Value: s}
	default:
		b.warn(place, "schema is not an object or boolean; treated as an empty schema")
		return &openapi3.SchemaRef{Value: &openapi3.Schema{}}
	}
}

// refTo is a schema reference: resolved here when local, else left for
// kin's loader.
func (b *builder) refTo(place, ref string) *openapi3.SchemaRef {
	if !isLocal(ref) {
		b.external = true
		return &openapi3.SchemaRef{Ref: ref}
	}
	return &openapi3.SchemaRef{Ref: ref, Value: b.schemaTarget(place, ref)}
}

func hasSchemaSiblings(m map[string]any) bool {
	for k := range m {
		switch {
		case k == "$ref", strings.HasPrefix(k, "x-"), k == "description", k == "summary", k == "title", k == "example", k == "examples", k == "$comment", k == "deprecated":
		default:
			return true
		}
	}
	return false
}

func num(v any) *float64 {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return nil
		}
		return &f
	case float64:
		return &x
	}
	return nil
}

func unum(v any) *uint64 {
	f := num(v)
	if f == nil || *f < 0 {
		return nil
	}
	u := uint64(*f)
	return &u
}

func (b *builder) schemaRefs(place string, v any) openapi3.SchemaRefs {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make(openapi3.SchemaRefs, 0, len(list))
	for _, e := range list {
		out = append(out, b.schemaRef(place, e))
	}
	return out
}

func (b *builder) schemaMap(place string, v any) openapi3.Schemas {
	m := obj(v)
	if m == nil {
		return nil
	}
	out := make(openapi3.Schemas, len(m))
	for k, e := range m {
		out[k] = b.schemaRef(place, e)
	}
	return out
}

func (b *builder) optRef(place string, v any) *openapi3.SchemaRef {
	if v == nil {
		return nil
	}
	return b.schemaRef(place, v)
}

func (b *builder) boolSchema(place string, v any) openapi3.BoolSchema {
	switch x := v.(type) {
	case bool:
		return openapi3.BoolSchema{Has: &x}
	case map[string]any:
		return openapi3.BoolSchema{Schema: b.schemaRef(place, x)}
	}
	return openapi3.BoolSchema{}
}

// fillSchema fills s from a decoded schema object.
func (b *builder) fillSchema(place string, s *openapi3.Schema, m map[string]any) {
	*s = openapi3.Schema{
		Title: str(m, "title"), Format: str(m, "format"), Description: str(m, "description"),
		Default: m["default"], Example: m["example"], Const: m["const"],
		UniqueItems: boolean(m, "uniqueItems"), Nullable: boolean(m, "nullable"), ReadOnly: boolean(m, "readOnly"),
		WriteOnly: boolean(m, "writeOnly"), Deprecated: boolean(m, "deprecated"), Pattern: str(m, "pattern"),
		ContentMediaType: str(m, "contentMediaType"), ContentEncoding: str(m, "contentEncoding"),
	}
	switch t := m["type"].(type) {
	case string:
		s.Type = &openapi3.Types{t}
	case []any:
		ts := make(openapi3.Types, 0, len(t))
		for _, e := range t {
			if es, ok := e.(string); ok {
				ts = append(ts, es)
			}
		}
		s.Type = &ts
	}
	if enum, ok := m["enum"].([]any); ok {
		s.Enum = enum
	}
	if ex, ok := m["examples"].([]any); ok {
		s.Examples = ex
	}
	s.Min, s.Max, s.MultipleOf = num(m["minimum"]), num(m["maximum"]), num(m["multipleOf"])
	for k, dst := range map[string]*openapi3.ExclusiveBound{"exclusiveMinimum": &s.ExclusiveMin, "exclusiveMaximum": &s.ExclusiveMax} {
		switch x := m[k].(type) {
		case bool:
			dst.Bool = &x
		default:
			dst.Value = num(x)
		}
	}
	if u := unum(m["minLength"]); u != nil {
		s.MinLength = *u
	}
	s.MaxLength = unum(m["maxLength"])
	if u := unum(m["minItems"]); u != nil {
		s.MinItems = *u
	}
	s.MaxItems = unum(m["maxItems"])
	if u := unum(m["minProperties"]); u != nil {
		s.MinProps = *u
	}
	s.MaxProps = unum(m["maxProperties"])
	s.MinContains, s.MaxContains = unum(m["minContains"]), unum(m["maxContains"])
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if rs, ok := r.(string); ok {
				s.Required = append(s.Required, rs)
			}
		}
	}
	switch it := m["items"].(type) {
	case nil:
	case []any: // draft-4 tuple form
		s.PrefixItems = b.schemaRefs(place, it)
	default:
		s.Items = b.schemaRef(place, it)
	}
	if pi, ok := m["prefixItems"]; ok {
		s.PrefixItems = b.schemaRefs(place, pi)
	}
	s.Properties = b.schemaMap(place, m["properties"])
	s.PatternProperties = b.schemaMap(place, m["patternProperties"])
	s.DependentSchemas = b.schemaMap(place, m["dependentSchemas"])
	s.AdditionalProperties = b.boolSchema(place, m["additionalProperties"])
	s.UnevaluatedProperties = b.boolSchema(place, m["unevaluatedProperties"])
	s.UnevaluatedItems = b.boolSchema(place, m["unevaluatedItems"])
	s.AllOf = b.schemaRefs(place, m["allOf"])
	s.AnyOf = b.schemaRefs(place, m["anyOf"])
	s.OneOf = b.schemaRefs(place, m["oneOf"])
	s.Not = b.optRef(place, m["not"])
	s.If, s.Then, s.Else = b.optRef(place, m["if"]), b.optRef(place, m["then"]), b.optRef(place, m["else"])
	s.Contains = b.optRef(place, m["contains"])
	s.PropertyNames = b.optRef(place, m["propertyNames"])
	s.ContentSchema = b.optRef(place, m["contentSchema"])
	// $defs and definitions are not built here: a reference into them is
	// resolved where it points (refs.go), and nothing else reads them.
	if dr := obj(m["dependentRequired"]); dr != nil {
		s.DependentRequired = map[string][]string{}
		for k, v := range dr {
			l, _ := v.([]any)
			for _, e := range l {
				s.DependentRequired[k] = append(s.DependentRequired[k], fmt.Sprint(e))
			}
		}
	}
}
