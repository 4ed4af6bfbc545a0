package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcpgate/mcpgate/demo"
	"github.com/mcpgate/mcpgate/openapi"
)

// fastCase is one (schema, instance) pair with the verdicts expected from
// the fast path and from jsonschema.
type fastCase struct {
	name     string
	schema   string
	instance string
	fast     bool // the fast path accepts
	valid    bool // jsonschema accepts
}

var fastCases = []fastCase{
	// typical arguments are fast-accepted
	{"getPet", `{"type":"object","properties":{"petId":{"type":"integer","minimum":1,"format":"int64","description":"Pet id."}},"required":["petId"]}`, `{"petId":1}`, true, true},
	{"big int64 id", `{"type":"object","properties":{"id":{"type":"integer","minimum":1}}}`, `{"id":9223372036854775807}`, true, true},
	{"enum string", `{"type":"object","properties":{"kind":{"type":"string","enum":["inventory","orders"]}},"required":["kind"]}`, `{"kind":"orders"}`, true, true},
	{"nested object", `{"type":"object","properties":{"file":{"type":"object","additionalProperties":false,"properties":{"content":{"type":"string","contentEncoding":"base64"},"filename":{"type":"string"}},"required":["content"]}}}`, `{"file":{"content":"aGk=","filename":"a.png"}}`, true, true},
	{"array items", `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","maxLength":3},"minItems":1,"maxItems":2}}}`, `{"tags":["a","bcd"]}`, true, true},
	{"code points", `{"type":"string","minLength":2,"maxLength":2}`, `"é€"`, true, true},
	{"number accepts float", `{"type":"number","maximum":10}`, `1.5`, false, true}, // bound on a non-integer literal: unsure
	{"number no bound", `{"type":"number"}`, `1.5e3`, true, true},
	{"type array", `{"type":["string","null"]}`, `null`, true, true},
	{"const null", `{"const":null}`, `null`, true, true},
	{"const number", `{"const":12}`, `12`, true, true},
	{"true schema", `true`, `{"anything":[1,2]}`, true, true},
	{"annotations", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"t","$comment":"c","x-internal":{"$ref":"#/nowhere"},"readOnly":true,"deprecated":true,"default":5,"examples":[1],"type":"object"}`, `{}`, true, true},
	{"format not asserted", `{"type":"string","format":"email"}`, `"not an email"`, true, true},
	{"additional schema", `{"type":"object","properties":{"a":true},"additionalProperties":{"type":"boolean"}}`, `{"a":[],"b":true}`, true, true},
	{"keywords of another type ignored", `{"minLength":3,"minimum":5,"required":["x"]}`, `[1]`, true, true},

	// invalid: the fast path declines, jsonschema rejects
	{"missing required", `{"type":"object","properties":{"petId":{"type":"integer"}},"required":["petId"]}`, `{}`, false, false},
	{"below minimum", `{"type":"integer","minimum":1}`, `0`, false, false},
	{"exclusive max", `{"type":"integer","exclusiveMaximum":3}`, `3`, false, false},
	{"exclusive min", `{"type":"integer","exclusiveMinimum":-3}`, `-3`, false, false},
	{"additional false", `{"type":"object","properties":{"a":{}},"additionalProperties":false}`, `{"a":1,"b":2}`, false, false},
	{"too long", `{"type":"string","maxLength":1}`, `"ab"`, false, false},
	{"too short in code points", `{"type":"string","minLength":2}`, `"é"`, false, false},
	{"enum miss", `{"enum":["a","b"]}`, `"c"`, false, false},
	{"integer is not a string", `{"type":"integer"}`, `"1"`, false, false},
	{"null is its own type", `{"type":"object"}`, `null`, false, false},
	{"integer rejects fraction", `{"type":"integer"}`, `1.5`, false, false},
	{"false schema", `{"type":"object","properties":{"a":false}}`, `{"a":1}`, false, false},
	{"too many items", `{"type":"array","maxItems":1}`, `[1,2]`, false, false},

	// valid, but the fast path is unsure and leaves it to jsonschema
	{"integer spelled 1.0", `{"type":"integer"}`, `1.0`, false, true},
	{"integer spelled 1e2", `{"type":"integer","maximum":100}`, `1e2`, false, true},
	{"enum number spelled differently", `{"enum":[1]}`, `1.0`, false, true},
	{"beyond int64", `{"type":"integer","minimum":1}`, `9223372036854775808`, false, true},
	{"integer without bound beyond int64", `{"type":"integer"}`, `92233720368547758080`, true, true},
}

// fastVerdicts compiles schema both ways and returns the two verdicts on
// instance; fast is nil when the schema has no fast path.
func fastVerdicts(t testing.TB, schema, instance string) (fast *fastSchema, fastOK, valid bool, verr error) {
	t.Helper()
	sch, err := openapi.CompileSchema("t", json.RawMessage(schema))
	if err != nil {
		t.Fatalf("jsonschema does not compile %s: %v", schema, err)
	}
	fast, _ = compileFast(json.RawMessage(schema))
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(instance))
	if err != nil {
		t.Fatalf("instance %s: %v", instance, err)
	}
	verr = sch.Validate(v)
	return fast, fast != nil && fast.accepts(v), verr == nil, verr
}

func TestFastValidateTable(t *testing.T) {
	for _, c := range fastCases {
		t.Run(c.name, func(t *testing.T) {
			fast, fastOK, valid, verr := fastVerdicts(t, c.schema, c.instance)
			if fast == nil {
				_, err := compileFast(json.RawMessage(c.schema))
				t.Fatalf("no fast path: %v", err)
			}
			if fastOK && !valid {
				t.Fatalf("UNSOUND: fast path accepts %s, jsonschema rejects: %s", c.instance, validationMessage(verr))
			}
			if fastOK != c.fast || valid != c.valid {
				t.Fatalf("fast=%v valid=%v (%v), want fast=%v valid=%v", fastOK, valid, verr, c.fast, c.valid)
			}
		})
	}
}

func TestFastValidateWhitelist(t *testing.T) {
	with := []string{
		`true`, `false`, `{}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema#","type":"object"}`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"enum":["x",1,true,null]}}},"additionalProperties":{"const":"y"}}`,
		`{"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807}`,
		`{"type":"string","format":"date-time","contentMediaType":"text/plain","x-go-type":"time.Time","writeOnly":true}`,
	}
	without := []string{
		`{"$ref":"#/$defs/a","$defs":{"a":{}}}`,
		`{"type":"object","properties":{"a":{"allOf":[{}]}}}`,
		`{"anyOf":[{}]}`, `{"oneOf":[{}]}`, `{"not":{}}`, `{"if":{},"then":{}}`,
		`{"type":"string","pattern":"^a"}`,
		`{"patternProperties":{"^a":{}}}`,
		`{"prefixItems":[{}]}`, `{"uniqueItems":true}`, `{"multipleOf":2}`,
		`{"dependentRequired":{"a":["b"]}}`, `{"unevaluatedProperties":false}`,
		`{"propertyNames":{"maxLength":3}}`, `{"minProperties":1}`, `{"contains":{}}`,
		`{"$id":"https://example.com/s"}`,
		`{"type":"object","properties":{"a":{"nullable":true}}}`, // OpenAPI 3.0 keyword: unknown, not whitelisted
		`{"minimum":1.5}`, `{"maximum":1e2}`, `{"minimum":9223372036854775808}`,
		`{"minLength":1.0}`, `{"maxItems":18446744073709551616}`,
		`{"enum":[{"a":1}]}`, `{"const":[1]}`, `{"enum":[1e10000000]}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#"}`,
		`{"properties":{"a":{"$schema":"https://json-schema.org/draft/2020-12/schema"}}}`,
		`{"items":{"type":"string","pattern":"x"}}`,
	}
	for _, s := range with {
		if _, err := openapi.CompileSchema("t", json.RawMessage(s)); err != nil {
			t.Fatalf("%s does not compile: %v", s, err)
		}
		if f, err := compileFast(json.RawMessage(s)); f == nil {
			t.Errorf("%s: no fast path: %v", s, err)
		}
	}
	for _, s := range without {
		if f, err := compileFast(json.RawMessage(s)); f != nil || err == nil {
			t.Errorf("%s: got a fast path", s)
		}
	}
	_, err := compileFast(json.RawMessage(`{"type":"object","properties":{"a/b":{"pattern":"x"}}}`))
	if err == nil || !strings.Contains(err.Error(), "/properties/a~1b/pattern: keyword not on the whitelist") {
		t.Errorf("error does not locate the keyword: %v", err)
	}
}

