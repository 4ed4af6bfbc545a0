package proxy

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"strconv"
	"strings"
)

// This file encodes request bodies: JSON (the body properties as an
// object, or the whole-body argument), binary (a base64 argument decoded),
// text, application/x-www-form-urlencoded and multipart/form-data.

// buildBody serializes the request body; it returns nil for no body.
func (e *Endpoint) buildBody(args map[string]any, bad *argErrors) ([]byte, string, error) {
	if e.body == nil {
		return nil, "", nil
	}
	var whole any
	haveWhole := false
	if e.whole != nil {
		whole, haveWhole = args[e.whole.Name]
		if haveWhole && whole == nil && e.bodyKind != bodyJSON {
			haveWhole = false
		}
	}
	if !haveWhole && !e.hasBodyProperty(args) && !e.body.Required {
		return nil, "", nil
	}
	ct := e.body.ContentType
	switch e.bodyKind {
	case bodyJSON:
		return e.jsonBody(args, whole, ct, bad)
	case bodyBinary:
		return e.binaryBody(whole, haveWhole, ct, bad)
	case bodyText:
		if s, ok := whole.(string); ok {
			return []byte(s), ct, nil
		}
		return []byte(scalar(whole)), ct, nil
	case bodyForm:
		return e.formBody(args, whole), "application/x-www-form-urlencoded", nil
	case bodyMultipart:
		return e.multipartBody(args, whole, bad)
	}
	return nil, "", nil
}

// hasBodyProperty reports whether any body property argument is present.
func (e *Endpoint) hasBodyProperty(args map[string]any) bool {
	for _, bp := range e.bodyProps {
		if _, ok := args[bp.Name]; ok {
			return true
		}
	}
	return false
}

// jsonBody is the whole-body argument, or the body properties as an
// object, as compact JSON.
func (e *Endpoint) jsonBody(args map[string]any, whole any, ct string, bad *argErrors) ([]byte, string, error) {
	v := whole
	if e.whole == nil {
		props := make(map[string]any, len(e.bodyProps))
		for _, bp := range e.bodyProps {
			if v, ok := args[bp.Name]; ok {
				props[bp.Param] = v
			}
		}
		v = props
	}
	b, err := compactJSON(v)
	if err != nil {
		bad.add("/%s: cannot encode the body as JSON: %v", e.tool.Name, err)
		return nil, "", nil
	}
	if strings.Contains(ct, "*") {
		ct = "application/json"
	}
	return b, ct, nil
}

// binaryBody is the base64 whole-body argument, decoded.
func (e *Endpoint) binaryBody(whole any, haveWhole bool, ct string, bad *argErrors) ([]byte, string, error) {
	s, ok := whole.(string)
	if !ok {
		if haveWhole {
			bad.add("/%s: must be a base64 string", e.whole.Name)
		} else {
			bad.add("/%s: missing body", e.whole.Name)
		}
		return nil, "", nil
	}
	b, err := decodeBase64(s)
	if err != nil {
		bad.add("/%s: not valid base64: %v", e.whole.Name, err)
		return nil, "", nil
	}
	if strings.Contains(ct, "*") {
		ct = "application/octet-stream"
	}
	return b, ct, nil
}

// formBody is application/x-www-form-urlencoded: the whole-body object's
// members (form, exploded), or the body properties by their encoding.
func (e *Endpoint) formBody(args map[string]any, whole any) []byte {
	w := pairWriter{form: true, keep: keepUnreserved}
	if e.whole != nil {
		if m, ok := whole.(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				w.add(&param{Param: k, Style: "form", Explode: true}, m[k])
			}
		}
		return w.buf
	}
	for _, bp := range e.bodyProps {
		v, ok := args[bp.Name]
		if !ok || v == nil {
			continue
		}
		q := *bp
		if q.Style == "" {
			q.Style, q.Explode = "form", true
		}
		w.add(&q, v)
	}
	return w.buf
}

func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	_, err := base64.StdEncoding.DecodeString(s)
	return nil, err
}

