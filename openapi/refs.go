package openapi

import (
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// This file resolves the document's local references ("#/…") while the
// builder runs, on the generic decode, instead of leaving them to
// kin-openapi. kin resolves a pointer by walking its typed structures; a
// pointer into a place those structures do not model (a `definitions` map
// inside a component schema, say "#/components/schemas/Item/definitions/
// itemType") made it re-read and re-decode the whole file, once per
// reference, and build a fresh copy of the target each time: on a 1.2 MB
// document that took 52 s and 218 MB before failing. Here a pointer is
// walked in the generic tree, whatever it points into, and each target node
// is built once (memoized by the identity of its decoded map), so loading
// costs O(document size) however the references nest, and every reference
// to one node shares one value (which keeps cycles finite and $defs names
// stable). A pointer to nothing is refused with the pointer and the place
// of the reference. References to other files are left to kin's loader.

// maxRefChain bounds a chain of references that point to references.
const maxRefChain = 64

// nodeID is the identity of a decoded JSON object.
func nodeID(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }

// refMemo holds the value built for each referenced (or component) node.
type refMemo struct {
	schemas    map[uintptr]*openapi3.Schema
	parameters map[uintptr]*openapi3.Parameter
	bodies     map[uintptr]*openapi3.RequestBody
	responses  map[uintptr]*openapi3.Response
	headers    map[uintptr]*openapi3.Header
	security   map[uintptr]*openapi3.SecurityScheme
}

func newRefMemo() refMemo {
	return refMemo{
		schemas: map[uintptr]*openapi3.Schema{}, parameters: map[uintptr]*openapi3.Parameter{},
		bodies: map[uintptr]*openapi3.RequestBody{}, responses: map[uintptr]*openapi3.Response{},
		headers: map[uintptr]*openapi3.Header{}, security: map[uintptr]*openapi3.SecurityScheme{},
	}
}

// isLocal reports whether ref points into this document.
func isLocal(ref string) bool { return strings.HasPrefix(ref, "#") }

// target returns the object a local reference points to. ok is false after
// a failure (recorded with the place of the reference).
func (b *builder) target(place, ref string) (map[string]any, bool) {
	node, err := resolvePointer(b.root, ref)
	if err == nil {
		if m, isObj := node.(map[string]any); isObj {
			return m, true
		}
		err = fmt.Errorf("it points to a %s, not an object", jsonKind(node))
	}
	b.fail(place, "$ref %q: %v", ref, err)
	return nil, false
}

// follow guards a chain of references that point to references.
func (b *builder) follow(place, ref string) bool {
	b.refDepth++
	if b.refDepth > maxRefChain {
		b.fail(place, "$ref %q: more than %d references in a chain (a reference cycle with no value?)", ref, maxRefChain)
		return false
	}
	return true
}

// resolvePointer walks a local reference ("#/a/b~1c/0") in a decoded
// document.
func resolvePointer(root any, ref string) (any, error) {
	frag := strings.TrimPrefix(ref, "#")
	if unescaped, err := url.PathUnescape(frag); err == nil {
		frag = unescaped
	}
	if frag == "" {
		return root, nil
	}
	if frag[0] != '/' {
		return nil, fmt.Errorf("%q is not a JSON pointer", frag)
	}
	cur := root
	walked := "#"
	for _, seg := range strings.Split(frag[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			next, ok := x[seg]
			if !ok {
				return nil, fmt.Errorf("%s has no member %q", walked, seg)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("%s is an array of %d and has no element %q", walked, len(x), seg)
			}
			cur = x[i]
		default:
			return nil, fmt.Errorf("%s is a %s and has no member %q", walked, jsonKind(cur), seg)
		}
		walked += "/" + strings.ReplaceAll(strings.ReplaceAll(seg, "~", "~0"), "/", "~1")
	}
	return cur, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	}
	return "number"
}

// schemaTarget builds (once) the schema a local reference points to,
// following references that point to references. It returns nil when the
// chain leads to another file (kin's loader then resolves ref).
func (b *builder) schemaTarget(place, ref string) *openapi3.Schema {
	at := ref
	for range maxRefChain {
		node, err := resolvePointer(b.root, at)
		if err != nil {
			b.fail(place, "$ref %q: %v", at, err)
			return &openapi3.Schema{}
		}
		switch x := node.(type) {
		case bool:
			return &openapi3.Schema{Always: &x}
		case map[string]any:
			next, isRef := x["$ref"].(string)
			if !isRef || next == "" || (b.is31 && hasSchemaSiblings(x)) {
				return b.schemaNode(place, x)
			}
			if !isLocal(next) {
				b.external = true
				return nil
			}
			at = next
		default:
			b.fail(place, "$ref %q: it points to a %s, not a schema", at, jsonKind(node))
			return &openapi3.Schema{}
		}
	}
	b.fail(place, "$ref %q: more than %d references in a chain (a reference cycle with no value?)", ref, maxRefChain)
	return &openapi3.Schema{}
}

// memoizes reports whether the node being built may be met again: not one
// of a path item decoded for building and dropped once built (no reference
// points into the paths then, and the tree is a tree), unless it is
// reached through a reference. Its identity would not even stay its own:
// once the path item is collected, the next one's nodes may be allocated
// at the same addresses.
func (b *builder) memoizes() bool { return !b.transient || b.refDepth > 0 }

// schemaNode builds the schema of a decoded object once: a component or a
// reference target met again gets the same value.
func (b *builder) schemaNode(place string, m map[string]any) *openapi3.Schema {
	id := nodeID(m)
	if s, ok := b.memo.schemas[id]; ok {
		return s
	}
	s := &openapi3.Schema{}
	b.memo.schemas[id] = s // before filling it: a cycle finds it here
	b.fillSchema(place, s, m)
	return s
}

// memoized builds v once per decoded object, for the non-schema kinds;
// with keep unset it builds v without the memo (memoizes).
func memoized[T any](memo map[uintptr]*T, keep bool, m map[string]any, build func() *T) *T {
	if !keep {
		return build()
	}
	id := nodeID(m)
	if v, ok := memo[id]; ok {
		return v
	}
	v := build()
	memo[id] = v
	return v
}
