package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcpgate/mcpgate/internal/jsonx"
)

// fastSchema is a conservative pre-check of tool arguments, compiled by
// [compileFast] from an inputSchema built only from a whitelist of
// keywords. It exists because jsonschema checks every number through
// fmt.Sprint and math/big, which dominates the cost of a typical call.
//
// Soundness invariant: accepts(v) == true implies that the same schema
// compiled by openapi.CompileSchema accepts v. A false answer means
// "invalid or unsure": the caller must then run jsonschema, whose verdict
// and messages are authoritative. The pre-check may therefore be
// incomplete (bounds beyond int64, numbers past the exponent form of the
// canonical layout answer false), but never wrong when it accepts. Argument
// numbers arrive in canonical form (see decodeValue), so 1.0 and 1e2 are
// integer literals by then, and enum numbers are canonicalized here.
//
// A nil *fastSchema inside the tree is the schema true (no constraint).
type fastSchema struct {
	reject     bool                   // the schema false
	types      fastTypes              // allowed types; 0 means any
	props      map[string]*fastSchema // properties
	required   []string               // required
	additional *fastSchema            // additionalProperties (nil: any)
	items      *fastSchema            // items (nil: any)
	minItems   int                    // -1: none
	maxItems   int                    // -1: none
	minLength  int                    // -1: none; in code points
	maxLength  int                    // -1: none; in code points
	enums      [][]any                // enum and const: v must match one value of each list
	bounds     []fastBound            // minimum, maximum, exclusive*
}

// fastTypes is a set of JSON Schema types.
type fastTypes uint8

const (
	typeNull fastTypes = 1 << iota
	typeBoolean
	typeObject
	typeArray
	typeNumber
	typeInteger
	typeString
)

// typeNamed returns the type a "type" keyword names (0 if unknown).
func typeNamed(name string) fastTypes {
	switch name {
	case "null":
		return typeNull
	case "boolean":
		return typeBoolean
	case "object":
		return typeObject
	case "array":
		return typeArray
	case "number":
		return typeNumber
	case "integer":
		return typeInteger
	case "string":
		return typeString
	}
	return 0
}

// fastBound is one numeric bound with an int64 limit.
type fastBound struct {
	kind  boundKind
	limit int64
}

type boundKind uint8

const (
	boundMinimum boundKind = iota
	boundMaximum
	boundExclusiveMinimum
	boundExclusiveMaximum
)

// holds reports whether n satisfies the bound.
func (b fastBound) holds(n int64) bool {
	switch b.kind {
	case boundMinimum:
		return n >= b.limit
	case boundMaximum:
		return n <= b.limit
	case boundExclusiveMinimum:
		return n > b.limit
	default:
		return n < b.limit
	}
}

// isAnnotation reports the keywords that never affect validation with the
// compiler openapi.CompileSchema configures (draft 2020-12, neither
// AssertFormat nor AssertContent): format is an annotation there, and so
// are contentMediaType and contentEncoding. Unknown keywords are ignored
// by draft 2020-12, which covers the x- extensions.
func isAnnotation(k string) bool {
	switch k {
	case "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
		"$comment", "format", "contentMediaType", "contentEncoding":
		return true
	}
	return strings.HasPrefix(k, "x-")
}

// compileFast compiles the fast path of an inputSchema. The error says why
// there is none (a keyword outside the whitelist, a bound that is not an
// int64, ...); the schema is then validated by jsonschema alone. Only use
// the result for a schema that jsonschema compiled too.
func compileFast(schema json.RawMessage) (*fastSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("fast path: %w", err)
	}
	s, err := compileFastNode(doc, "", true)
	if err != nil {
		return nil, fmt.Errorf("fast path: %w", err)
	}
	if s == nil {
		s = &fastSchema{minItems: -1, maxItems: -1, minLength: -1, maxLength: -1}
	}
	return s, nil
}

