package proxy

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/internal/jsonx"
)

// The integer formats of the OpenAPI format registry (int32, int64, and
// the sized and unsigned ones) are annotations for jsonschema as
// openapi.CompileSchema configures it, yet an upstream that declares
// format int64 cannot take 2^63: the proxy enforces their ranges itself,
// on numbers (a string with format int64 is left alone, as the registry
// defines these formats for numbers only).
//
// formatNode is compiled once per endpoint from the inputSchema and follows
// the keywords that say unambiguously which schema applies to a value:
// properties, additionalProperties (without patternProperties), items,
// prefixItems, allOf and local $refs. A format under anyOf, oneOf, not,
// if/then/else or patternProperties is not enforced (which branch applies
// is jsonschema's question); neither is one behind a $ref that is not a
// local JSON pointer.

// intFormat is the range of one integer format.
type intFormat struct {
	name string
	min  int64
	max  uint64
}

var intFormats = map[string]*intFormat{
	"int8":   {"int8", -1 << 7, 1<<7 - 1},
	"int16":  {"int16", -1 << 15, 1<<15 - 1},
	"int32":  {"int32", -1 << 31, 1<<31 - 1},
	"int64":  {"int64", -1 << 63, 1<<63 - 1},
	"uint8":  {"uint8", 0, 1<<8 - 1},
	"uint16": {"uint16", 0, 1<<16 - 1},
	"uint32": {"uint32", 0, 1<<32 - 1},
	"uint64": {"uint64", 0, 1<<64 - 1},
}

// check returns why the canonical number n is not in the format's range,
// or "".
func (f *intFormat) check(n json.Number) string {
	x, err := jsonx.ParseNumber([]byte(n))
	if err != nil {
		return "is not a number"
	}
	in := false
	if i, ok := x.Int64(); ok {
		in = i >= f.min && (i < 0 || uint64(i) <= f.max)
	} else if u, ok := x.Uint64(); ok {
		in = u <= f.max
	}
	switch {
	case in:
		return ""
	case !x.IsInteger():
		return fmt.Sprintf("%s is not an integer (format %s)", n, f.name)
	}
	return fmt.Sprintf("%s is out of range for format %s (%d to %d)", n, f.name, f.min, f.max)
}

// formatNode is what applies at one place of an argument value; see the
// comment above. A nil *formatNode checks nothing.
type formatNode struct {
	format     *intFormat
	props      map[string]*formatNode
	additional *formatNode
	items      *formatNode
	prefix     []*formatNode
	also       []*formatNode // allOf members and the $ref target, on the same value
}

// compileFormats compiles the integer formats of a decoded schema; nil
// when it has none (the common case: nothing to walk per call).
func compileFormats(doc any) *formatNode {
	c := formatCompiler{root: doc, refs: map[string]*formatNode{}}
	n := c.node(doc)
	if !c.found {
		return nil
	}
	return n
}

type formatCompiler struct {
	root  any
	refs  map[string]*formatNode // by JSON pointer; breaks $ref cycles
	found bool
}

func (c *formatCompiler) node(schema any) *formatNode {
	obj, ok := schema.(map[string]any)
	if !ok {
		return nil // true, false or garbage: no format here
	}
	n := &formatNode{}
	if name, ok := obj["format"].(string); ok {
		if n.format = intFormats[name]; n.format != nil {
			c.found = true
		}
	}
	if props, ok := obj["properties"].(map[string]any); ok {
		n.props = make(map[string]*formatNode, len(props))
		for name, sub := range props {
			n.props[name] = c.node(sub) // nil too: declared, so not additional
		}
	}
	if _, hasPatterns := obj["patternProperties"]; !hasPatterns {
		n.additional = c.node(obj["additionalProperties"])
	}
	n.items = c.node(obj["items"])
	if prefix, ok := obj["prefixItems"].([]any); ok {
		for _, sub := range prefix {
			n.prefix = append(n.prefix, c.node(sub))
		}
	}
	if all, ok := obj["allOf"].([]any); ok {
		for _, sub := range all {
			if s := c.node(sub); s != nil {
				n.also = append(n.also, s)
			}
		}
	}
	if ref, ok := obj["$ref"].(string); ok {
		if s := c.ref(ref); s != nil {
			n.also = append(n.also, s)
		}
	}
	return n
}

// ref compiles the target of a local $ref ("#/$defs/Pet") once.
func (c *formatCompiler) ref(ref string) *formatNode {
	if n, ok := c.refs[ref]; ok {
		return n
	}
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil
	}
	target := c.root
	if frag != "" {
		if !strings.HasPrefix(frag, "/") {
			return nil // an anchor, not a pointer
		}
		for _, tok := range strings.Split(frag[1:], "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			switch t := target.(type) {
			case map[string]any:
				target = t[tok]
			case []any:
				i, err := strconv.Atoi(tok)
				if err != nil || i < 0 || i >= len(t) {
					return nil
				}
				target = t[i]
			default:
				return nil
			}
		}
	}
	obj, ok := target.(map[string]any)
	if !ok {
		return nil
	}
	n := &formatNode{}
	c.refs[ref] = n // before compiling, so a cycle finds it
	*n = *c.node(obj)
	return n
}

// check appends a problem for every number of v outside the integer
// format that applies to it; path is v's location (reference tokens).
func (n *formatNode) check(v any, path []string, bad *argErrors) {
	if n == nil {
		return
	}
	switch x := v.(type) {
	case json.Number:
		if n.format != nil {
			if msg := n.format.check(x); msg != "" {
				bad.add("%s: %s", pointer(path), msg)
			}
		}
	case map[string]any:
		if n.props != nil || n.additional != nil {
			for name, member := range x {
				sub, declared := n.props[name]
				if !declared {
					sub = n.additional
				}
				sub.check(member, append(path, name), bad)
			}
		}
	case []any:
		if n.items != nil || n.prefix != nil {
			for i, el := range x {
				sub := n.items
				if i < len(n.prefix) {
					sub = n.prefix[i]
				}
				sub.check(el, append(path, strconv.Itoa(i)), bad)
			}
		}
	}
	for _, s := range n.also {
		s.check(v, path, bad)
	}
}

// pointer writes reference tokens as a JSON pointer ("/" for none).
func pointer(path []string) string {
	if len(path) == 0 {
		return "/"
	}
	return "/" + strings.Join(escapePointer(path), "/")
}
