package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// This file converts kin-openapi schemas (OpenAPI 3.0 or 3.1 dialect) into
// JSON Schema 2020-12 values (maps, slices, scalars and bools ready for
// encoding/json). References become "#/$defs/NAME"; each referenced schema is
// converted once per mode and kept encoded, with the list of the schemas it
// references, so a tool's $defs are the transitive closure of its roots.

type schemaMode int

const (
	modeInput  schemaMode = iota // readOnly properties dropped
	modeOutput                   // writeOnly properties dropped
)

// defNamer gives every referenced schema (by identity) a unique $defs name,
// shared by both modes so names are stable within a document.
type defNamer struct {
	names map[*openapi3.Schema]string
	used  map[string]bool
}

func newDefNamer() *defNamer {
	return &defNamer{names: map[*openapi3.Schema]string{}, used: map[string]bool{}}
}

func (n *defNamer) name(s *openapi3.Schema, ref string) string {
	if name, ok := n.names[s]; ok {
		return name
	}
	base := ref
	if i := strings.LastIndex(base, "#/components/schemas/"); i >= 0 && !strings.Contains(base[i+len("#/components/schemas/"):], "/") {
		base = base[i+len("#/components/schemas/"):]
	} else if i := strings.LastIndexAny(base, "/#"); i >= 0 && i+1 < len(base) {
		base = base[i+1:]
	}
	base = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(base, ".json"), ".yaml"), ".yml")
	base = sanitizeIdent(base, "_.-", 100)
	if base == "" {
		base = "schema"
	}
	name := base
	for i := 2; n.used[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	n.used[name] = true
	n.names[s] = name
	return name
}

type defEntry struct {
	name string
	raw  []byte             // encoded converted schema; nil while being built
	deps []*openapi3.Schema // schemas it references directly
}

// schemaConverter converts schemas for one mode and caches the $defs.
type schemaConverter struct {
	mode  schemaMode
	namer *defNamer
	defs  map[*openapi3.Schema]*defEntry
	warn  func(string)
	// patterns caches the portable spelling of each pattern ("" when it
	// has none).
	patterns map[string]string
	// compact: references are inlined to a bounded depth instead of
	// becoming $defs (compact.go); depth is the current nesting, inline
	// the current inlining (compositions included), nodes the subschemas
	// inlined in the schema being built.
	compact              bool
	depth, inline, nodes int
	nodeLimit            int // compactNodes, or less for a retry
	depthLimit           int // compactDepth, or less for a retry
	// scratch is where a schema is encoded before it is copied out at its
	// size (kept by the thousand, a buffer's slack would add up).
	scratch      []byte
	compactCache map[compactKey]compactEntry
	// refDescriptions: descriptions written beside $refs (may be nil).
	refDescriptions map[*openapi3.SchemaRef]string
}

func newSchemaConverter(mode schemaMode, namer *defNamer, warn func(string)) *schemaConverter {
	return &schemaConverter{mode: mode, namer: namer, defs: map[*openapi3.Schema]*defEntry{}, warn: warn, patterns: map[string]string{}}
}

// deps collects the defs a schema being built refers to.
type deps map[*openapi3.Schema]struct{}

// convertRef converts a schema reference; refs become $ref to $defs.
func (c *schemaConverter) convertRef(r *openapi3.SchemaRef, d deps) any {
	if c.compact {
		return c.compactRef(r, d)
	}
	if r == nil || r.Value == nil {
		return map[string]any{}
	}
	if r.Ref != "" {
		c.def(r.Value, r.Ref)
		d[r.Value] = struct{}{}
		m := map[string]any{"$ref": "#/$defs/" + c.namer.name(r.Value, r.Ref)}
		if desc, ok := c.refDescriptions[r]; ok {
			m["description"] = desc
		}
		return m
	}
	return c.convert(r.Value, d)
}