// TestFormatNotAsserted proves that format (and the content keywords) are
// annotations for the schemas the gateway compiles, which is what lets the
// fast path ignore them; and that they would be assertions under draft-07,
// which is why only a 2020-12 $schema is on the whitelist.
func TestFormatNotAsserted(t *testing.T) {
	for _, c := range []struct{ schema, instance string }{
		{`{"type":"string","format":"email"}`, `"not an email"`},
		{`{"type":"string","format":"date-time"}`, `"yesterday"`},
		{`{"type":"string","format":"ipv4"}`, `"999.1.1.1"`},
		{`{"type":"string","format":"uuid"}`, `"x"`},
		{`{"type":"string","contentEncoding":"base64","contentMediaType":"application/json"}`, `"%%% not base64"`},
	} {
		sch, err := openapi.CompileSchema("t", json.RawMessage(c.schema))
		if err != nil {
			t.Fatal(err)
		}
		v, _ := jsonschema.UnmarshalJSON(strings.NewReader(c.instance))
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s asserted on %s: %v", c.schema, c.instance, err)
		}
	}
	// the control: the same instance fails where format is an assertion
	v, _ := jsonschema.UnmarshalJSON(strings.NewReader(`"not an email"`))
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"type":"string","format":"email"}`))
	if err := c.AddResource("mcpgate:///t", doc); err != nil {
		t.Fatal(err)
	}
	if sch, err := c.Compile("mcpgate:///t"); err != nil || sch.Validate(v) == nil {
		t.Fatalf("AssertFormat should reject: %v", err)
	}
	draft7 := `{"$schema":"http://json-schema.org/draft-07/schema#","type":"string","format":"email"}`
	sch, err := openapi.CompileSchema("t", json.RawMessage(draft7))
	if err != nil {
		t.Fatal(err)
	}
	if sch.Validate(v) == nil {
		t.Fatal("draft-07 should assert format")
	}
	if f, _ := compileFast(json.RawMessage(draft7)); f != nil {
		t.Fatal("a draft-07 schema got a fast path")
	}
}

// demoTools generates the demo API's tools.
func demoTools(t testing.TB) []openapi.Tool {
	t.Helper()
	doc, err := openapi.Parse(context.Background(), demo.OpenAPI(), "demo", openapi.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := openapi.Generate(doc, openapi.GenerateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

// demoEndpoints compiles the demo tools for an upstream that is never
// called.
func demoEndpoints(t testing.TB) map[string]*Endpoint {
	t.Helper()
	eps, err := newProxy(t, "http://upstream.example", nil).Endpoints(demoTools(t))
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

func TestFastValidateDecodeArgs(t *testing.T) {
	eps := demoEndpoints(t)
	for _, name := range []string{"getPet", "createOrder", "uploadPetPhoto", "createReport", "redirectMe"} {
		if eps[name].compiledSchema(); eps[name].fast == nil {
			t.Errorf("%s has no fast path", name)
		}
	}
	for _, name := range []string{"listPets", "createPet"} { // $ref, pattern
		if eps[name].compiledSchema(); eps[name].fast != nil {
			t.Errorf("%s has a fast path", name)
		}
	}
	e := eps["getPet"]
	for _, c := range []struct {
		args, err string // err "" means accepted
	}{
		{`{"petId":1}`, ""},
		{`{"petId":1.0}`, ""}, // jsonschema decides
		{`null`, "/petId: missing required property"},
		{`{"petId":0}`, "/petId: minimum: got 0, want 1"},
		{`{"petId":"1"}`, "/petId: got string, want integer"},
		{`[1]`, "must be a JSON object"},
		{`{"petId":1e10000000}`, "Invalid arguments"}, // too large for math/big
	} {
		m, err := e.decodeArgs(json.RawMessage(c.args))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.args, err)
		case c.err == "" && m == nil:
			t.Errorf("%s: no arguments", c.args)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: got %v, want %q", c.args, err, c.err)
		}
	}
}

// TestValidateRecoversFromJSONSchemaPanic: jsonschema v6 dereferences a nil
// big.Rat when a number it cannot parse meets a numeric bound; validate
// turns that into an error instead of crashing the caller.
func TestValidateRecoversFromJSONSchemaPanic(t *testing.T) {
	sch, err := openapi.CompileSchema("t", json.RawMessage(`{"type":"object","properties":{"n":{"type":"number","minimum":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"n":1e10000000}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(sch, v); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("validate = %v, want an out-of-range error", err)
	}
}

