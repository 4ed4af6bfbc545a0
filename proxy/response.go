package proxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpgate/mcpgate/mcp"
)

// excerptBytes bounds the body excerpt in an error message.
const excerptBytes = 2048

// send performs the exchange and renders the outcome. parent is the
// caller's context; ctx (req's) adds the proxy's timeout.
func (p *Proxy) send(parent, ctx context.Context, e *Endpoint, req *http.Request) DispatchResult {
	out := p.exchange(parent, ctx, e, req)
	p.hide.hideResult(out.Result)
	return out
}

// exchange is send before the upstream's address is hidden.
func (p *Proxy) exchange(parent, ctx context.Context, e *Endpoint, req *http.Request) DispatchResult {
	resp, err := p.roundTrip(req, e)
	if err != nil {
		var ce *callError // (declared here: errors.As moves it to the heap)
		if errors.As(err, &ce) {
			return DispatchResult{Result: ce.result()}
		}
		return DispatchResult{Result: mcp.ToolError(p.transportMessage(parent, ctx, req, err))}
	}
	defer resp.Body.Close()
	bb := p.bodies.Get().(*bodyBuffer)
	defer p.putBody(bb)
	body, truncated, err := p.readBody(bb, resp)
	out := DispatchResult{Status: resp.StatusCode, Header: resp.Header}
	if err != nil {
		out.Result = mcp.ToolError(p.bodyMessage(parent, ctx, req, resp.StatusCode, err))
		return out
	}
	out.Result, out.Accepted = e.render(resp, body, truncated)
	return out
}

// bodyBuffer reads a response body; pooled, so that reading one costs no
// allocation once the buffer has grown to the usual size.
type bodyBuffer struct {
	buf bytes.Buffer
	lim io.LimitedReader
}

// readBody reads at most maxBytes into bb (reporting whether more was
// sent), then drains a little more so the connection can be reused. A
// Content-Length sizes the buffer before the first read. The bytes are
// only valid until bb goes back to the pool: render copies what it keeps.
func (p *Proxy) readBody(bb *bodyBuffer, resp *http.Response) ([]byte, bool, error) {
	if n := resp.ContentLength; n > 0 && n <= p.maxBytes {
		bb.buf.Grow(int(n) + bytes.MinRead) // ReadFrom wants MinRead spare to read the EOF
	}
	bb.lim = io.LimitedReader{R: resp.Body, N: p.maxBytes + 1}
	n, err := bb.buf.ReadFrom(&bb.lim)
	bb.lim.R = nil
	if err != nil {
		return nil, false, err
	}
	if n > p.maxBytes {
		_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
		return bb.buf.Bytes()[:p.maxBytes], true, nil
	}
	return bb.buf.Bytes(), false, nil
}

// transportMessage explains a failed exchange with the method and the
// path relative to the API: no address, no query (which may hold a
// credential), no header. parent is the caller's context, ctx the one
// bounded by the proxy's timeout.
func (p *Proxy) transportMessage(parent, ctx context.Context, req *http.Request, err error) string {
	return fmt.Sprintf(p.failure(parent, ctx, err, "Could not reach the upstream (%s): "), req.Method+" "+p.hide.apiPath(req.URL)) + "."
}

// bodyMessage explains a body that could not be read after status.
func (p *Proxy) bodyMessage(parent, ctx context.Context, req *http.Request, status int, err error) string {
	lead := "HTTP " + statusText(status) + ", but the body could not be read (%s): "
	return fmt.Sprintf(p.failure(parent, ctx, err, lead), req.Method+" "+p.hide.apiPath(req.URL)) + "."
}

// failure is the sentence for a failed exchange, with one %s for where;
// lead starts it when the cause is the connection itself.
func (p *Proxy) failure(parent, ctx context.Context, err error, lead string) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	switch {
	case parent.Err() != nil && errors.Is(parent.Err(), context.Canceled):
		return "The call was cancelled before the upstream answered (%s)"
	case parent.Err() != nil:
		return "The call ran out of time before the upstream answered (%s)"
	case ctx.Err() != nil:
		return "The upstream did not answer within " + p.timeout.String() + " (%s)"
	case errors.As(err, &ne) && ne.Timeout():
		return "The upstream did not answer in time (%s)"
	case errors.Is(err, errTooManyRedirects):
		return "The upstream redirected too many times (%s): stopped after " + strconv.Itoa(p.maxRedirects) + " redirects"
	}
	return lead + strings.ReplaceAll(p.hide.transportReason(err), "%", "%%")
}

