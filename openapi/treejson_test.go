package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"
)

// TestAppendTree: appendTree gives marshalNoEscape's bytes for every kind
// of value the schema converter puts in a tree.
func TestAppendTree(t *testing.T) {
	min, mult := 0.5, 1e-7
	for _, v := range []any{
		nil, true, false, "", "plain", `quote " backslash \ <html> & 'single'`,
		"controls \x00\x01\b\f\n\r\t\x1f", "line\u2028para\u2029", "bad \xff\xfe bytes \xe2\x80", "– ’ …",
		map[string]any(nil), []any(nil), []string(nil), map[string]any{}, []any{}, []string{},
		map[string]any{"type": "object", "properties": map[string]any{"b": map[string]any{"type": "string"}, "a": true},
			"required": []string{"b", "a"}, "minimum": min, "multipleOf": mult, "maxLength": uint64(10), "minItems": 3,
			"enum": []any{json.Number("1"), json.Number("-2.5e10"), "x", nil, false}, "default": json.RawMessage(`{"k": [1, 2]}`),
			"dependentRequired": map[string][]string{"z": {"y"}}, "const": map[string]any{"\u00e9": []any{map[string]any{}}}},
		[]any{1.0, float64(1e21), 1e-6, 123456789.0, math.Copysign(0, -1)},
	} {
		got, err := appendTree(nil, v)
		want, werr := marshalNoEscape(v)
		if err != nil || werr != nil || !bytes.Equal(got, want) {
			t.Errorf("%#v:\n appendTree     %s (%v)\n marshalNoEscape %s (%v)", v, got, err, want, werr)
		}
	}
	if _, err := appendTree(nil, map[string]any{"n": json.Number("1x")}); err == nil {
		t.Errorf("an invalid number encodes")
	}
}

// FuzzAppendTree: any JSON document, decoded as the loader decodes it,
// encodes to marshalNoEscape's bytes.
func FuzzAppendTree(f *testing.F) {
	f.Add([]byte(`{"a":[1,"x\u2028",{"b":null}],"c":true,"d":"\u00e9<&>"}`))
	f.Add([]byte(`["\ud800", "tab\t", 1e400, -0]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, err := decodeTree(context.Background(), data)
		if err != nil {
			return
		}
		got, err := appendTree(nil, tree)
		want, werr := marshalNoEscape(tree)
		if (err == nil) != (werr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("%q:\n appendTree      %q (%v)\n marshalNoEscape %q (%v)", data, got, err, want, werr)
		}
	})
}
