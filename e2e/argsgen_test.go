package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// argGen draws tool arguments from a tool's inputSchema (JSON Schema
// 2020-12 as mcpgate emits it: local $refs into $defs, allOf, anyOf, oneOf,
// type lists, enum, const, formats, patterns, length, range and size
// bounds): required properties always, optional ones with a probability
// that falls with depth, values that satisfy the keywords it knows. The
// same seed gives the same arguments.
//
// It is a best effort: what it cannot satisfy (a pattern Go cannot parse,
// not, if/then/else, contradictory bounds) is detected by checkArgs, which
// validates the result against the schema, and argsFor then draws again.
type argGen struct {
	rng  *rand.Rand
	root map[string]any
}

// Bounds of a draw.
const (
	genMaxDepth      = 12 // nesting past which only required properties are drawn, and past twice that a draw fails
	genOptionalDepth = 4  // optional properties are drawn only above this depth
	genMaxOptional   = 6  // optional properties drawn per object, at most
	genRetries       = 8  // draws argsFor tries before it gives up on a valid one
)

var errUnsatisfiable = errors.New("argGen: no value satisfies the schema")

func newArgGen(seed uint64, schema map[string]any) *argGen {
	return &argGen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), root: schema}
}

// object draws the arguments object for the root schema.
func (g *argGen) object() (map[string]any, error) {
	v, err := g.value(g.root, 0)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("argGen: the inputSchema root gave %T, want an object", v)
	}
	return m, nil
}

// value draws one value for schema s at nesting depth.
func (g *argGen) value(s any, depth int) (any, error) {
	if depth > 2*genMaxDepth {
		return nil, errUnsatisfiable
	}
	m, err := g.flatten(s, 0)
	if err != nil {
		return nil, err
	}
	if c, ok := m["const"]; ok {
		return c, nil
	}
	if enum, ok := m["enum"].([]any); ok && len(enum) > 0 {
		return g.pick(enum), nil
	}
	switch g.chooseType(m) {
	case "null":
		return nil, nil
	case "boolean":
		return g.rng.IntN(2) == 0, nil
	case "integer":
		return g.integer(m)
	case "number":
		return g.number(m)
	case "array":
		return g.array(m, depth)
	case "object":
		return g.objectValue(m, depth)
	default:
		return g.str(m), nil
	}
}

// pick chooses an enum value, preferring non-null ones.
func (g *argGen) pick(enum []any) any {
	var vals []any
	for _, v := range enum {
		if v != nil {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return nil
	}
	return vals[g.rng.IntN(len(vals))]
}

// flatten resolves $ref, merges allOf and picks one anyOf and one oneOf
// branch, giving a schema with none of those keywords.
func (g *argGen) flatten(s any, hops int) (map[string]any, error) {
	if hops > 64 {
		return nil, fmt.Errorf("argGen: $ref chain longer than 64")
	}
	switch s := s.(type) {
	case bool:
		if !s {
			return nil, errUnsatisfiable
		}
		return map[string]any{}, nil
	case map[string]any:
		m := s
		if ref, ok := m["$ref"].(string); ok {
			target, err := g.resolve(ref)
			if err != nil {
				return nil, err
			}
			t, err := g.flatten(target, hops+1)
			if err != nil {
				return nil, err
			}
			m = merge(t, without(m, "$ref"))
		}
		if all, ok := m["allOf"].([]any); ok {
			acc := without(m, "allOf")
			for _, sub := range all {
				f, err := g.flatten(sub, hops+1)
				if err != nil {
					return nil, err
				}
				acc = merge(acc, f)
			}
			m = acc
		}
		for _, kw := range []string{"anyOf", "oneOf"} {
			if branches, ok := m[kw].([]any); ok && len(branches) > 0 {
				b, err := g.flatten(g.branch(branches), hops+1)
				if err != nil {
					return nil, err
				}
				m = merge(without(m, kw), b)
			}
		}
		return m, nil
	default:
		return nil, fmt.Errorf("argGen: schema is a %T", s)
	}
}

// branch picks an anyOf or oneOf branch, preferring one that is not just
// {"type":"null"}.
func (g *argGen) branch(branches []any) any {
	var real []any
	for _, b := range branches {
		if m, ok := b.(map[string]any); ok && m["type"] == "null" && len(m) == 1 {
			continue
		}
		real = append(real, b)
	}
	if len(real) == 0 {
		real = branches
	}
	return real[g.rng.IntN(len(real))]
}

// resolve follows a local JSON pointer ("#/$defs/Pet", "#").
func (g *argGen) resolve(ref string) (any, error) {
	if ref == "#" {
		return g.root, nil
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("argGen: $ref %q is not local", ref)
	}
	var cur any = g.root
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("argGen: $ref %q: no %q", ref, tok)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("argGen: $ref %q: bad index %q", ref, tok)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("argGen: $ref %q: %q is inside a %T", ref, tok, cur)
		}
	}
	return cur, nil
}