// putBody returns a body buffer to the pool unless it grew large.
func (p *Proxy) putBody(bb *bodyBuffer) {
	if bb.buf.Cap() > 64<<10 {
		return
	}
	bb.buf.Reset()
	p.bodies.Put(bb)
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code)
}

// render turns a response into the tool result.
func (e *Endpoint) render(resp *http.Response, body []byte, truncated bool) (*mcp.CallToolResult, *Accepted) {
	code := resp.StatusCode
	ct := resp.Header.Get("Content-Type")
	mt := mediaType(ct)
	limit := e.proxy.maxBytes

	if code >= 300 && code < 400 {
		if code == http.StatusNotModified {
			return mcp.TextResult("HTTP 304 Not Modified"), nil
		}
		to := ""
		if loc := resp.Header.Get("Location"); loc != "" {
			u, err := resp.Request.URL.Parse(loc)
			if err == nil && !e.proxy.sameOrigin(u) {
				return mcp.ToolError(fmt.Sprintf("HTTP %s: the upstream redirected to another origin; the redirect was not followed so that no credential leaves the configured upstream.", statusText(code))), nil
			}
			if err == nil {
				to = " to " + e.proxy.hide.apiPath(u)
			}
		}
		return mcp.ToolError(fmt.Sprintf("HTTP %s: the redirect%s was not followed.", statusText(code), to)), nil
	}

	if code >= 400 {
		return mcp.ToolError(e.errorMessage(resp, code, mt, body, truncated)), nil
	}

	var accepted *Accepted
	if code == http.StatusAccepted {
		loc := resp.Header.Get("Operation-Location")
		if loc == "" {
			loc = resp.Header.Get("Location")
		}
		if loc != "" {
			accepted = &Accepted{Location: loc, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
			if u, err := resp.Request.URL.Parse(loc); err == nil {
				accepted.Location = u.String()
				if e.proxy.sameOrigin(u) {
					accepted.Path = e.proxy.hide.apiPath(u)
					if u.RawQuery != "" {
						accepted.Path += "?" + u.RawQuery
					}
				}
			}
		}
	}

	res := e.successResult(code, mt, body, truncated, limit, resp)
	if e.proxy.checkOutput && accepted == nil && !res.IsError && len(e.tool.OutputSchema) > 0 {
		res = e.checkOutput(res, truncated, limit)
	}
	if accepted != nil && !res.IsError {
		res.Content = append([]mcp.Content{mcp.TextContent(acceptedNote(accepted))}, res.Content...)
	}
	return res, accepted
}

// acceptedNote tells the agent that the operation goes on, and where its
// status is in the API's terms (never the upstream's address).
func acceptedNote(a *Accepted) string {
	note := "The operation was accepted (HTTP 202) and continues asynchronously"
	if a.Path != "" {
		note += "; its status is at " + a.Path + " (a path of this API)"
	} else {
		note += "; its status is reported on another origin, which the gateway does not call"
	}
	if a.RetryAfter > 0 {
		note += "; retry after " + a.RetryAfter.String()
	}
	return note + "."
}

func (e *Endpoint) successResult(code int, mt string, body []byte, truncated bool, limit int64, resp *http.Response) *mcp.CallToolResult {
	if len(body) == 0 {
		if code == http.StatusNoContent {
			return mcp.TextResult("HTTP 204 No Content")
		}
		return mcp.TextResult("HTTP " + statusText(code) + " (empty body)")
	}
	truncNote := func() mcp.Content {
		return mcp.TextContent(fmt.Sprintf("[Response truncated: the upstream sent more than %d bytes; only the first %d are shown.]", limit, limit))
	}
	switch {
	case isJSONType(mt) || mt == "" && looksJSON(body):
		if truncated {
			if len(e.redact) > 0 {
				return mcp.ToolError(fmt.Sprintf("HTTP %s: the JSON response exceeds the %d-byte limit and cannot be shown (it must be redacted first).", statusText(code), limit))
			}
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(validUTF8(body)), truncNote()}}
		}
		raw, err := e.jsonResult(body)
		if err != nil {
			if len(e.redact) > 0 {
				return mcp.ToolError(fmt.Sprintf("HTTP %s: the upstream sent malformed JSON (%v).", statusText(code), err))
			}
			return mcp.TextResult(validUTF8(body))
		}
		return structuredResult(raw)
	case isTextType(mt):
		c := []mcp.Content{mcp.TextContent(validUTF8(body))}
		if truncated {
			c = append(c, truncNote())
		}
		return &mcp.CallToolResult{Content: c}
	}
	if truncated {
		return mcp.ToolError(fmt.Sprintf("HTTP %s: the %s response exceeds the %d-byte limit.", statusText(code), orUnknown(mt), limit))
	}
	data := base64.StdEncoding.EncodeToString(body)
	switch {
	case strings.HasPrefix(mt, "image/"):
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.ImageContent(data, mt)}}
	case strings.HasPrefix(mt, "audio/"):
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.AudioContent(data, mt)}}
	}
	if mt == "" {
		mt = "application/octet-stream"
	}
	uri := "upstream:" + e.proxy.hide.apiPath(resp.Request.URL)
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.EmbeddedResource(mcp.ResourceContents{URI: uri, MIMEType: mt, Blob: data})}}
}

