package audit

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// sensitiveNames are the fragments of a member name (lower case, without
// '-' or '_') whose value is never kept in a record.
var sensitiveNames = []string{
	"authorization", "password", "passwd", "secret", "token", "apikey",
	"cookie", "credential", "privatekey", "accesskey", "signature",
}

// Sensitive reports whether a member name looks like it holds a credential.
func Sensitive(name string) bool {
	n := strings.Map(func(r rune) rune {
		switch {
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		case r == '-' || r == '_':
			return -1
		}
		return r
	}, name)
	for _, s := range sensitiveNames {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// redacted replaces a sensitive value.
var redacted = jsontext.String("[redacted]")

// redactArguments returns a compact copy of args whose members with
// sensitive names (at any depth) hold "[redacted]", or nil when args is
// empty or not valid JSON.
func redactArguments(args json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		return nil
	}
	var out bytes.Buffer
	dec := jsontext.NewDecoder(bytes.NewReader(args), jsontext.AllowDuplicateNames(true))
	enc := jsontext.NewEncoder(&out, jsontext.AllowDuplicateNames(true))
	if err := copyRedacted(dec, enc); err != nil {
		return nil
	}
	if _, err := dec.ReadToken(); err == nil {
		return nil // trailing data
	}
	return bytes.TrimSpace(out.Bytes())
}

func copyRedacted(dec *jsontext.Decoder, enc *jsontext.Encoder) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case '{':
		if err := enc.WriteToken(jsontext.BeginObject); err != nil {
			return err
		}
		for dec.PeekKind() != '}' {
			name, err := dec.ReadToken()
			if err != nil {
				return err
			}
			key := name.String()
			if err := enc.WriteToken(jsontext.String(key)); err != nil {
				return err
			}
			if Sensitive(key) {
				if err := dec.SkipValue(); err != nil {
					return err
				}
				if err := enc.WriteToken(redacted); err != nil {
					return err
				}
				continue
			}
			if err := copyRedacted(dec, enc); err != nil {
				return err
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		return enc.WriteToken(jsontext.EndObject)
	case '[':
		if err := enc.WriteToken(jsontext.BeginArray); err != nil {
			return err
		}
		for dec.PeekKind() != ']' {
			if err := copyRedacted(dec, enc); err != nil {
				return err
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		return enc.WriteToken(jsontext.EndArray)
	}
	return enc.WriteToken(tok)
}
