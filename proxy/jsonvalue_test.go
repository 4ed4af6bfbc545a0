package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcpgate/mcpgate/internal/jsonx"
)

// FuzzDecodeValueMatchesJSONSchema: arguments are decoded by decodeValue,
// which must give what jsonschema.UnmarshalJSON (encoding/json with
// UseNumber) gave before: the same values (numbers in canonical form), and
// an error for the same inputs, except that decodeValue also refuses a
// member name used twice in one object (package jsonx), which encoding/json
// accepts (the last one wins), and numbers beyond the limits of
// jsonx.Number.Check.
func FuzzDecodeValueMatchesJSONSchema(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,null,"x"],"c":{"d":-1.5e3}}`, `{"a":1,"a":2}`, `"\ud800"`,
		"\"\xff\"", `[1,2`, `{} x`, ` 7 `, `{"\u00e9":"\n"}`, `{"pet\u0049d":1,"petId":2}`, "{\"\xff\":1}", `[]`, `{"a":[[[]]]}`} {
		f.Add([]byte(s))
	}
	var values valueDecoders
	knownNames := paramNames{{Name: `\u00e9`}, {Name: "a"}, {Name: "petId"}, {Name: "é"}} // sorted by bytes
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := values.decode(b, nil)
		want, werr := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if errors.As(err, new(*numberError)) && werr == nil {
			return // a number beyond the limits: refused on purpose
		}
		if werr == nil && !jsontext.Value(b).IsValid(jsontext.AllowInvalidUTF8(true)) {
			werr = jsonx.ErrDuplicateName
		}
		if (err == nil) != (werr == nil) {
			t.Fatalf("decode(%q): error %v, jsonschema.UnmarshalJSON %v", b, err, werr)
		}
		// the names of known arguments are reused, not decoded differently
		named, nerr := values.decode(b, knownNames)
		if (nerr == nil) != (err == nil) || err == nil && !reflect.DeepEqual(named, got) {
			t.Fatalf("decode(%q) with known names = %#v (%v), without %#v (%v)", b, named, nerr, got, err)
		}
		if err == nil && !reflect.DeepEqual(got, canonicalNumbers(want)) {
			t.Fatalf("decode(%q) = %#v, jsonschema.UnmarshalJSON %#v", b, got, want)
		}
	})
}

// canonicalNumbers rewrites every json.Number of a decoded value in its
// canonical form.
func canonicalNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		c, err := jsonx.AppendCanonicalNumber(nil, []byte(x))
		if err != nil {
			panic(err)
		}
		return json.Number(c)
	case []any:
		for i := range x {
			x[i] = canonicalNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = canonicalNumbers(x[k])
		}
	}
	return v
}
