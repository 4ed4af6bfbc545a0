package mrtr_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/mcpgate/mcpgate/mrtr"
)

func hashOf(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func TestHashArguments(t *testing.T) {
	tests := []struct {
		raw, canonical string
	}{
		{"", "{}"},
		{"  ", "{}"},
		{"null", "{}"},
		{"{}", "{}"},
		{" { }\n", "{}"},
		{`{"b":1,"a":"x"}`, `{"a":"x","b":1}`},
		{`{"n":1.0,"e":1e2,"z":-0}`, `{"e":100,"n":1,"z":0}`},
		{`{"s":"\u00e9\/"}`, `{"s":"é/"}`},
		{`{"nested":{"y":[3,{"b":2,"a":1}],"x":true}}`, `{"nested":{"x":true,"y":[3,{"a":1,"b":2}]}}`},
		// RFC 8785 §3.2.3 sorts by UTF-16 code units: U+1F600 (D83D DE00) before U+FB33.
		{`{"\ufb33":1,"\ud83d\ude00":2}`, "{\"\U0001F600\":2,\"\uFB33\":1}"},
		// The deliberate deviations from RFC 8785: numbers keep their exact
		// value (JCS would round these to doubles: ...992, ...800, 1e+21)
		// and integers keep their digits up to 1e100.
		{`{"a":9007199254740993}`, `{"a":9007199254740993}`},
		{`{"a":1234567890123456789}`, `{"a":1234567890123456789}`},
		{`{"a":1000000000000000000001}`, `{"a":1000000000000000000001}`},
		{`{"a":1e100}`, `{"a":1e+100}`},
		{`{"a":0.1000000000000000000001}`, `{"a":0.1000000000000000000001}`},
		// ...and one spelling per value, as JCS has for doubles.
		{`{"a":[28.0,2.8e1,280E-1,-0.0,1.50,5e0,1e21,1e-7,-1.25e-10]}`, `{"a":[28,28,28,0,1.5,5,1000000000000000000000,1e-7,-1.25e-10]}`},
		{`{"deep":[{"x":[{"y":100e-2}]}]}`, `{"deep":[{"x":[{"y":1}]}]}`},
		{`7.0`, `7`},
		// a number no call will accept still hashes, in linear time
		{`{"a":1e1000000}`, `{"a":1e+1000000}`},
	}
	for _, tt := range tests {
		raw := json.RawMessage(tt.raw)
		before := string(raw)
		got, err := mrtr.HashArguments(raw)
		if err != nil {
			t.Errorf("HashArguments(%s): %v", tt.raw, err)
			continue
		}
		if want := hashOf(tt.canonical); got != want {
			t.Errorf("HashArguments(%s) = %s, want hash of %s", tt.raw, got, tt.canonical)
		}
		if string(raw) != before {
			t.Errorf("HashArguments modified its input: %s", raw)
		}
	}
	for _, bad := range []string{`{`, `{"a":1,"a":2}`, `{"a":1} x`, `{} {}`, `nul`, `{"a":01}`, `{"a":1.}`, "{\"a\":\"\xff\"}", `{"a":[1,]}`} {
		if h, err := mrtr.HashArguments(json.RawMessage(bad)); err == nil {
			t.Errorf("HashArguments(%s) = %s, want an error", bad, h)
		}
	}
}

// TestHashArgumentsNumbersExact: two spellings hash alike exactly when they
// denote the same number.
func TestHashArgumentsNumbersExact(t *testing.T) {
	spellings := []string{"9007199254740992", "9007199254740993", "9007199254740992.0", "9.007199254740993e15",
		"28", "28.0", "2.8e1", "28.000000000000000000001", "-0", "0", "0e5", "1e400", "10e399", "1e401"}
	values := map[string]string{ // spelling → the value's name
		"9007199254740992": "2^53", "9007199254740992.0": "2^53",
		"9007199254740993": "2^53+1", "9.007199254740993e15": "2^53+1",
		"28": "28", "28.0": "28", "2.8e1": "28", "28.000000000000000000001": "28+",
		"-0": "0", "0": "0", "0e5": "0", "1e400": "1e400", "10e399": "1e400", "1e401": "1e401",
	}
	for _, a := range spellings {
		for _, b := range spellings {
			ha, err1 := mrtr.HashArguments(json.RawMessage(`{"n":` + a + `}`))
			hb, err2 := mrtr.HashArguments(json.RawMessage(`{"n":` + b + `}`))
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if same := values[a] == values[b]; (ha == hb) != same {
				t.Errorf("%s and %s: equal hashes %v, same number %v", a, b, ha == hb, same)
			}
		}
	}
}
