package mcp

import (
	"fmt"
	"log/slog"
	"strconv"
)

// Secret holds a credential (a bearer token, an API key) so that it cannot
// leak by accident: every way of printing or encoding it (fmt with any
// verb, [slog], encoding/json, encoding.TextMarshaler) shows [Redacted]
// instead of the value. The one way to read the value is [Secret.Reveal],
// called where the credential is actually sent.
//
// The zero Secret is empty; an empty Secret prints as the empty string, so
// a log still tells "no credential" from "a credential". Secrets are
// comparable: two are equal when they hold the same value.
type Secret struct {
	value string
}

// Redacted is what a non-empty [Secret] prints as.
const Redacted = "[REDACTED]"

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{value: s} }

// Reveal returns the credential itself. Call it only to send it where it
// belongs; never log or store what it returns.
func (s Secret) Reveal() string { return s.value }

// IsZero reports whether s is empty.
func (s Secret) IsZero() bool { return s.value == "" }

// redacted is what s shows in place of its value.
func (s Secret) redacted() string {
	if s.value == "" {
		return ""
	}
	return Redacted
}

// String returns [Redacted] (or "" for an empty Secret).
func (s Secret) String() string { return s.redacted() }

// GoString is what %#v prints: the type with its value redacted.
func (s Secret) GoString() string { return "mcp.Secret(" + strconv.Quote(s.redacted()) + ")" }

// Format prints the redacted form for every verb, so neither %x nor %q nor
// %v of a struct holding a Secret reveals it.
func (s Secret) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		_, _ = f.Write([]byte(s.GoString()))
	case verb == 'q':
		_, _ = f.Write([]byte(strconv.Quote(s.redacted())))
	default:
		_, _ = f.Write([]byte(s.redacted()))
	}
}

// LogValue makes [slog] log the redacted form.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.redacted()) }

// MarshalText encodes the redacted form.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.redacted()), nil }

// MarshalJSON encodes the redacted form as a JSON string.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(s.redacted())), nil }
