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
	for _, bad := range []string{`{`, `{"a":1,"a":2}`, `{"a":1} x`, `nul`} {
		if h, err := mrtr.HashArguments(json.RawMessage(bad)); err == nil {
			t.Errorf("HashArguments(%s) = %s, want an error", bad, h)
		}
	}
}
