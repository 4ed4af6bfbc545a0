package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/openapi"
)

// This file holds the parameter serializers: OpenAPI style/explode for
// path, query, header, cookie and form values. Every function appends to a
// byte slice and escapes each value component on its own, so separators are
// always literal and values never are.

// escaping tables: keep[c] is true when byte c is written as is.
var (
	keepUnreserved   = makeTable("")
	keepQueryReserve = makeTable(":/?[]@!$'()*,;=")
	keepPathLiteral  = makeTable("!$&'()*+,;=:@/")
	keepQueryLiteral = makeTable(":/?[]@!$'()*,;=&+%") // literal query text of a path template
)

func makeTable(extra string) *[256]bool {
	var t [256]bool
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "-._~" + extra {
		t[c] = true
	}
	return &t
}

const upperhex = "0123456789ABCDEF"

// appendEscaped percent-encodes every byte of s not kept by keep.
func appendEscaped(dst []byte, s string, keep *[256]bool) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if keep[c] {
			dst = append(dst, c)
		} else {
			dst = append(dst, '%', upperhex[c>>4], upperhex[c&15])
		}
	}
	return dst
}

// appendPathLiteral escapes literal template text from the document:
// valid path characters and existing %XX escapes stay, anything else
// (spaces, non-ASCII) is encoded.
func appendPathLiteral(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case keepPathLiteral[c]:
			dst = append(dst, c)
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			dst = append(dst, c)
		default:
			dst = append(dst, '%', upperhex[c>>4], upperhex[c&15])
		}
	}
	return dst
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scalar renders a decoded JSON value (strings, json.Number, bool, nil,
// float64, nested values) as the text a parameter carries. Nested arrays
// and objects, which no style can express, are compact JSON.
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return ""
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	}
}

// contentValue renders a parameter declared with "content": JSON-encoded
// for JSON media types, the plain string for a string under another type.
func contentValue(v any, contentType string) string {
	if s, ok := v.(string); ok && !isJSONType(contentType) {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return scalar(v)
	}
	return string(b)
}

// sortedKeys returns a map's keys in byte order (deterministic requests).
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// ---- path ----

// appendPathValue serializes a path parameter (styles simple, label,
// matrix). Every value component is escaped with the unreserved set, so a
// value can never add "/", "?", "#" or "%".
func appendPathValue(dst []byte, p *param, v any) []byte {
	switch {
	case p.ContentType != "":
		return escUnreserved(dst, contentValue(v, p.ContentType))
	case p.Style == "label":
		return appendLabel(dst, p, v)
	case p.Style == "matrix":
		return appendMatrix(dst, p, v)
	}
	return appendSimple(dst, v, p.Explode, escUnreserved)
}

// escUnreserved appends s with everything but the unreserved set encoded.
func escUnreserved(dst []byte, s string) []byte { return appendEscaped(dst, s, keepUnreserved) }

// appendLabel is style label: .a.b (explode) or .a,b for arrays;
// .k=v.k2=v2 (explode) or .k,v,k2,v2 for objects.
func appendLabel(dst []byte, p *param, v any) []byte {
	switch x := v.(type) {
	case []any:
		sep := byte(',')
		if p.Explode {
			sep = '.'
		}
		dst = append(dst, '.')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, sep)
			}
			dst = escUnreserved(dst, scalar(e))
		}
	case map[string]any:
		for i, k := range sortedKeys(x) {
			if i == 0 || p.Explode {
				dst = append(dst, '.')
			} else {
				dst = append(dst, ',')
			}
			dst = escUnreserved(dst, k)
			if p.Explode {
				dst = append(dst, '=')
			} else {
				dst = append(dst, ',')
			}
			dst = escUnreserved(dst, scalar(x[k]))
		}
	default:
		dst = append(dst, '.')
		dst = escUnreserved(dst, scalar(v))
	}
	return dst
}

// appendMatrix is style matrix: ;name=a;name=b (explode) or ;name=a,b for
// arrays; ;k=v;k2=v2 (explode) or ;name=k,v,k2,v2 for objects; ;name for
// an empty scalar.
func appendMatrix(dst []byte, p *param, v any) []byte {
	pair := func(dst []byte, name string) []byte {
		dst = append(dst, ';')
		dst = escUnreserved(dst, name)
		return append(dst, '=')
	}
	switch x := v.(type) {
	case []any:
		if p.Explode {
			for _, e := range x {
				dst = escUnreserved(pair(dst, p.Param), scalar(e))
			}
			return dst
		}
		dst = pair(dst, p.Param)
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = escUnreserved(dst, scalar(e))
		}
	case map[string]any:
		if p.Explode {
			for _, k := range sortedKeys(x) {
				dst = escUnreserved(pair(dst, k), scalar(x[k]))
			}
			return dst
		}
		dst = pair(dst, p.Param)
		for i, k := range sortedKeys(x) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(escUnreserved(dst, k), ',')
			dst = escUnreserved(dst, scalar(x[k]))
		}
	default:
		if s := scalar(v); s != "" {
			return escUnreserved(pair(dst, p.Param), s)
		}
		dst = append(dst, ';')
		dst = escUnreserved(dst, p.Param)
	}
	return dst
}