// compileFastNode compiles one (sub)schema at JSON pointer loc; nil is the
// schema true.
func compileFastNode(node any, loc string, root bool) (*fastSchema, error) {
	switch n := node.(type) {
	case bool:
		if n {
			return nil, nil
		}
		return &fastSchema{reject: true}, nil
	case map[string]any:
		s := &fastSchema{minItems: -1, maxItems: -1, minLength: -1, maxLength: -1}
		for _, k := range slices.Sorted(maps.Keys(n)) {
			if err := s.compileKeyword(k, n[k], loc, root); err != nil {
				return nil, err
			}
		}
		return s, nil
	default:
		return nil, fmt.Errorf("%s: a schema must be an object or a boolean", locOrRoot(loc))
	}
}

// compileKeyword adds one keyword of the schema object at loc to s.
func (s *fastSchema) compileKeyword(k string, v any, loc string, root bool) error {
	at := loc + "/" + escapePointer([]string{k})[0]
	var err error
	switch {
	case isAnnotation(k):
		return nil
	case k == "$schema":
		// another dialect may assert formats (draft-07) or change keywords;
		// a nested $schema is a resource question we leave to jsonschema
		if str, _ := v.(string); !root || !isDraft2020(str) {
			return fmt.Errorf("%s: only a root $schema of draft 2020-12 is on the whitelist", at)
		}
	case k == "type":
		s.types, err = compileTypes(v)
	case k == "properties":
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: not an object", at)
		}
		s.props = make(map[string]*fastSchema, len(obj))
		for _, name := range slices.Sorted(maps.Keys(obj)) {
			if s.props[name], err = compileFastNode(obj[name], at+"/"+escapePointer([]string{name})[0], false); err != nil {
				return err // already located
			}
		}
	case k == "required":
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: not an array", at)
		}
		for _, r := range arr {
			name, ok := r.(string)
			if !ok {
				return fmt.Errorf("%s: not an array of strings", at)
			}
			s.required = append(s.required, name)
		}
	case k == "additionalProperties":
		s.additional, err = compileFastNode(v, at, false)
		return err // already located
	case k == "items":
		s.items, err = compileFastNode(v, at, false)
		return err // already located
	case k == "minItems":
		s.minItems, err = nonNegativeInt(v)
	case k == "maxItems":
		s.maxItems, err = nonNegativeInt(v)
	case k == "minLength":
		s.minLength, err = nonNegativeInt(v)
	case k == "maxLength":
		s.maxLength, err = nonNegativeInt(v)
	case k == "enum":
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: not an array", at)
		}
		values := make([]any, len(arr))
		for i, e := range arr {
			if values[i], err = fastScalar(e); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
		}
		s.enums = append(s.enums, values)
	case k == "const":
		v, err = fastScalar(v)
		s.enums = append(s.enums, []any{v})
	case boundNamed(k) >= 0:
		n, ok := v.(json.Number)
		if !ok || !isIntLiteral(n) {
			return fmt.Errorf("%s: the bound is not an integer literal", at)
		}
		limit, perr := strconv.ParseInt(string(n), 10, 64)
		if perr != nil {
			return fmt.Errorf("%s: %w", at, perr)
		}
		s.bounds = append(s.bounds, fastBound{kind: boundKind(boundNamed(k)), limit: limit})
	default:
		return fmt.Errorf("%s: keyword not on the whitelist", at)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	return nil
}

// boundNamed returns the boundKind of a keyword, or -1.
func boundNamed(k string) int {
	switch k {
	case "minimum":
		return int(boundMinimum)
	case "maximum":
		return int(boundMaximum)
	case "exclusiveMinimum":
		return int(boundExclusiveMinimum)
	case "exclusiveMaximum":
		return int(boundExclusiveMaximum)
	}
	return -1
}

func locOrRoot(loc string) string {
	if loc == "" {
		return "(root)"
	}
	return loc
}

// isDraft2020 reports whether a $schema value names draft 2020-12.
func isDraft2020(s string) bool {
	s = strings.TrimSuffix(s, "#")
	return s == "https://json-schema.org/draft/2020-12/schema" || s == "http://json-schema.org/draft/2020-12/schema"
}

func compileTypes(v any) (fastTypes, error) {
	var names []any
	switch v := v.(type) {
	case string:
		names = []any{v}
	case []any:
		names = v
	default:
		return 0, errors.New("not a string or an array")
	}
	var t fastTypes
	for _, n := range names {
		name, _ := n.(string)
		bit := typeNamed(name)
		if bit == 0 {
			return 0, fmt.Errorf("unknown type %v", n)
		}
		t |= bit
	}
	if t == 0 {
		return 0, errors.New("no type")
	}
	return t, nil
}