func TestFastValidateNoAllocs(t *testing.T) {
	eps := demoEndpoints(t)
	for name, args := range map[string]string{
		"getPet":         `{"petId":1}`,
		"uploadPetPhoto": benchUploadArgs,
	} {
		e := eps[name]
		e.compiledSchema()
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
		if err != nil {
			t.Fatal(err)
		}
		if !e.fast.accepts(v) {
			t.Fatalf("%s: %s not fast-accepted", name, args)
		}
		if n := testing.AllocsPerRun(100, func() { e.fast.accepts(v) }); n != 0 {
			t.Errorf("%s: %v allocs per accept", name, n)
		}
	}
}

// TestFastValidateDemoTools checks soundness on random argument objects
// shaped after every demo tool's inputSchema.
func TestFastValidateDemoTools(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	rng := rand.New(rand.NewPCG(1, 2))
	accepted := 0
	for _, tool := range demoTools(t) {
		sch, err := openapi.CompileInputSchema(&tool)
		if err != nil {
			t.Fatal(err)
		}
		fast, _ := compileFast(tool.InputSchema)
		if fast == nil {
			continue
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tool.InputSchema))
		if err != nil {
			t.Fatal(err)
		}
		g := &valueGen{next: func(k int) int { return rng.IntN(k) }}
		for range n {
			raw, err := json.Marshal(g.value(doc, 0))
			if err != nil {
				t.Fatal(err)
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if fast.accepts(v) {
				accepted++
				if err := sch.Validate(v); err != nil {
					t.Fatalf("UNSOUND: %s accepts %s, jsonschema says %s", tool.Name, raw, validationMessage(err))
				}
			}
		}
	}
	if accepted == 0 {
		t.Fatal("the fast path accepted nothing")
	}
	t.Logf("%d arguments fast-accepted", accepted)
}