// appendSimple is style simple (path and header): a,b for arrays; k,v,k2,v2
// or (explode) k=v,k2=v2 for objects.
func appendSimple(dst []byte, v any, explode bool, esc func([]byte, string) []byte) []byte {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = esc(dst, scalar(e))
		}
	case map[string]any:
		for i, k := range sortedKeys(x) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = esc(dst, k)
			if explode {
				dst = append(dst, '=')
			} else {
				dst = append(dst, ',')
			}
			dst = esc(dst, scalar(x[k]))
		}
	default:
		dst = esc(dst, scalar(v))
	}
	return dst
}

// ---- query and form ----

// pairWriter appends name=value pairs to a query string or a form body.
type pairWriter struct {
	buf  []byte
	from int        // where the pairs start in buf (what precedes is not theirs)
	keep *[256]bool // value escaping (names always use keepUnreserved)
	form bool       // application/x-www-form-urlencoded: space as '+'
}

func (w *pairWriter) esc(s string, keep *[256]bool) {
	if w.form {
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case c == ' ':
				w.buf = append(w.buf, '+')
			case keepUnreserved[c]:
				w.buf = append(w.buf, c)
			default:
				w.buf = append(w.buf, '%', upperhex[c>>4], upperhex[c&15])
			}
		}
		return
	}
	w.buf = appendEscaped(w.buf, s, keep)
}

func (w *pairWriter) sep() {
	if len(w.buf) > w.from {
		w.buf = append(w.buf, '&')
	}
}

// name starts a pair: "&name=".
func (w *pairWriter) name(n string) {
	w.sep()
	w.esc(n, keepUnreserved)
	w.buf = append(w.buf, '=')
}

func (w *pairWriter) value(s string) { w.esc(s, w.keep) }

// raw appends literal separator bytes (already encoded).
func (w *pairWriter) raw(s string) { w.buf = append(w.buf, s...) }

// add serializes one query or form parameter by style: form (the default)
// repeats name=value for an exploded array or writes name=a,b; its object
// is k=v&k2=v2 exploded or name=k,v,k2,v2; spaceDelimited and
// pipeDelimited are form without explode with another separator;
// deepObject is name[k]=v. A style on a shape it does not define falls
// back to form.
func (w *pairWriter) add(p *param, v any) {
	w.keep = keepUnreserved
	if p.AllowReserved {
		w.keep = keepQueryReserve
	}
	if p.ContentType != "" {
		w.name(p.Param)
		w.value(contentValue(v, p.ContentType))
		return
	}
	if m, ok := v.(map[string]any); ok && p.Style == "deepObject" {
		w.deep(p.Param, m)
		return
	}
	switch x := v.(type) {
	case []any:
		if p.Explode {
			for _, e := range x {
				w.name(p.Param)
				w.value(scalar(e))
			}
			return
		}
		sep := w.separator(p.Style)
		w.name(p.Param)
		for i, e := range x {
			if i > 0 {
				w.raw(sep)
			}
			w.value(scalar(e))
		}
	case map[string]any:
		if p.Explode {
			for _, k := range sortedKeys(x) {
				w.name(k)
				w.value(scalar(x[k]))
			}
			return
		}
		sep := w.separator(p.Style)
		w.name(p.Param)
		for i, k := range sortedKeys(x) {
			if i > 0 {
				w.raw(sep)
			}
			w.value(k)
			w.raw(sep)
			w.value(scalar(x[k]))
		}
	default:
		w.name(p.Param)
		w.value(scalar(v))
	}
}

// separator is the (encoded) separator of an unexploded array or object.
func (w *pairWriter) separator(style string) string {
	switch {
	case style == "pipeDelimited":
		return "%7C"
	case style == "spaceDelimited" && w.form:
		return "+"
	case style == "spaceDelimited":
		return "%20"
	}
	return ","
}

