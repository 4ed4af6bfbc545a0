package openapi

import (
	"slices"

	"github.com/getkin/kin-openapi/openapi3"
)

// This file is the compact output schema (issue 14: GitHub's tools/list was
// 8 MiB, Stripe's 20 MiB, most of it outputSchema). A compact outputSchema
// keeps the response's shape near the top and stops there: references are
// inlined (no $defs) down to compactDepth levels of nesting (list items and
// compositions such as allOf do not count as levels); a schema past them
// keeps only its type, so it still says "an object" or "a list" and
// accepts any content; descriptions, titles and examples are kept for the
// root only (the tool's description says the rest). The result is truthful
// (it accepts every response the full schema accepts) and small.

// The output schema modes of [GenerateOptions].OutputSchema.
const (
	OutputSchemaCompact = "compact"
	OutputSchemaFull    = "full"
	OutputSchemaNone    = "none"
)

// compactDepth is how many levels of nesting a compact schema keeps: the
// root and its properties, whose own properties keep their types only. The
// items of a list and the members of a composition sit at their parent's
// level.
const compactDepth = 2

// compactInline bounds how deep references are inlined, compositions
// included (a schema that is allOf itself would go on forever), and
// compactNodes how many subschemas one compact schema may inline: past
// either bound a schema keeps its type only, so the cost stays linear
// whatever the document's fan-out. A compact schema still over
// MaxOutputSchemaBytes is made again one level shallower with fewer nodes,
// and at last cut to its root's type.
const (
	compactInline = compactDepth + 8
	compactNodes  = 2000
)

// compactKey identifies a compact conversion: the same schema at the same
// level converts to the same value.
type compactKey struct {
	s                    *openapi3.Schema
	depth, inline, limit int
}

// compactEntry is a cached compact conversion, encoded once, and the
// subschemas it inlined (charged again to every schema that reuses it).
type compactEntry struct {
	raw   encoded
	nodes int
}

// compactRef converts a reference or schema in compact mode. Below the
// root, conversions are cached by (schema, level) and kept encoded, so a
// type shared by thousands of responses (Microsoft Graph's entities) is
// converted and encoded once.
func (c *schemaConverter) compactRef(r *openapi3.SchemaRef, d deps) any {
	if r == nil || r.Value == nil {
		return map[string]any{}
	}
	if c.depth >= c.depthLimit || c.inline >= compactInline || c.nodes >= c.nodeLimit {
		return shallow(r.Value)
	}
	key := compactKey{r.Value, c.depth, c.inline, c.depthLimit}
	if e, ok := c.compactCache[key]; ok && c.depth >= 1 && c.nodes+e.nodes <= c.nodeLimit {
		c.nodes += e.nodes
		return e.raw
	}
	start := c.nodes
	c.depth++
	c.inline++
	c.nodes++
	defer func() { c.depth--; c.inline-- }()
	v := c.convert(r.Value, d)
	if m, ok := v.(map[string]any); ok && c.depth > 1 {
		delete(m, "description")
		delete(m, "title")
		delete(m, "examples")
	}
	if m, ok := v.(map[string]any); ok && r.Ref != "" && c.depth <= 1 {
		if desc, ok := c.refDescriptions[r]; ok {
			m["description"] = desc
		}
	}
	if c.depth > 1 && c.nodes < c.nodeLimit { // complete, not cut by the budget
		// encode: the same bytes as marshalNoEscape, without reflection,
		// and no buffer slack kept in the cache (it was 5 MB of Graph's)
		if raw, err := c.encode(v); err == nil {
			if c.compactCache == nil {
				c.compactCache = map[compactKey]compactEntry{}
			}
			c.compactCache[key] = compactEntry{raw: raw, nodes: c.nodes - start}
			return encoded(raw)
		}
	}
	return v
}

// shallow is a schema cut at the last level: its type alone.
func shallow(s *openapi3.Schema) map[string]any {
	if s.Type == nil || len(*s.Type) == 0 {
		return map[string]any{}
	}
	types := slices.DeleteFunc(slices.Clone([]string(*s.Type)), func(t string) bool { return t == "" })
	for i, t := range types {
		if t == "file" {
			types[i] = "string"
		}
	}
	if s.Nullable && !slices.Contains(types, "null") {
		types = append(types, "null")
	}
	switch len(types) {
	case 0:
		return map[string]any{}
	case 1:
		return map[string]any{"type": types[0]}
	}
	return map[string]any{"type": types}
}