// FuzzFastValidate is the differential test: whenever the fast path
// accepts an instance, jsonschema must accept it too.
func FuzzFastValidate(f *testing.F) {
	for _, c := range fastCases {
		f.Add([]byte(c.schema), []byte(c.instance))
	}
	for _, tool := range demoTools(f) {
		f.Add([]byte(tool.InputSchema), []byte(`{"petId":1,"orderId":2,"kind":"orders","caption":"c","file":{"content":"aGk="}}`))
	}
	f.Fuzz(func(t *testing.T, schema, instance []byte) {
		checkFastSound(t, schema, instance)
	})
}

// FuzzFastValidateGen drives a generator of whitelisted schemas and of
// instances shaped after them, so that most inputs exercise the fast path
// (random bytes rarely make a schema).
func FuzzFastValidateGen(f *testing.F) {
	for _, seed := range []string{"", "\x00", "\x01\x02\x03", "abcdefghijklmnop", strings.Repeat("\x07\x03", 40), strings.Repeat("\xff\x10\x00", 30)} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pos := 0
		g := &valueGen{next: func(k int) int {
			if pos >= len(data) {
				return 0
			}
			pos++
			return int(data[pos-1]) % k
		}}
		schema, err := json.Marshal(g.schema(0))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
		if err != nil {
			t.Fatal(err)
		}
		instance, err := json.Marshal(g.value(doc, 0))
		if err != nil {
			t.Fatal(err)
		}
		checkFastSound(t, schema, instance)
	})
}

func checkFastSound(t *testing.T, schema, instance []byte) {
	t.Helper()
	sch, err := openapi.CompileSchema("t", schema)
	if err != nil {
		return // not a schema: decodeArgs does not validate at all
	}
	fast, _ := compileFast(schema)
	if fast == nil {
		return
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(instance))
	if err != nil {
		return
	}
	if fast.accepts(v) {
		if err := sch.Validate(v); err != nil {
			t.Fatalf("UNSOUND: fast path accepts %s for %s; jsonschema: %s", instance, schema, validationMessage(err))
		}
	}
}

// valueGen makes schemas and values from a stream of choices: next(k)
// returns a number in [0, k).
type valueGen struct{ next func(k int) int }

var (
	genNumbers = []string{"0", "-0", "1", "-1", "2", "3", "10", "100", "1.0", "1.5", "-1.5", "1e2", "1E0", "0.1e1", "10e-1",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "99999999999999999999", "1e400", "1e10000000"}
	genStrings = []string{"", "a", "ab", "abc", "é", "€€", "a\u0000b", "\U0001F600", "dog", "x-y", "petId", "kind", "\ufffd", "\xff"}
	genTypes   = []string{"null", "boolean", "object", "array", "number", "integer", "string"}
	genKeys    = []string{"a", "b", "c", "petId", "kind", ""}
)

func (g *valueGen) pick(list []string) string { return list[g.next(len(list))] }