// deep writes deepObject pairs: prefix[key]=value, recursing into nested
// objects (prefix[a][b]=v) and repeating the key for arrays.
func (w *pairWriter) deep(prefix string, m map[string]any) {
	for _, k := range sortedKeys(m) {
		key := prefix + "[" + k + "]"
		switch x := m[k].(type) {
		case map[string]any:
			w.deep(key, x)
		case []any:
			for _, e := range x {
				w.name(key)
				w.value(scalar(e))
			}
		default:
			w.name(key)
			w.value(scalar(x))
		}
	}
}

// ---- headers and cookies ----

// headerValue serializes a header parameter (style simple) and checks it.
func headerValue(p *param, v any) (string, error) {
	var s string
	if p.ContentType != "" {
		s = contentValue(v, p.ContentType)
	} else {
		s = string(appendSimple(nil, v, p.Explode, func(dst []byte, s string) []byte { return append(dst, s...) }))
	}
	if !validHeaderValue(s) {
		return "", fmt.Errorf("header %s must not contain control characters (CR, LF, NUL, …)", p.Param)
	}
	return s, nil
}

// appendCookie serializes a cookie parameter (style form) as
// "name=value[; name=value]" with RFC 6265 cookie-octets; other bytes and
// "%" are percent-encoded.
func appendCookie(dst []byte, p *param, v any) []byte {
	pair := func(n, val string) {
		if len(dst) > 0 {
			dst = append(dst, "; "...)
		}
		dst = append(dst, n...)
		dst = append(dst, '=')
		dst = append(dst, cookieEscape(val)...)
	}
	if p.ContentType != "" {
		pair(p.Param, contentValue(v, p.ContentType))
		return dst
	}
	switch x := v.(type) {
	case []any:
		if p.Explode {
			for _, e := range x {
				pair(p.Param, scalar(e))
			}
			return dst
		}
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = cookieEscape(scalar(e))
		}
		pair(p.Param, "")
		dst = append(dst, strings.Join(parts, ",")...)
	case map[string]any:
		if p.Explode {
			for _, k := range sortedKeys(x) {
				if validCookieName(k) {
					pair(k, scalar(x[k]))
				}
			}
			return dst
		}
		var parts []string
		for _, k := range sortedKeys(x) {
			parts = append(parts, cookieEscape(k), cookieEscape(scalar(x[k])))
		}
		pair(p.Param, "")
		dst = append(dst, strings.Join(parts, ",")...)
	default:
		pair(p.Param, scalar(v))
	}
	return dst
}

func isCookieOctet(c byte) bool {
	// cookie-octet = %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E
	return c == 0x21 || 0x23 <= c && c <= 0x2B || 0x2D <= c && c <= 0x3A || 0x3C <= c && c <= 0x5B || 0x5D <= c && c <= 0x7E
}

func cookieEscape(s string) string {
	ok := true
	for i := 0; i < len(s); i++ {
		if !isCookieOctet(s[i]) || s[i] == '%' {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isCookieOctet(c) && c != '%' {
			b = append(b, c)
		} else {
			b = append(b, '%', upperhex[c>>4], upperhex[c&15])
		}
	}
	return string(b)
}

// isTokenChar: RFC 9110 tchar.
func isTokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}

func validCookieName(s string) bool { return validHeaderName(s) }

// validHeaderValue rejects CR, LF, NUL and every other control byte except
// horizontal tab (RFC 9110 field-value).
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// forbiddenHeader names headers no argument may set: hop-by-hop headers,
// framing, routing and credentials (one list with the generator, which
// never offers them as arguments). The auth resolver sets credentials; the
// transport sets the rest.
func forbiddenHeader(name string) bool { return openapi.ReservedHeader(name) }

// isJSONType reports whether a media type is JSON (application/json or a
// +json suffix).
func isJSONType(ct string) bool {
	mt := mediaType(ct)
	return mt == "application/json" || strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "/json")
}

// mediaType lower-cases a content type and drops its parameters.
func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	for i := 0; i < len(ct); i++ {
		if 'A' <= ct[i] && ct[i] <= 'Z' {
			return strings.ToLower(ct)
		}
	}
	return ct
}

// firstMediaType picks the first entry of an encoding contentType list
// ("image/png, application/octet-stream"), skipping wildcards.
func firstMediaType(list string) string {
	for part := range strings.SplitSeq(list, ",") {
		part = strings.TrimSpace(part)
		if part != "" && !strings.Contains(part, "*") {
			return part
		}
	}
	return ""
}

// compactJSON appends v as compact JSON without HTML escaping.
func compactJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
