package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

const testToken = "tok-3f9a1c"

// TestSecretNeverPrints formats, logs and encodes a Principal holding a
// credential every way a program commonly does, and checks that the token
// appears in none of them while the rest of the principal does.
func TestSecretNeverPrints(t *testing.T) {
	p := Principal{Subject: "user-1", Credential: NewSecret(testToken)}
	outputs := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10s", "%T"} {
		outputs["fmt "+verb+" principal"] = fmt.Sprintf(verb, p)
		outputs["fmt "+verb+" secret"] = fmt.Sprintf(verb, p.Credential)
		outputs["fmt "+verb+" pointer"] = fmt.Sprintf(verb, &p)
	}
	outputs["fmt Sprint"] = fmt.Sprint(p, p.Credential)
	outputs["fmt Sprintln"] = fmt.Sprintln(p, p.Credential)
	outputs["String"] = p.Credential.String()
	outputs["GoString"] = p.Credential.GoString()

	for name, h := range map[string]func(*bytes.Buffer) slog.Handler{
		"slog text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		"slog json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var b bytes.Buffer
		l := slog.New(h(&b))
		l.Info("call", "principal", p, "credential", p.Credential, "ptr", &p)
		l.Info("group", slog.Group("g", "credential", p.Credential), slog.Any("any", p))
		outputs[name] = b.String()
	}

	for name, v := range map[string]any{"principal": p, "secret": p.Credential, "map": map[string]any{"c": p.Credential}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal %s: %v", name, err)
		}
		outputs["json "+name] = string(b)
	}
	text, err := p.Credential.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	outputs["MarshalText"] = string(text)

	for name, out := range outputs {
		if strings.Contains(out, testToken) || strings.Contains(out, fmt.Sprintf("%x", testToken)) ||
			strings.Contains(out, fmt.Sprintf("%X", testToken)) {
			t.Errorf("%s reveals the credential: %s", name, out)
		}
	}
	for _, name := range []string{"fmt %+v principal", "slog text", "slog json", "json principal"} {
		if !strings.Contains(outputs[name], "user-1") || !strings.Contains(outputs[name], Redacted) {
			t.Errorf("%s = %q: want the subject and %s", name, outputs[name], Redacted)
		}
	}
	if p.Credential.Reveal() != testToken {
		t.Fatalf("Reveal = %q, want the token", p.Credential.Reveal())
	}
}

func TestSecretZero(t *testing.T) {
	tests := []struct {
		s        Secret
		zero     bool
		printed  string
		jsonText string
	}{
		{Secret{}, true, "", `""`},
		{NewSecret(""), true, "", `""`},
		{NewSecret("x"), false, Redacted, `"` + Redacted + `"`},
	}
	for _, tt := range tests {
		if tt.s.IsZero() != tt.zero {
			t.Errorf("IsZero(%v) = %v", tt.s, !tt.zero)
		}
		if got := fmt.Sprint(tt.s); got != tt.printed {
			t.Errorf("Sprint = %q, want %q", got, tt.printed)
		}
		b, _ := json.Marshal(tt.s)
		if string(b) != tt.jsonText {
			t.Errorf("json = %s, want %s", b, tt.jsonText)
		}
	}
	a, a2, b := NewSecret("a"), NewSecret("a"), NewSecret("b")
	if a != a2 || a == b {
		t.Error("Secrets compare by value")
	}
}