// def makes sure the referenced schema is converted and cached.
func (c *schemaConverter) def(s *openapi3.Schema, ref string) *defEntry {
	if e, ok := c.defs[s]; ok {
		return e
	}
	e := &defEntry{name: c.namer.name(s, ref)}
	c.defs[s] = e
	d := deps{}
	v := c.convert(s, d)
	raw, err := c.encode(v)
	if err != nil {
		c.warn(fmt.Sprintf("schema %s: %v", e.name, err))
		raw = []byte("{}")
	}
	e.raw = raw
	e.deps = make([]*openapi3.Schema, 0, len(d))
	for dep := range d {
		e.deps = append(e.deps, dep)
	}
	slices.SortFunc(e.deps, func(a, b *openapi3.Schema) int { return strings.Compare(c.namer.names[a], c.namer.names[b]) })
	return e
}

// encodeWithDefs encodes root (an object) and appends "$defs" holding the
// transitive closure of d, sorted by name. With budget > 0, $defs are taken
// breadth-first from the root while the encoding stays within budget bytes;
// the ones beyond become `true` (any value), so every $ref still resolves and
// the schema stays truthful, only less detailed far from the root. trimmed
// counts those.
func (c *schemaConverter) encodeWithDefs(root map[string]any, d deps, budget int) (raw []byte, trimmed int, err error) {
	raw, err = c.encode(root)
	if err != nil {
		return nil, 0, err
	}
	if len(d) == 0 {
		return raw, 0, nil
	}
	// The `true` entries take room too: shrink the budget by the overshoot
	// and try again, a few times.
	b := budget
	for range 4 {
		out, trimmed := c.appendDefs(raw, d, b)
		if budget <= 0 || len(out) <= budget || b <= len(raw) {
			return out, trimmed, nil
		}
		b -= len(out) - budget + 1024
	}
	out, trimmed := c.appendDefs(raw, d, max(b, 1))
	return out, trimmed, nil
}

// encode encodes a converted schema (appendTree), in a buffer of its size.
func (c *schemaConverter) encode(v any) ([]byte, error) {
	var err error
	if c.scratch, err = appendTree(c.scratch[:0], v); err != nil {
		return nil, err
	}
	return bytes.Clone(c.scratch), nil
}

func (c *schemaConverter) appendDefs(raw []byte, d deps, budget int) ([]byte, int) {
	trimmed := 0
	queue := make([]*defEntry, 0, len(d))
	for s := range d {
		queue = append(queue, c.defs[s])
	}
	slices.SortFunc(queue, func(a, b *defEntry) int { return strings.Compare(a.name, b.name) })
	seen := make(map[*defEntry]bool, len(queue))
	for _, e := range queue {
		seen[e] = true
	}
	type out struct {
		e    *defEntry
		full bool
	}
	var entries []out
	size := len(raw) + 16
	for i := 0; i < len(queue); i++ {
		e := queue[i]
		cost := len(e.name) + len(e.raw) + 4
		if budget > 0 && size+cost > budget {
			entries = append(entries, out{e, false})
			trimmed++
			size += len(e.name) + 8
			continue
		}
		size += cost
		entries = append(entries, out{e, true})
		for _, dep := range e.deps {
			de := c.defs[dep]
			if !seen[de] {
				seen[de] = true
				queue = append(queue, de)
			}
		}
	}
	slices.SortFunc(entries, func(a, b out) int { return strings.Compare(a.e.name, b.e.name) })
	var buf bytes.Buffer
	buf.Grow(size)
	buf.Write(raw[:len(raw)-1])
	if len(raw) > 2 {
		buf.WriteByte(',')
	}
	buf.WriteString(`"$defs":{`)
	for i, o := range entries {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteByte('"')
		buf.WriteString(o.e.name)
		buf.WriteString(`":`)
		if o.full {
			buf.Write(o.e.raw)
		} else {
			buf.WriteString("true")
		}
	}
	buf.WriteString("}}")
	return buf.Bytes(), trimmed
}

// convert converts one schema value (not a reference) into a 2020-12
// schema, keyword family by keyword family.
func (c *schemaConverter) convert(s *openapi3.Schema, d deps) any {
	if s.Always != nil {
		return *s.Always
	}
	m := make(map[string]any, 8)
	types, nullable := c.annotationKeywords(m, s)
	numberKeywords(m, s)
	c.stringKeywords(m, s, d)
	c.arrayKeywords(m, s, d)
	c.objectKeywords(m, s, d)
	c.compositionKeywords(m, s, d)
	// nullable without a type: allow null alongside whatever it is.
	if nullable && len(types) == 0 && len(m) > 0 {
		return map[string]any{"anyOf": []any{m, map[string]any{"type": "null"}}}
	}
	return m
}

