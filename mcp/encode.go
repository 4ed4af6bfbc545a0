package mcp

import (
	"encoding/json"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// Hand-written encoders for the results every tools/call produces. They
// write what encoding/json would (same members, same order, same omissions)
// without reflection, and they never compact a json.RawMessage twice: a
// gateway's structuredContent is the upstream's body, validated and
// compacted once here. Strings are quoted minimally (RFC 8785), not with
// encoding/json's HTML escapes; both are the same JSON.

// appendToolResult appends r as a complete tools/call result: resultType,
// content, structuredContent, isError, then _meta (meta when r has none).
// In the legacy era (2025-11-25) there is no resultType, and a
// structuredContent that is not an object is left out (that revision
// requires an object; the text block still carries the content).
func appendToolResult(dst []byte, r *CallToolResult, meta []byte, e era) ([]byte, error) {
	if e == modern {
		dst = append(dst, `{"resultType":"`+ResultComplete+`","content":[`...)
	} else {
		dst = append(dst, `{"content":[`...)
	}
	for i := range r.Content {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendContent(dst, &r.Content[i]); err != nil {
			return nil, err
		}
	}
	dst = append(dst, ']')
	if r.StructuredContent != nil {
		mark := len(dst)
		dst = append(dst, `,"structuredContent":`...)
		value := len(dst)
		var err error
		if dst, err = appendValue(dst, r.StructuredContent); err != nil {
			return nil, fmt.Errorf("structuredContent: %w", err)
		}
		if e == legacyEra && dst[value] != '{' {
			dst = dst[:mark]
		}
	}
	if r.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	if r.Meta != nil {
		dst = append(dst, `,"_meta":`...)
		var err error
		if dst, err = appendValue(dst, r.Meta); err != nil {
			return nil, fmt.Errorf("_meta: %w", err)
		}
	} else if meta != nil {
		dst = append(dst, `,"_meta":`...)
		dst = append(dst, meta...)
	}
	return append(dst, '}'), nil
}

// resultSizeHint estimates the encoded size of r, so that the buffer is
// allocated once.
func resultSizeHint(r *CallToolResult) int {
	n := 64
	for i := range r.Content {
		c := &r.Content[i]
		n += 48 + len(c.Text) + len(c.Text)/8 + len(c.Data) + len(c.MIMEType) + len(c.URI)
	}
	if raw, ok := r.StructuredContent.(json.RawMessage); ok {
		n += 24 + len(raw)
	}
	return n
}

// appendContent appends one content block. The members a block's type
// requires are always written, even when empty (a text block's "text", an
// image's "data" and "mimeType", a link's "uri" and "name").
func appendContent(dst []byte, c *Content) ([]byte, error) {
	media := c.Type == "image" || c.Type == "audio"
	link := c.Type == "resource_link"
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, c.Type)
	dst = appendMember(dst, "text", c.Text, c.Type == "text")
	dst = appendMember(dst, "data", c.Data, media)
	dst = appendMember(dst, "mimeType", c.MIMEType, media)
	var err error
	if c.Resource != nil {
		dst = append(dst, `,"resource":`...)
		if dst, err = appendValue(dst, c.Resource); err != nil {
			return nil, err
		}
	}
	dst = appendMember(dst, "uri", c.URI, link)
	dst = appendMember(dst, "name", c.Name, link)
	dst = appendMember(dst, "description", c.Description, false)
	if c.Annotations != nil {
		dst = append(dst, `,"annotations":`...)
		if dst, err = appendValue(dst, c.Annotations); err != nil {
			return nil, err
		}
	}
	if c.Meta != nil {
		dst = append(dst, `,"_meta":`...)
		if dst, err = appendValue(dst, c.Meta); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// MarshalJSON encodes a content block as appendContent does.
func (c Content) MarshalJSON() ([]byte, error) { return appendContent(nil, &c) }

// appendMember appends ,"name":"value" when value is set or required.
func appendMember(dst []byte, name, value string, required bool) []byte {
	if value == "" && !required {
		return dst
	}
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return appendString(dst, value)
}

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD, as
// with encoding/json.
func appendString(dst []byte, s string) []byte {
	dst, _ = jsontext.AppendQuote(dst, s) // the error only reports the replacement
	return dst
}

// appendValue appends v as compact JSON. Raw JSON is validated and
// compacted in one pass; anything else goes through encoding/json.
func appendValue(dst []byte, v any) ([]byte, error) {
	switch raw := v.(type) {
	case json.RawMessage:
		return appendRaw(dst, raw)
	case jsontext.Value:
		return appendRaw(dst, raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

func appendRaw(dst, raw []byte) ([]byte, error) {
	n := len(dst)
	out, err := jsontext.AppendFormat(dst, raw, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if err != nil {
		return dst[:n], fmt.Errorf("invalid JSON: %w", err)
	}
	return out, nil
}
