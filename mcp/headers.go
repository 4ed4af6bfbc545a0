package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// headerParam is a tool argument mirrored into an Mcp-Param-{Name} header
// (the x-mcp-header annotation).
type headerParam struct {
	path   []string // property chain from the schema root
	header string   // canonical header name, Mcp-Param-{Name}
	kind   string   // string, integer or boolean
}

// headerParams finds the x-mcp-header annotations of an input schema and
// checks the spec's constraints on them: a token name, unique ignoring case,
// on a string, integer or boolean property reachable through properties only.
func headerParams(schema json.RawMessage) ([]headerParam, error) {
	// Most schemas have no annotation: their root is checked without
	// decoding the rest (a \u escape could spell the annotation's name).
	if !bytes.Contains(schema, []byte("x-mcp-header")) && !bytes.Contains(schema, []byte(`\u`)) {
		if typ, _, ok := rootKeywords(schema); ok && !bytes.ContainsRune(typ, '\\') {
			if string(typ) != `"object"` {
				return nil, fmt.Errorf(`inputSchema must have "type": "object" at its root`)
			}
			return nil, nil
		}
	}
	return headerParamsDecoded(schema)
}

// headerParamsDecoded is headerParams on the decoded schema.
func headerParamsDecoded(schema json.RawMessage) ([]headerParam, error) {
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("inputSchema is not a JSON object: %w", err)
	}
	if t, _ := root["type"].(string); t != "object" {
		return nil, fmt.Errorf(`inputSchema must have "type": "object" at its root`)
	}
	var out []headerParam
	seen := map[string]bool{}
	var walk func(node map[string]any, path []string) error
	walk = func(node map[string]any, path []string) error {
		props, _ := node["properties"].(map[string]any)
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			child, ok := props[name].(map[string]any)
			if !ok {
				continue
			}
			p := append(append([]string(nil), path...), name)
			if h, ok := child["x-mcp-header"]; ok {
				hs, _ := h.(string)
				if !isToken(hs) {
					return fmt.Errorf("x-mcp-header %q on %s is not an HTTP token", hs, strings.Join(p, "."))
				}
				if seen[strings.ToLower(hs)] {
					return fmt.Errorf("x-mcp-header %q is used twice", hs)
				}
				seen[strings.ToLower(hs)] = true
				kind, _ := child["type"].(string)
				if kind != "string" && kind != "integer" && kind != "boolean" {
					return fmt.Errorf("x-mcp-header %q is on a %q property; only string, integer and boolean are allowed", hs, kind)
				}
				out = append(out, headerParam{path: p, header: http.CanonicalHeaderKey(HeaderParamPrefix + hs), kind: kind})
			}
			if err := walk(child, p); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(root, nil)
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// decodeHeaderValue undoes the =?base64?…?= sentinel encoding.
func decodeHeaderValue(v string) (string, bool) {
	if strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?=") && len(v) >= len("=?base64??=") {
		b, err := base64.StdEncoding.Strict().DecodeString(v[len("=?base64?") : len(v)-2])
		if err != nil {
			return "", false
		}
		return string(b), true
	}
	return v, true
}

// checkParamHeaders verifies every annotated argument present in args has a
// matching Mcp-Param header.
func checkParamHeaders(params []headerParam, args json.RawMessage, hdr http.Header) *Error {
	var obj map[string]any
	if len(args) == 0 || json.Unmarshal(args, &obj) != nil {
		return nil // malformed arguments are reported by tools/call itself
	}
	for _, p := range params {
		var v any = obj
		for _, k := range p.path {
			m, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = m[k]
		}
		raw := hdr.Get(p.header)
		if v == nil {
			continue // absent or null: no header expected
		}
		if raw == "" {
			return errHeaderMismatch("the %s header is required when argument %s is present", p.header, strings.Join(p.path, "."))
		}
		got, ok := decodeHeaderValue(raw)
		if !ok {
			return errHeaderMismatch("%s header is not valid base64", p.header)
		}
		if !headerMatches(got, v) {
			return errHeaderMismatch("%s header %q does not match argument %s", p.header, got, strings.Join(p.path, "."))
		}
	}
	return nil
}

func headerMatches(h string, v any) bool {
	switch x := v.(type) {
	case string:
		return h == x
	case bool:
		return h == strconv.FormatBool(x)
	case float64:
		n, err := strconv.ParseFloat(h, 64)
		return err == nil && n == x && math.Abs(x) <= 1<<53-1
	}
	return false
}