// structuredResult is the result of a JSON success: raw as
// structuredContent and as the text block, in one allocation besides raw.
// The text aliases raw (no second copy of a body that may be a megabyte),
// so raw must never be modified: nothing in this package or in package mcp
// writes to a result's structuredContent, and address hiding builds new
// bytes.
func structuredResult(raw []byte) *mcp.CallToolResult {
	r := &struct {
		res     mcp.CallToolResult
		content [1]mcp.Content
	}{}
	r.content[0] = mcp.TextContent(unsafe.String(unsafe.SliceData(raw), len(raw)))
	r.res.Content = r.content[:]
	r.res.StructuredContent = json.RawMessage(raw[:len(raw):len(raw)])
	return &r.res
}

// jsonResult validates and (when configured) redacts a JSON body. Without
// redaction the body is passed through compacted (strings minimally
// escaped), never decoded into Go values.
func (e *Endpoint) jsonResult(body []byte) ([]byte, error) {
	if len(e.redact) == 0 {
		return compactRaw(body)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	for _, path := range e.redact {
		redact(v, path)
	}
	return compactJSON(v)
}

// compactRaw validates and compacts JSON, with strings in their minimal
// form ("\/" is "/"), into a new slice.
func compactRaw(body []byte) ([]byte, error) {
	return jsontext.AppendFormat(make([]byte, 0, len(body)), body, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
}

// redact removes the dotted path from v; a segment landing on an array
// applies to every element.
func redact(v any, path []string) {
	switch x := v.(type) {
	case []any:
		for _, el := range x {
			redact(el, path)
		}
	case map[string]any:
		if len(path) == 1 {
			delete(x, path[0])
			return
		}
		if next, ok := x[path[0]]; ok {
			redact(next, path[1:])
		}
	}
}

// errorMessage renders a 4xx/5xx.
func (e *Endpoint) errorMessage(resp *http.Response, code int, mt string, body []byte, truncated bool) string {
	var b strings.Builder
	switch code {
	case http.StatusUnauthorized:
		b.WriteString("Authentication failed (HTTP 401 Unauthorized): the upstream rejected the request's credentials")
		if resp.Request.Header.Get("Authorization") == "" && resp.Request.Header.Get("Cookie") == "" {
			b.WriteString(" (none were sent; the caller may need to sign in)")
		}
		b.WriteString(".")
		if wa := resp.Header.Get("WWW-Authenticate"); wa != "" && validHeaderValue(wa) {
			b.WriteString(" WWW-Authenticate: " + excerpt(wa, 300) + ".")
		}
	case http.StatusForbidden:
		b.WriteString("Permission denied (HTTP 403 Forbidden): the caller's credentials do not allow this operation.")
	case http.StatusTooManyRequests:
		b.WriteString("Rate limited (HTTP 429 Too Many Requests)")
		if d := retryAfter(resp.Header.Get("Retry-After")); d > 0 {
			b.WriteString("; retry after " + d.String())
		}
		b.WriteString(".")
	default:
		b.WriteString("HTTP " + statusText(code))
		if code >= 500 {
			b.WriteString(" (upstream error)")
		}
		b.WriteString(".")
	}
	if len(body) > 0 {
		text := ""
		switch {
		case isJSONType(mt) || mt == "" && looksJSON(body):
			if len(e.redact) > 0 {
				if truncated {
					break
				}
				if raw, err := e.jsonResult(body); err == nil {
					text = string(raw)
				}
			} else if raw, err := compactRaw(body); err == nil {
				text = string(raw)
			} else {
				text = string(body)
			}
		case isTextType(mt):
			text = string(body)
		default:
			text = fmt.Sprintf("(%d bytes of %s)", len(body), orUnknown(mt))
		}
		if text != "" {
			b.WriteString(" ")
			b.WriteString(excerpt(validUTF8([]byte(text)), excerptBytes))
		}
	}
	return b.String()
}

func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (" + strconv.Itoa(len(s)-cut) + " more bytes)"
}

func validUTF8(b []byte) string {
	// cut a rune split by truncation, then replace invalid bytes
	if !utf8.Valid(b) {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return string(b)
}

func orUnknown(mt string) string {
	if mt == "" {
		return "untyped"
	}
	return mt
}

func looksJSON(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && (b[0] == '{' || b[0] == '[') && json.Valid(b)
}

// isTextType: text/*, XML, YAML, CSV, JavaScript, form data and other
// textual media types.
func isTextType(mt string) bool {
	if strings.HasPrefix(mt, "text/") {
		return true
	}
	for _, s := range []string{"xml", "yaml", "csv", "javascript", "ecmascript", "graphql", "sql", "x-www-form-urlencoded", "ndjson", "jsonl"} {
		if strings.Contains(mt, s) {
			return true
		}
	}
	return false
}

// retryAfter parses Retry-After (seconds or an HTTP date).
func retryAfter(s string) time.Duration {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(s); err == nil {
		if d := time.Until(t); d > 0 {
			return d.Round(time.Second)
		}
	}
	return 0
}

// checkOutput enforces the MCP rule that a tool declaring an outputSchema
// returns structuredContent valid against it: a success whose body is not
// JSON, or JSON that does not validate, becomes a tool error (clients skip
// output validation on errors) that still carries the upstream's content.
func (e *Endpoint) checkOutput(res *mcp.CallToolResult, truncated bool, limit int64) *mcp.CallToolResult {
	sch, err := e.compiledOutputSchema()
	if err != nil || sch == nil {
		return res
	}
	var msg string
	if raw, ok := res.StructuredContent.(json.RawMessage); !ok && truncated {
		msg = fmt.Sprintf("The upstream's JSON answer exceeds the %d-byte response limit, so it was cut and cannot be checked against the tool's documented output schema.", limit)
	} else if !ok {
		msg = "The upstream's answer is not JSON, so it cannot match the tool's documented output schema."
	} else if v, err := e.proxy.values.decode(raw, nil); errors.As(err, new(*numberError)) {
		msg = "The upstream's answer cannot be checked against the tool's documented output schema: " + err.Error()
	} else if err != nil {
		msg = "The upstream's answer is not valid JSON."
	} else if err := validate(sch, v); err != nil {
		msg = "The upstream's answer does not match the tool's documented output schema: " + validationMessage(err)
	} else {
		return res
	}
	return &mcp.CallToolResult{Content: append([]mcp.Content{mcp.TextContent(msg)}, res.Content...), IsError: true}
}