// schema generates a schema from the whitelist.
func (g *valueGen) schema(depth int) any {
	switch g.next(12) {
	case 0:
		return true
	case 1:
		return false
	}
	s := map[string]any{}
	for range g.next(5) {
		switch g.next(14) {
		case 0:
			s["type"] = g.pick(genTypes)
		case 1:
			s["type"] = []string{g.pick(genTypes), g.pick(genTypes)}
		case 2:
			if depth < 3 {
				props := map[string]any{}
				for range 1 + g.next(3) {
					props[g.pick(genKeys)] = g.schema(depth + 1)
				}
				s["properties"] = props
			}
		case 3:
			s["required"] = []string{g.pick(genKeys)}
		case 4:
			if depth < 3 {
				s["additionalProperties"] = g.schema(depth + 1)
			}
		case 5:
			if depth < 3 {
				s["items"] = g.schema(depth + 1)
			}
		case 6:
			s[[]string{"minItems", "maxItems", "minLength", "maxLength"}[g.next(4)]] = json.Number([]string{"0", "1", "2", "3"}[g.next(4)])
		case 7, 8:
			s[[]string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}[g.next(4)]] = json.Number(g.pick([]string{"0", "1", "-1", "2", "100", "9223372036854775807", "-9223372036854775808"}))
		case 9:
			s["enum"] = []any{g.scalar(), g.scalar()}
		case 10:
			s["const"] = g.scalar()
		case 11:
			s["format"] = g.pick([]string{"email", "int64", "date-time", "uuid"})
		case 12:
			s["x-extra"] = g.scalar()
		case 13:
			s["description"] = g.pick(genStrings)
		}
	}
	return s
}

func (g *valueGen) scalar() any {
	switch g.next(4) {
	case 0:
		return nil
	case 1:
		return g.next(2) == 0
	case 2:
		return json.Number(g.pick(genNumbers))
	default:
		return g.pick(genStrings)
	}
}

// value generates an instance, often shaped after the schema (as
// jsonschema.UnmarshalJSON decodes it).
func (g *valueGen) value(schema any, depth int) any {
	s, _ := schema.(map[string]any)
	if g.next(4) == 0 || depth > 4 {
		return g.random(depth)
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 && g.next(2) == 0 {
		return enum[g.next(len(enum))]
	}
	if c, ok := s["const"]; ok && g.next(2) == 0 {
		return c
	}
	typ, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok && len(ts) > 0 {
		typ, _ = ts[g.next(len(ts))].(string)
	}
	_, hasProps := s["properties"]
	_, hasItems := s["items"]
	switch {
	case typ == "object" || typ == "" && hasProps:
		props, _ := s["properties"].(map[string]any)
		obj := map[string]any{}
		for _, k := range slices.Sorted(maps.Keys(props)) { // sorted: the fuzzer needs determinism
			if g.next(4) != 0 {
				obj[k] = g.value(props[k], depth+1)
			}
		}
		if g.next(3) == 0 {
			obj[g.pick(genKeys)] = g.value(s["additionalProperties"], depth+1)
		}
		return obj
	case typ == "array" || typ == "" && hasItems:
		arr := []any{}
		for range g.next(4) {
			arr = append(arr, g.value(s["items"], depth+1))
		}
		return arr
	case typ == "integer" || typ == "number":
		return json.Number(g.pick(genNumbers))
	case typ == "string":
		return g.pick(genStrings)
	case typ == "boolean":
		return g.next(2) == 0
	case typ == "null":
		return nil
	}
	return g.random(depth)
}

func (g *valueGen) random(depth int) any {
	switch g.next(6) {
	case 0, 1, 2, 3:
		return g.scalar()
	case 4:
		if depth < 4 {
			return []any{g.random(depth + 1)}
		}
	case 5:
		if depth < 4 {
			return map[string]any{g.pick(genKeys): g.random(depth + 1)}
		}
	}
	return nil
}

const benchUploadArgs = `{"petId":7,"caption":"Rex at the beach","file":{"content":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==","filename":"rex.png","contentType":"image/png"}}`

// BenchmarkDecodeArgs compares decodeArgs with the fast path and with
// jsonschema alone (the behaviour before the fast path), on getPet and on
// a richer tool (nested object, required, additionalProperties false).
func BenchmarkDecodeArgs(b *testing.B) {
	for _, c := range []struct{ tool, args string }{
		{"getPet", `{"petId":1}`},
		{"uploadPetPhoto", benchUploadArgs},
		{"createOrder", `{"petId":3,"express":true,"note":"leave at the door"}`},
	} {
		for _, mode := range []string{"fast", "jsonschema"} {
			b.Run(c.tool+"/"+mode, func(b *testing.B) {
				e := demoEndpoints(b)[c.tool]
				e.compiledSchema()
				if e.fast == nil {
					b.Fatal("no fast path")
				}
				if mode == "jsonschema" {
					e.fast = nil
				}
				args := json.RawMessage(c.args)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.decodeArgs(args); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