// annotationKeywords sets type (with OpenAPI 3.0's nullable and Swagger's
// file folded in), title, description, format, enum, const, default,
// examples and the boolean flags. It returns the types and nullable.
func (c *schemaConverter) annotationKeywords(m map[string]any, s *openapi3.Schema) (types []string, nullable bool) {
	if s.Type != nil {
		for _, t := range *s.Type {
			switch t {
			case "file": // Swagger 2.0 file
				t = "string"
			case "":
				continue
			}
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	nullable = s.Nullable
	if nullable && len(types) > 0 && !slices.Contains(types, "null") {
		types = append(types, "null")
	}
	switch len(types) {
	case 0:
	case 1:
		m["type"] = types[0]
	default:
		m["type"] = types
	}
	if s.Title != "" {
		m["title"] = strings.TrimSpace(s.Title)
	}
	if desc := strings.TrimSpace(s.Description); desc != "" {
		m["description"] = plainText(desc)
	}
	if s.Format != "" {
		m["format"] = s.Format
		if s.Format == "binary" && slices.Contains(types, "string") && s.ContentEncoding == "" {
			m["contentEncoding"] = "base64"
		}
	}
	if len(s.Enum) > 0 {
		enum := slices.Clone(s.Enum)
		if nullable && len(types) > 0 && !slices.Contains(enum, nil) {
			enum = append(enum, nil)
		}
		m["enum"] = enum
	}
	if s.Const != nil {
		m["const"] = s.Const
	}
	if s.Default != nil {
		m["default"] = s.Default
	}
	var examples []any
	if s.Example != nil {
		examples = append(examples, s.Example)
	}
	examples = append(examples, s.Examples...)
	if len(examples) > 0 {
		m["examples"] = examples
	}
	if s.Deprecated {
		m["deprecated"] = true
	}
	if s.ReadOnly {
		m["readOnly"] = true
	}
	if s.WriteOnly {
		m["writeOnly"] = true
	}
	return types, nullable
}

// numberKeywords sets the numeric bounds. OpenAPI 3.0 exclusive bounds are
// booleans modifying minimum/maximum; 2020-12 has numeric exclusive bounds.
func numberKeywords(m map[string]any, s *openapi3.Schema) {
	if s.Min != nil {
		m["minimum"] = *s.Min
	}
	if s.Max != nil {
		m["maximum"] = *s.Max
	}
	if b := s.ExclusiveMin; b.Value != nil {
		m["exclusiveMinimum"] = *b.Value
	} else if b.Bool != nil && *b.Bool && s.Min != nil {
		m["exclusiveMinimum"] = *s.Min
		delete(m, "minimum")
	}
	if b := s.ExclusiveMax; b.Value != nil {
		m["exclusiveMaximum"] = *b.Value
	} else if b.Bool != nil && *b.Bool && s.Max != nil {
		m["exclusiveMaximum"] = *s.Max
		delete(m, "maximum")
	}
	if s.MultipleOf != nil && *s.MultipleOf > 0 {
		m["multipleOf"] = *s.MultipleOf
	}
}

// stringKeywords sets lengths, the (portable) pattern and content keywords.
func (c *schemaConverter) stringKeywords(m map[string]any, s *openapi3.Schema, d deps) {
	if s.MinLength > 0 {
		m["minLength"] = s.MinLength
	}
	if s.MaxLength != nil {
		m["maxLength"] = *s.MaxLength
	}
	if s.Pattern != "" {
		if q, ok := c.pattern(s.Pattern); ok {
			m["pattern"] = q
		} else {
			desc, _ := m["description"].(string)
			m["description"] = withPatternNote(desc, s.Pattern)
		}
	}
	if s.ContentMediaType != "" {
		m["contentMediaType"] = s.ContentMediaType
	}
	if s.ContentEncoding != "" {
		m["contentEncoding"] = s.ContentEncoding
	}
	if s.ContentSchema != nil {
		m["contentSchema"] = c.convertRef(s.ContentSchema, d)
	}
}

// arrayKeywords sets items, prefixItems, contains and the counts.
func (c *schemaConverter) arrayKeywords(m map[string]any, s *openapi3.Schema, d deps) {
	if s.Items != nil {
		// A list's items are not a level of nesting of their own.
		c.depth--
		m["items"] = c.convertRef(s.Items, d)
		c.depth++
	}
	if len(s.PrefixItems) > 0 {
		m["prefixItems"] = c.convertRefs(s.PrefixItems, d)
	}
	if s.MinItems > 0 {
		m["minItems"] = s.MinItems
	}
	if s.MaxItems != nil {
		m["maxItems"] = *s.MaxItems
	}
	if s.UniqueItems {
		m["uniqueItems"] = true
	}
	if s.Contains != nil {
		m["contains"] = c.convertRef(s.Contains, d)
	}
	if s.MinContains != nil {
		m["minContains"] = *s.MinContains
	}
	if s.MaxContains != nil {
		m["maxContains"] = *s.MaxContains
	}
	if v, ok := c.boolSchema(s.UnevaluatedItems, d); ok && !c.compact {
		m["unevaluatedItems"] = v
	}
}

// objectKeywords sets properties (without the ones the mode hides),
// required, additional and pattern properties, and the dependencies.
func (c *schemaConverter) objectKeywords(m map[string]any, s *openapi3.Schema, d deps) {
	if len(s.Properties) > 0 {
		props, dropped := c.properties(s.Properties, d)
		m["properties"] = props
		if req := filterRequired(s.Required, dropped); len(req) > 0 {
			m["required"] = req
		}
	} else if req := filterRequired(s.Required, nil); len(req) > 0 {
		m["required"] = req // 2020-12 wants the names unique
	}
	if closedComposition(s) {
		// additionalProperties: false beside allOf/anyOf/oneOf would, read
		// literally, refuse every property the compositions define (no
		// object could be sent); documents mean "nothing beyond them",
		// which 2020-12 says with unevaluatedProperties.
		if !c.compact {
			m["unevaluatedProperties"] = false
		}
	} else if v, ok := c.boolSchema(s.AdditionalProperties, d); ok {
		m["additionalProperties"] = v
	}
	if v, ok := c.boolSchema(s.UnevaluatedProperties, d); ok && !c.compact {
		// (compact: cut subschemas evaluate fewer properties)
		m["unevaluatedProperties"] = v
	}
	if len(s.PatternProperties) > 0 {
		pp := make(map[string]any, len(s.PatternProperties))
		for _, k := range sortedKeys(s.PatternProperties) {
			if q, ok := c.pattern(k); ok {
				if _, dup := pp[q]; !dup {
					pp[q] = c.convertRef(s.PatternProperties[k], d)
				}
			}
		}
		if len(pp) > 0 {
			m["patternProperties"] = pp
		}
	}
	if s.PropertyNames != nil {
		m["propertyNames"] = c.convertRef(s.PropertyNames, d)
	}
	if s.MinProps > 0 {
		m["minProperties"] = s.MinProps
	}
	if s.MaxProps != nil {
		m["maxProperties"] = *s.MaxProps
	}
	if len(s.DependentRequired) > 0 {
		m["dependentRequired"] = s.DependentRequired
	}
	if len(s.DependentSchemas) > 0 {
		ds := make(map[string]any, len(s.DependentSchemas))
		for _, k := range sortedKeys(s.DependentSchemas) {
			ds[k] = c.convertRef(s.DependentSchemas[k], d)
		}
		m["dependentSchemas"] = ds
	}
}

// compositionKeywords sets allOf, anyOf, oneOf, not and if/then/else.
// They describe the same value as their parent: no level of nesting.
func (c *schemaConverter) compositionKeywords(m map[string]any, s *openapi3.Schema, d deps) {
	c.depth--
	defer func() { c.depth++ }()
	if len(s.AllOf) > 0 {
		m["allOf"] = c.convertRefs(s.AllOf, d)
	}
	if len(s.AnyOf) > 0 {
		m["anyOf"] = c.convertRefs(s.AnyOf, d)
	}
	if len(s.OneOf) > 0 {
		switch one := c.convertRefs(s.OneOf, d); {
		case !c.compact:
			m["oneOf"] = one
		case m["anyOf"] == nil:
			m["anyOf"] = one // cut members may all match: "exactly one" would refuse
		default:
			m["allOf"] = append(asList(m["allOf"]), map[string]any{"anyOf": one})
		}
	}
	if c.compact {
		return // not and if/then/else over cut schemas could refuse what the full one accepts
	}
	// In this order: $defs names are given on first sight.
	for _, kr := range [...]struct {
		k string
		r *openapi3.SchemaRef
	}{{"not", s.Not}, {"if", s.If}, {"then", s.Then}, {"else", s.Else}} {
		if kr.r != nil {
			m[kr.k] = c.convertRef(kr.r, d)
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func (c *schemaConverter) convertRefs(rs openapi3.SchemaRefs, d deps) []any {
	out := make([]any, 0, len(rs))
	for _, r := range rs {
		out = append(out, c.convertRef(r, d))
	}
	return out
}

func (c *schemaConverter) boolSchema(b openapi3.BoolSchema, d deps) (any, bool) {
	if b.Has != nil {
		return *b.Has, true
	}
	if b.Schema != nil {
		return c.convertRef(b.Schema, d), true
	}
	return nil, false
}

// closedComposition reports whether s says additionalProperties: false
// beside an allOf, anyOf or oneOf whose branches define properties.
func closedComposition(s *openapi3.Schema) bool {
	if s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has || s.UnevaluatedProperties.Has != nil || s.UnevaluatedProperties.Schema != nil {
		return false
	}
	for _, branches := range [...]openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
		for _, b := range branches {
			if b != nil && b.Value != nil && (len(b.Value.Properties) > 0 || len(b.Value.AllOf)+len(b.Value.AnyOf)+len(b.Value.OneOf) > 0) {
				return true
			}
		}
	}
	return false
}

// properties converts a properties map, dropping the ones the mode hides.
func (c *schemaConverter) properties(props openapi3.Schemas, d deps) (map[string]any, map[string]bool) {
	out := make(map[string]any, len(props))
	var dropped map[string]bool
	// Sorted, so that $defs names given on first sight are deterministic.
	for _, k := range sortedKeys(props) {
		v := props[k]
		if c.hidden(v) {
			if dropped == nil {
				dropped = map[string]bool{}
			}
			dropped[k] = true
			continue
		}
		out[k] = c.convertRef(v, d)
	}
	return out, dropped
}

// hidden reports whether a property is left out in this mode: readOnly ones
// from inputs, writeOnly ones from outputs.
func (c *schemaConverter) hidden(r *openapi3.SchemaRef) bool {
	if r == nil || r.Value == nil {
		return false
	}
	if c.mode == modeInput {
		return r.Value.ReadOnly
	}
	return r.Value.WriteOnly
}

func filterRequired(req []string, dropped map[string]bool) []string {
	out := make([]string, 0, len(req))
	for _, r := range req {
		if !dropped[r] && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// pattern returns the spelling of a document pattern that ECMA-262
// unicode-mode validators (Ajv, the TypeScript SDK) and Go's RE2 (the
// gateway's own validation) both compile with the same meaning (see
// pattern.go). A pattern with no such spelling is left out of the schema,
// with one warning each; the caller keeps it in the description.
func (c *schemaConverter) pattern(p string) (string, bool) {
	if q, ok := c.patterns[p]; ok {
		return q, q != "" || p == ""
	}
	q, err := portablePattern(p)
	if err != nil {
		c.warn(fmt.Sprintf("pattern %q dropped from the schema (kept in its description): %v", p, err))
		q = ""
	}
	c.patterns[p] = q
	return q, err == nil
}

// withPatternNote keeps a pattern that left the schema in the description.
func withPatternNote(desc, pattern string) string {
	note := "Must match the pattern `" + pattern + "`."
	if desc == "" {
		return note
	}
	return desc + "\n\n" + note
}

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil
}