// merge combines two flattened schemas as allOf would: properties and
// required lists are joined, a property both constrain gets both schemas
// (as an allOf), types intersect, the tighter bound of each kind wins, and
// for any other keyword the first schema's value stays.
func merge(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		old, ok := out[k]
		if !ok {
			out[k] = v
			continue
		}
		switch k {
		case "properties":
			pa, _ := old.(map[string]any)
			pb, _ := v.(map[string]any)
			props := make(map[string]any, len(pa)+len(pb))
			for name, s := range pa {
				props[name] = s
			}
			for name, s := range pb {
				if prev, ok := props[name]; ok {
					props[name] = map[string]any{"allOf": []any{prev, s}}
				} else {
					props[name] = s
				}
			}
			out[k] = props
		case "required":
			ra, _ := old.([]any)
			rb, _ := v.([]any)
			req := slices.Clone(ra)
			for _, r := range rb {
				if !slices.Contains(req, r) {
					req = append(req, r)
				}
			}
			out[k] = req
		case "type":
			if t := intersectTypes(types(old), types(v)); len(t) > 0 {
				out[k] = t
			}
		case "minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties":
			if fa, fb, ok := twoNumbers(old, v); ok && fb > fa {
				out[k] = v
			}
		case "maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties":
			if fa, fb, ok := twoNumbers(old, v); ok && fb < fa {
				out[k] = v
			}
		}
	}
	return out
}

