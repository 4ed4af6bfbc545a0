package e2e

import (
	"encoding/json"
	"reflect"
	"regexp"
	"testing"
)

// TestArgGen: for each schema, every one of many seeds gives arguments that
// satisfy it (checked by argChecker, formats asserted), and properties the
// schema requires are always there.
func TestArgGen(t *testing.T) {
	cases := []struct {
		name     string
		schema   string
		required []string
		check    func(t *testing.T, args map[string]any)
	}{
		{"scalars", `{"type":"object","required":["s","i","n","b"],"properties":{
			"s":{"type":"string","minLength":5,"maxLength":7},
			"i":{"type":"integer","minimum":10,"exclusiveMaximum":13},
			"n":{"type":"number","exclusiveMinimum":0,"maximum":1},
			"b":{"type":"boolean"}}}`, []string{"s", "i", "n", "b"}, nil},
		{"enum and const", `{"type":"object","required":["e","c"],"properties":{
			"e":{"type":["string","null"],"enum":["a","b",null]},"c":{"const":"fixed"}}}`, []string{"e", "c"},
			func(t *testing.T, args map[string]any) {
				if args["e"] == nil {
					t.Errorf("enum drew null while other values exist: %v", args)
				}
			}},
		{"formats", `{"type":"object","required":["dt","d","email","uri","uuid","ip4","ip6","host","b64"],"properties":{
			"dt":{"type":"string","format":"date-time"},"d":{"type":"string","format":"date"},
			"email":{"type":"string","format":"email"},"uri":{"type":"string","format":"uri"},
			"uuid":{"type":"string","format":"uuid"},"ip4":{"type":"string","format":"ipv4"},
			"ip6":{"type":"string","format":"ipv6"},"host":{"type":"string","format":"hostname"},
			"b64":{"type":"string","contentEncoding":"base64"}}}`, nil, nil},
		{"patterns", `{"type":"object","required":["p1","p2","p3"],"properties":{
			"p1":{"type":"string","pattern":"^[A-Z]{3}-\\d{2,4}$"},
			"p2":{"type":"string","pattern":"^(foo|bar)+_[a-f0-9]+$","maxLength":30},
			"p3":{"type":"string","pattern":"x[0-9]?y","minLength":2}}}`, nil,
			func(t *testing.T, args map[string]any) {
				if !regexp.MustCompile(`^[A-Z]{3}-\d{2,4}$`).MatchString(args["p1"].(string)) {
					t.Errorf("p1 = %q", args["p1"])
				}
			}},
		{"multipleOf", `{"type":"object","required":["m","f"],"properties":{
			"m":{"type":"integer","multipleOf":5,"minimum":7,"maximum":40},
			"f":{"type":"number","multipleOf":0.25,"minimum":1,"maximum":2}}}`, nil, nil},
		{"arrays", `{"type":"object","required":["a","u","t"],"properties":{
			"a":{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3},
			"u":{"type":"array","items":{"enum":["x","y","z"]},"uniqueItems":true,"minItems":3},
			"t":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"minItems":2}}}`, nil, nil},
		{"refs allOf and oneOf", `{"type":"object","required":["pet","both","either"],"properties":{
			"pet":{"$ref":"#/$defs/Pet"},
			"both":{"allOf":[{"$ref":"#/$defs/Pet"},{"type":"object","required":["age"],"properties":{"age":{"type":"integer","minimum":0,"maximum":30}}}]},
			"either":{"oneOf":[{"type":"string","format":"date"},{"type":"integer","minimum":1000}]}},
			"$defs":{"Pet":{"type":"object","required":["name"],"properties":{"name":{"type":"string","minLength":1},"tag":{"type":["string","null"]}}}}}`,
			nil, func(t *testing.T, args map[string]any) {
				if both := args["both"].(map[string]any); both["name"] == nil || both["age"] == nil {
					t.Errorf("allOf lost a required property: %v", both)
				}
			}},
		{"recursion", `{"type":"object","required":["tree"],"properties":{"tree":{"$ref":"#/$defs/Node"}},
			"$defs":{"Node":{"type":"object","required":["v"],"properties":{"v":{"type":"integer"},
				"kids":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}}}`, nil, nil},
		{"dependentRequired", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"string"}},
			"dependentRequired":{"a":["b","c"],"b":["c"]}}`, nil, nil},
		{"minProperties and additional", `{"type":"object","properties":{
			"m":{"type":"object","minProperties":2,"properties":{"x":{"type":"string"},"y":{"type":"string"},"z":{"type":"string"}}},
			"free":{"type":"object","additionalProperties":{"type":"integer"}}},"required":["m","free"]}`, nil, nil},
		{"untyped", `{"type":"object","required":["x","y"],"properties":{"x":{"minimum":3},"y":{"items":{"type":"boolean"}}}}`, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checker, err := newArgChecker(c.name, json.RawMessage(c.schema))
			if err != nil {
				t.Fatal(err)
			}
			var root map[string]any
			if err := json.Unmarshal([]byte(c.schema), &root); err != nil {
				t.Fatal(err)
			}
			for seed := range uint64(200) {
				args, err := newArgGen(seed, root).object()
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if err := checker.check(args); err != nil {
					raw, _ := json.Marshal(args)
					t.Fatalf("seed %d: %s does not satisfy the schema: %v", seed, raw, err)
				}
				for _, r := range c.required {
					if _, ok := args[r]; !ok {
						t.Fatalf("seed %d: required %q missing from %v", seed, r, args)
					}
				}
				if c.check != nil {
					c.check(t, args)
				}
			}
		})
	}
}

// TestArgGenDeterministic: the same seed gives the same arguments, and
// optional properties are sometimes drawn and sometimes not.
func TestArgGenDeterministic(t *testing.T) {
	const schema = `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"},"c":{"type":"array","items":{"type":"number"}}}}`
	var root map[string]any
	if err := json.Unmarshal([]byte(schema), &root); err != nil {
		t.Fatal(err)
	}
	sizes := map[int]bool{}
	for seed := range uint64(50) {
		a, err := newArgGen(seed, root).object()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := newArgGen(seed, root).object()
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: %v then %v", seed, a, b)
		}
		sizes[len(a)] = true
	}
	if !sizes[0] || len(sizes) < 3 {
		t.Errorf("optional properties drawn in sizes %v over 50 seeds, want a spread from 0", sizes)
	}
}

// TestArgsForReportsMisses: a schema nothing satisfies gives an error that
// says why, and a pattern Go cannot compile does not stop the rest of the
// schema from being checked.
func TestArgsForReportsMisses(t *testing.T) {
	if _, err := argsFor(1, "never", json.RawMessage(`{"type":"object","required":["x"],"properties":{"x":false}}`)); err == nil {
		t.Error("argsFor satisfied a false schema")
	}
	_, err := argsFor(1, "lookahead", json.RawMessage(`{"type":"object","required":["x","n"],"properties":{
		"x":{"type":"string","pattern":"^(?=a)a+$"},"n":{"type":"integer","minimum":5,"maximum":4}}}`))
	if err == nil {
		t.Errorf("argsFor with contradictory bounds: err = %v, want a miss", err)
	}
	args, err := argsFor(1, "ok", json.RawMessage(`{"type":"object","required":["x"],"properties":{"x":{"type":"string","pattern":"^(?=a)a+$"}}}`))
	if err != nil || args["x"] == nil {
		t.Errorf("argsFor with an ECMA-only pattern: %v, %v (the pattern is not checkable here: any string passes)", args, err)
	}
}
