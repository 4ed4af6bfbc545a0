package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// narrowOutputSchema removes the redacted response paths from an
// outputSchema, so that it describes what the agent receives after
// redaction (seed 003: redaction removes the value; the narrowed schema
// keeps the advertisement honest). A path is dotted property names; a
// segment that lands on an array applies to its items; allOf/anyOf/oneOf
// branches are all followed; a $ref on the way is replaced by a copy of its
// target so that other uses of the same $defs entry are untouched. The last
// segment is removed from "properties" and "required".
func narrowOutputSchema(schema json.RawMessage, paths []string) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, err
	}
	defs, _ := root["$defs"].(map[string]any)
	for _, p := range paths {
		segs := strings.Split(p, ".")
		if p == "" || len(segs) == 0 {
			continue
		}
		narrow(root, segs, defs, 0)
	}
	out, err := marshalNoEscape(root)
	if err != nil {
		return nil, fmt.Errorf("narrowing outputSchema: %w", err)
	}
	return out, nil
}

// narrow applies one path to a schema node (a map); depth bounds $ref
// chains and nesting.
func narrow(node map[string]any, segs []string, defs map[string]any, depth int) {
	if depth > 64 {
		return
	}
	// Inline a $ref so the change stays local to this place.
	if ref, ok := node["$ref"].(string); ok && strings.HasPrefix(ref, "#/$defs/") {
		if target, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any); ok {
			delete(node, "$ref")
			for k, v := range deepCopy(target).(map[string]any) {
				if _, exists := node[k]; !exists {
					node[k] = v
				}
			}
		}
	}
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := node[key].([]any); ok {
			for _, sub := range list {
				if m, ok := sub.(map[string]any); ok {
					narrow(m, segs, defs, depth+1)
				}
			}
		}
	}
	if items, ok := node["items"].(map[string]any); ok {
		narrow(items, segs, defs, depth+1)
	}
	props, _ := node["properties"].(map[string]any)
	if len(segs) == 1 {
		if props != nil {
			delete(props, segs[0])
		}
		if req, ok := node["required"].([]any); ok {
			kept := req[:0:0]
			for _, r := range req {
				if r != segs[0] {
					kept = append(kept, r)
				}
			}
			if len(kept) == 0 {
				delete(node, "required")
			} else {
				node["required"] = kept
			}
		}
		return
	}
	if props == nil {
		return
	}
	if child, ok := props[segs[0]].(map[string]any); ok {
		narrow(child, segs[1:], defs, depth+1)
	}
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}