// nonNegativeInt reads a count (minItems, maxLength, ...) written as
// plain digits that fit an int.
func nonNegativeInt(v any) (int, error) {
	n, ok := v.(json.Number)
	if !ok || !isIntLiteral(n) {
		return 0, errors.New("not an integer literal")
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return 0, err
	}
	if i < 0 || int64(int(i)) != i {
		return 0, errors.New("out of range")
	}
	return int(i), nil
}

// fastScalar accepts the enum and const values the fast path compares: a
// string, boolean, null, or a number that math/big parses (jsonschema
// compares numbers through big.Rat, and a literal it cannot parse, such as
// 1e10000000, equals nothing, not even itself). A number is returned in
// canonical form, the form of every argument number, so that == finds
// 1.0 in enum [1] (both are 1) exactly when jsonschema would.
func fastScalar(v any) (any, error) {
	switch v := v.(type) {
	case nil, bool, string:
		return v, nil
	case json.Number:
		if _, ok := new(big.Rat).SetString(string(v)); !ok {
			return nil, fmt.Errorf("number %s is out of range", v)
		}
		c, err := jsonx.AppendCanonicalNumber(nil, []byte(v))
		if err != nil {
			return nil, fmt.Errorf("number %s: %w", v, err)
		}
		return json.Number(c), nil
	default:
		return nil, errors.New("only scalar values are on the whitelist")
	}
}

// isIntLiteral reports whether n is an optional "-" followed by digits
// (no fraction, no exponent).
func isIntLiteral(n json.Number) bool {
	s := strings.TrimPrefix(string(n), "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// allows reports whether the schema's type keyword admits t.
func (s *fastSchema) allows(t fastTypes) bool { return s.types == 0 || s.types&t != 0 }

// accepts reports whether v is certainly valid; see [fastSchema]. v is a
// value produced by jsonschema.UnmarshalJSON. It does not allocate.
func (s *fastSchema) accepts(v any) bool {
	if s == nil {
		return true
	}
	if s.reject {
		return false
	}
	switch v := v.(type) {
	case nil:
		if !s.allows(typeNull) {
			return false
		}
	case bool:
		if !s.allows(typeBoolean) {
			return false
		}
	case string:
		if !s.allows(typeString) {
			return false
		}
		if s.minLength >= 0 || s.maxLength >= 0 {
			n := utf8.RuneCountInString(v)
			if n < s.minLength || s.maxLength >= 0 && n > s.maxLength {
				return false
			}
		}
	case json.Number:
		if !s.acceptsNumber(v) {
			return false
		}
	case []any:
		if !s.allows(typeArray) || len(v) < s.minItems || s.maxItems >= 0 && len(v) > s.maxItems {
			return false
		}
		if s.items != nil {
			for _, item := range v {
				if !s.items.accepts(item) {
					return false
				}
			}
		}
	case map[string]any:
		if !s.acceptsObject(v) {
			return false
		}
	default:
		return false
	}
	for _, values := range s.enums {
		// enum values are scalars, so == compares them without panicking;
		// numbers on both sides are canonical, so equal values are equal
		// literals
		if !slices.Contains(values, v) {
			return false
		}
	}
	return true
}

func (s *fastSchema) acceptsNumber(n json.Number) bool {
	switch {
	case s.types == 0 || s.types&typeNumber != 0:
	case s.types&typeInteger != 0 && isIntLiteral(n):
	default:
		return false // not a number type, or not an integer
	}
	if len(s.bounds) == 0 {
		return true
	}
	if !isIntLiteral(n) {
		return false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return false
	}
	for _, b := range s.bounds {
		if !b.holds(i) {
			return false
		}
	}
	return true
}

func (s *fastSchema) acceptsObject(obj map[string]any) bool {
	if !s.allows(typeObject) {
		return false
	}
	for _, name := range s.required {
		if _, ok := obj[name]; !ok {
			return false
		}
	}
	for name, v := range obj {
		sub, declared := s.props[name]
		if !declared {
			sub = s.additional
		}
		if !sub.accepts(v) {
			return false
		}
	}
	return true
}