func twoNumbers(a, b any) (float64, float64, bool) {
	fa, okA := number(a)
	fb, okB := number(b)
	return fa, fb, okA && okB
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func without(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// types lists a "type" keyword's values.
func types(v any) []any {
	switch t := v.(type) {
	case string:
		return []any{t}
	case []any:
		return t
	}
	return nil
}

// intersectTypes keeps the types both lists allow ("integer" is a
// "number").
func intersectTypes(a, b []any) []any {
	var out []any
	for _, x := range a {
		for _, y := range b {
			switch {
			case x == y:
				out = append(out, x)
			case x == "integer" && y == "number", x == "number" && y == "integer":
				out = append(out, "integer")
			}
		}
	}
	return out
}

// chooseType picks one of the schema's types, preferring anything over
// null, or infers one from the keywords present.
func (g *argGen) chooseType(m map[string]any) string {
	var ts []string
	for _, t := range types(m["type"]) {
		if s, ok := t.(string); ok && s != "null" {
			ts = append(ts, s)
		}
	}
	if len(ts) > 0 {
		return ts[g.rng.IntN(len(ts))]
	}
	if slices.Contains(types(m["type"]), any("null")) {
		return "null"
	}
	has := func(keys ...string) bool {
		return slices.ContainsFunc(keys, func(k string) bool { _, ok := m[k]; return ok })
	}
	switch {
	case has("properties", "required", "additionalProperties", "minProperties", "maxProperties"):
		return "object"
	case has("items", "prefixItems", "minItems", "maxItems", "uniqueItems"):
		return "array"
	case has("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
		return "number"
	}
	return "string"
}

// integer draws an integer within the bounds, a multiple of multipleOf
// (any integer is one of a fractional multipleOf such as 0.01).
func (g *argGen) integer(m map[string]any) (any, error) {
	lo, hi := g.bounds(m, true)
	step := 1.0
	if mo, ok := number(m["multipleOf"]); ok && mo >= 1 && mo == math.Trunc(mo) {
		step = mo
	}
	k, ok := g.multiple(lo, hi, step)
	if !ok {
		return nil, errUnsatisfiable
	}
	return int64(k * step), nil
}

// number draws a number within the bounds: a multiple of multipleOf, else
// an integer or, one time in three, a half.
func (g *argGen) number(m map[string]any) (any, error) {
	lo, hi := g.bounds(m, false)
	step := 1.0
	mo, hasStep := number(m["multipleOf"])
	if hasStep && mo > 0 {
		step = mo
	}
	k, ok := g.multiple(lo, hi, step)
	if !ok {
		return nil, errUnsatisfiable
	}
	v := k * step
	if !hasStep && g.rng.IntN(3) == 0 && v+0.5 <= hi {
		v += 0.5
	}
	return v, nil
}

// multiple draws k with lo <= k*step <= hi.
func (g *argGen) multiple(lo, hi, step float64) (float64, bool) {
	kLo, kHi := math.Ceil(lo/step), math.Floor(hi/step)
	if kLo > kHi {
		return 0, false
	}
	return kLo + float64(g.rng.Int64N(int64(math.Min(kHi-kLo, 1e9))+1)), true
}

// bounds is the closed range a number must fall in, narrowed to a small
// default window (1..100) where the schema leaves it open.
func (g *argGen) bounds(m map[string]any, integer bool) (lo, hi float64) {
	const span = 100
	eps := 0.5
	if integer {
		eps = 1
	}
	lower, hasMin := number(m["minimum"])
	if x, ok := number(m["exclusiveMinimum"]); ok && (!hasMin || x+eps > lower) {
		lower, hasMin = x+eps, true
	}
	upper, hasMax := number(m["maximum"])
	if x, ok := number(m["exclusiveMaximum"]); ok && (!hasMax || x-eps < upper) {
		upper, hasMax = x-eps, true
	}
	switch {
	case hasMin && hasMax:
		lo, hi = lower, upper
	case hasMin:
		lo, hi = lower, lower+span
	case hasMax:
		lo, hi = math.Min(1, upper), upper
		if upper < 1 {
			lo = upper - span
		}
	default:
		lo, hi = 1, span
	}
	// Keep draws exact in a float64 and printable without an exponent.
	return math.Max(lo, -1e15), math.Min(hi, 1e15)
}

// array draws minItems..minItems+2 items (at least one unless maxItems is
// 0), distinct when uniqueItems says so.
func (g *argGen) array(m map[string]any, depth int) (any, error) {
	minN, maxN := intKeyword(m, "minItems", 0), intKeyword(m, "maxItems", -1)
	n := max(minN, 1) + g.rng.IntN(2)
	if maxN >= 0 && n > maxN {
		n = maxN
	}
	prefix, _ := m["prefixItems"].([]any)
	items, hasItems := m["items"]
	if !hasItems {
		items = true
	}
	unique, _ := m["uniqueItems"].(bool)
	out := make([]any, 0, n)
	seen := map[string]bool{}
	for tries := 0; len(out) < n && tries < 4*n+4; tries++ {
		var s any = items
		if len(out) < len(prefix) {
			s = prefix[len(out)]
		}
		v, err := g.value(s, depth+1)
		if err != nil {
			return nil, err
		}
		if unique {
			key, _ := json.Marshal(v)
			if seen[string(key)] {
				continue
			}
			seen[string(key)] = true
		}
		out = append(out, v)
	}
	if len(out) < minN {
		return nil, errUnsatisfiable
	}
	return out, nil
}

// objectValue draws the required properties, some optional ones (fewer
// the deeper it is), the properties dependentRequired then asks for, and
// one additional property when the schema has no named ones but allows
// others.
func (g *argGen) objectValue(m map[string]any, depth int) (any, error) {
	props, _ := m["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	want := map[string]bool{}
	for _, r := range types(m["required"]) {
		if s, ok := r.(string); ok {
			want[s] = true
		}
	}
	if depth < genOptionalDepth {
		p := 0.5 / float64(depth+1)
		optional := 0
		for _, name := range names {
			if !want[name] && optional < genMaxOptional && g.rng.Float64() < p {
				want[name] = true
				optional++
			}
		}
	}
	for _, name := range names { // minProperties: add optional ones in order
		if len(want) >= intKeyword(m, "minProperties", 0) {
			break
		}
		want[name] = true
	}
	if deps, ok := m["dependentRequired"].(map[string]any); ok {
		for changed := true; changed; {
			changed = false
			for name, list := range deps {
				if !want[name] {
					continue
				}
				for _, d := range types(list) {
					if s, ok := d.(string); ok && !want[s] {
						want[s], changed = true, true
					}
				}
			}
		}
	}
	out := make(map[string]any, len(want))
	keys := make([]string, 0, len(want))
	for name := range want {
		keys = append(keys, name)
	}
	slices.Sort(keys)
	for _, name := range keys {
		s, ok := props[name]
		if !ok {
			s = additionalSchema(m)
		}
		if depth >= genMaxDepth && !slices.Contains(types(m["required"]), any(name)) {
			continue
		}
		v, err := g.value(s, depth+1)
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		if hint, ok := nameHints[name]; ok && g.plainString(s) {
			v = hint
		}
		out[name] = v
	}
	if len(props) == 0 && len(out) == 0 && depth < genOptionalDepth {
		if extra, ok := m["additionalProperties"]; ok && extra != false {
			v, err := g.value(additionalSchema(m), depth+1)
			if err == nil {
				out["key1"] = v
			}
		}
	}
	return out, nil
}

// nameHints are values for string properties whose name says more than
// their schema: the media type of a multipart file argument.
var nameHints = map[string]string{"contentType": "application/octet-stream"}

// plainString reports whether s is a string schema with no enum, const,
// format or pattern of its own.
func (g *argGen) plainString(s any) bool {
	m, err := g.flatten(s, 0)
	if err != nil || g.chooseType(m) != "string" {
		return false
	}
	for _, k := range []string{"enum", "const", "format", "pattern", "contentEncoding"} {
		if _, ok := m[k]; ok {
			return false
		}
	}
	return true
}

// additionalSchema is the schema of a property not named in properties.
func additionalSchema(m map[string]any) any {
	if s, ok := m["additionalProperties"]; ok {
		if b, isBool := s.(bool); !isBool || b {
			return s
		}
	}
	return map[string]any{"type": "string"}
}

func intKeyword(m map[string]any, k string, def int) int {
	if f, ok := number(m[k]); ok {
		return int(math.Min(f, 1<<20))
	}
	return def
}

// str draws a string for the schema's format, contentEncoding or pattern,
// within minLength and maxLength.
func (g *argGen) str(m map[string]any) string {
	minLen, maxLen := intKeyword(m, "minLength", 0), intKeyword(m, "maxLength", -1)
	if enc, _ := m["contentEncoding"].(string); strings.EqualFold(enc, "base64") {
		return base64.StdEncoding.EncodeToString([]byte(g.word(max(minLen, 6), 12)))
	}
	if f, ok := m["format"].(string); ok {
		if s, ok := g.formatted(f); ok {
			return s
		}
	}
	if p, ok := m["pattern"].(string); ok {
		if s, ok := g.matching(p, minLen, maxLen); ok {
			return s
		}
	}
	hi := max(minLen, 8)
	if maxLen >= 0 && hi > maxLen {
		hi = maxLen
	}
	return g.word(max(minLen, min(3, hi)), hi)
}

// word is lowerLen..upperLen letters and digits, beginning with a letter.
func (g *argGen) word(lowerLen, upperLen int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	const alnum = letters + "0123456789"
	n := lowerLen
	if upperLen > lowerLen {
		n += g.rng.IntN(upperLen - lowerLen + 1)
	}
	b := make([]byte, n)
	for i := range b {
		if i == 0 {
			b[i] = letters[g.rng.IntN(len(letters))]
		} else {
			b[i] = alnum[g.rng.IntN(len(alnum))]
		}
	}
	return string(b)
}

// formatted draws a value of a JSON Schema or OpenAPI format.
func (g *argGen) formatted(format string) (string, bool) {
	day := 1 + g.rng.IntN(28)
	switch format {
	case "date-time":
		return fmt.Sprintf("2024-05-%02dT10:%02d:30Z", day, g.rng.IntN(60)), true
	case "date":
		return fmt.Sprintf("2024-05-%02d", day), true
	case "time":
		return fmt.Sprintf("10:%02d:30Z", g.rng.IntN(60)), true
	case "duration":
		return fmt.Sprintf("P%dD", day), true
	case "email", "idn-email":
		return g.word(4, 8) + "@example.com", true
	case "hostname", "idn-hostname":
		return g.word(4, 8) + ".example.com", true
	case "ipv4":
		return fmt.Sprintf("192.0.2.%d", 1+g.rng.IntN(254)), true
	case "ipv6":
		return fmt.Sprintf("2001:db8::%x", 1+g.rng.IntN(0xfffe)), true
	case "uri", "url", "iri", "uri-reference", "iri-reference":
		return "https://example.com/" + g.word(3, 8), true
	case "uri-template":
		return "https://example.com/{id}", true
	case "uuid":
		b := make([]byte, 16)
		for i := range b {
			b[i] = byte(g.rng.IntN(256))
		}
		b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
		return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]), true
	case "byte":
		return base64.StdEncoding.EncodeToString([]byte(g.word(6, 12))), true
	case "json-pointer":
		return "/" + g.word(3, 6), true
	case "regex":
		return "^[a-z]+$", true
	}
	return "", false
}

// matching draws a string that pattern matches (unanchored, as JSON Schema
// reads it) within the length bounds, from the pattern's syntax tree. It
// fails when Go cannot parse the pattern or no draw fits.
func (g *argGen) matching(pattern string, minLen, maxLen int) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	check, err := regexp.Compile(pattern)
	if err != nil {
		return "", false
	}
	for range 20 {
		var b strings.Builder
		g.emit(&b, re.Simplify())
		s := b.String()
		n := utf8.RuneCountInString(s)
		if n >= minLen && (maxLen < 0 || n <= maxLen) && check.MatchString(s) {
			return s, true
		}
	}
	return "", false
}

// emit writes one string the regexp node matches.
func (g *argGen) emit(b *strings.Builder, re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		b.WriteRune(g.classRune(re.Rune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteString(g.word(1, 1))
	case syntax.OpCapture:
		g.emit(b, re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			g.emit(b, sub)
		}
	case syntax.OpAlternate:
		g.emit(b, re.Sub[g.rng.IntN(len(re.Sub))])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, 3
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
			if hi < 0 {
				hi = lo + 3
			}
		}
		for range lo + g.rng.IntN(min(hi, lo+3)-lo+1) {
			g.emit(b, re.Sub[0])
		}
	}
	// Anchors, word boundaries and empty matches write nothing.
}

// classRune picks a rune from a character class (pairs of ranges),
// preferring printable ASCII other than space.
func (g *argGen) classRune(ranges []rune) rune {
	var ascii [][2]rune
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := max(ranges[i], '!'), min(ranges[i+1], '~')
		if lo <= hi {
			ascii = append(ascii, [2]rune{lo, hi})
		}
	}
	if len(ascii) > 0 {
		r := ascii[g.rng.IntN(len(ascii))]
		return r[0] + rune(g.rng.IntN(int(r[1]-r[0])+1))
	}
	if len(ranges) < 2 {
		return 'a'
	}
	i := 2 * g.rng.IntN(len(ranges)/2)
	return ranges[i] + rune(g.rng.IntN(int(min(ranges[i+1]-ranges[i], 0xff))+1))
}