// multipartBody writes multipart/form-data: file parts from
// {content (base64), filename, contentType}, strings and numbers as text
// parts, arrays of scalars as repeated parts, other values as JSON parts.
func (e *Endpoint) multipartBody(args map[string]any, whole any, bad *argErrors) ([]byte, string, error) {
	var b bytes.Buffer
	w := partWriter{multipart.NewWriter(&b)}
	if e.whole != nil {
		if m, ok := whole.(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				w.field(k, m[k], "")
			}
		}
	}
	for _, bp := range e.bodyProps {
		v, ok := args[bp.Name]
		if !ok || v == nil {
			continue
		}
		if bp.File {
			// One file, or an array of files: one part each.
			files, many := v.([]any)
			if !many {
				files = []any{v}
			}
			for i, f := range files {
				at := "/" + bp.Name
				if many {
					at += "/" + strconv.Itoa(i)
				}
				if err := w.file(bp, f, at, bad); err != nil {
					return nil, "", err
				}
			}
			continue
		}
		ct := firstMediaType(bp.ContentType)
		if arr, ok := v.([]any); ok && ct == "" && allScalars(arr) {
			for _, el := range arr {
				w.field(bp.Param, el, "")
			}
			continue
		}
		w.field(bp.Param, v, ct)
	}
	if err := w.mw.Close(); err != nil {
		return nil, "", fmt.Errorf("proxy: multipart: %w", err)
	}
	return b.Bytes(), w.mw.FormDataContentType(), nil
}

// partWriter writes the parts of a multipart body.
type partWriter struct{ mw *multipart.Writer }

// field writes a value part: a scalar as text, an object or array as JSON
// (content type application/json unless ct says otherwise).
func (w partWriter) field(name string, v any, ct string) {
	hdr := textproto.MIMEHeader{}
	hdr.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"`, quoteEscape(name)))
	var data []byte
	switch x := v.(type) {
	case map[string]any, []any:
		data, _ = compactJSON(x)
		if ct == "" {
			ct = "application/json"
		}
	default:
		data = []byte(scalar(x))
	}
	if ct != "" {
		hdr.Set("Content-Type", ct)
	}
	if pw, err := w.mw.CreatePart(hdr); err == nil {
		_, _ = pw.Write(data)
	}
}

// file writes a file part from {content (base64), filename, contentType};
// argument problems go to bad, named by at (the argument's JSON pointer).
func (w partWriter) file(bp *param, v any, at string, bad *argErrors) error {
	f, ok := v.(map[string]any)
	if !ok {
		bad.add("%s: must be an object {content, filename, contentType}", at)
		return nil
	}
	content, _ := f["content"].(string)
	data, err := decodeBase64(content)
	if err != nil {
		bad.add("%s/content: not valid base64: %v", at, err)
		return nil
	}
	filename, _ := f["filename"].(string)
	if filename == "" {
		filename = bp.Param
	}
	ct, _ := f["contentType"].(string)
	if ct == "" {
		ct = firstMediaType(bp.ContentType)
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	if !validHeaderValue(ct) || !validHeaderValue(filename) {
		bad.add("%s: filename and contentType must not contain control characters", at)
		return nil
	}
	hdr := textproto.MIMEHeader{}
	hdr.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, quoteEscape(bp.Param), quoteEscape(filename)))
	hdr.Set("Content-Type", ct)
	pw, err := w.mw.CreatePart(hdr)
	if err != nil {
		return fmt.Errorf("proxy: multipart: %w", err)
	}
	_, _ = pw.Write(data)
	return nil
}

func allScalars(a []any) bool {
	for _, v := range a {
		switch v.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

// quoteEscape escapes a multipart parameter value (as mime/multipart does)
// and drops control bytes.
func quoteEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\r' || c == '\n':
			b.WriteString("%0")
			b.WriteByte(upperhex[c&15])
		case c < 0x20 || c == 0x7f:
			// dropped
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