// argChecker validates arguments against an inputSchema as a strict
// client would: formats asserted, every pattern Go can compile checked
// (one it cannot is taken as matching anything, so the rest of the schema
// is still checked).
type argChecker struct{ schema *jsonschema.Schema }

func newArgChecker(name string, schema json.RawMessage) (*argChecker, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("inputSchema of %s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseRegexpEngine(lenientRegexp)
	url := "mcpgate-e2e:///" + regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(name, "_")
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("inputSchema of %s: %w", name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("inputSchema of %s: %w", name, err)
	}
	return &argChecker{s}, nil
}

// check reports why args do not satisfy the schema, or nil.
func (c *argChecker) check(args map[string]any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	return c.schema.Validate(v)
}

type anyMatch string

func (a anyMatch) MatchString(string) bool { return true }
func (a anyMatch) String() string          { return string(a) }

func lenientRegexp(s string) (jsonschema.Regexp, error) {
	if re, err := regexp.Compile(s); err == nil {
		return re, nil
	}
	return anyMatch(s), nil
}

// argsFor draws arguments for a tool until they satisfy its inputSchema
// (at most genRetries draws, each from its own seed). It returns the last
// draw and, when none satisfied the schema, why the last one did not.
func argsFor(seed uint64, name string, schema json.RawMessage) (map[string]any, error) {
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("inputSchema of %s: %w", name, err)
	}
	checker, err := newArgChecker(name, schema)
	if err != nil {
		return nil, err
	}
	var args map[string]any
	var last error
	for i := range uint64(genRetries) {
		a, err := newArgGen(seed+i, root).object()
		if err != nil {
			last = err
			continue
		}
		args = a
		if last = checker.check(a); last == nil {
			return a, nil
		}
	}
	if args == nil {
		args = map[string]any{}
	}
	return args, last
}
