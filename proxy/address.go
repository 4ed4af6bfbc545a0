package proxy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"syscall"

	"github.com/mcpgate/mcpgate/mcp"
)

// This file keeps the upstream's address out of what an agent sees. The
// base URL is often internal (http://10.0.0.7:8080, a service name) and an
// agent can neither reach nor authenticate to it, so no tool result (text,
// structuredContent, resource URI) names it: the proxy's own messages speak
// of paths relative to the API ("GET /pets/1", the paths of the document),
// and absolute URLs on the upstream origin inside what the upstream sent
// (bodies, WWW-Authenticate, Location) are rewritten to those paths. URLs
// on other origins are never shown in the proxy's messages either; the Go
// values ([Accepted.Location], [DispatchResult.Header]) keep everything.

// addressHider rewrites upstream absolute URLs; built once per Proxy.
type addressHider struct {
	prefixes []string // "scheme://host[:port]" spellings of the upstream origin
	raw      [][]byte // the same, for the allocation-free check of bodies
	basePath string   // escaped base path without trailing "/"
	host     string   // host[:port] as configured, for transport errors
	hostname string
}

func newAddressHider(base *url.URL, origin, basePath string) addressHider {
	h := addressHider{basePath: basePath, host: base.Host, hostname: base.Hostname()}
	spellings := []string{base.Scheme + "://" + base.Host, origin}
	if base.Port() == "" { // the same origin with its default port written out
		port := "80"
		if strings.EqualFold(base.Scheme, "https") {
			port = "443"
		}
		spellings = append(spellings, origin+":"+port)
	}
	for _, s := range spellings {
		if !slices.Contains(h.prefixes, s) {
			h.prefixes = append(h.prefixes, s)
			h.raw = append(h.raw, []byte(s))
		}
	}
	return h
}

// apiPath is u's escaped path relative to the base URL (the document's
// path: "/pets/1"); u must be on the upstream origin.
func (h *addressHider) apiPath(u *url.URL) string {
	p := u.EscapedPath()
	if rest, ok := strings.CutPrefix(p, h.basePath); ok && (rest == "" || rest[0] == '/') {
		p = rest
	}
	if p == "" {
		p = "/"
	}
	return p
}

// hideString rewrites every absolute URL on the upstream origin in s to
// its path relative to the API; s itself comes back when there is none
// (one scan per spelling, no allocation). The rewrite keeps JSON valid: a
// URL only ever sits inside a string, and the path is a suffix of it.
func (h *addressHider) hideString(s string) string {
	i, n := h.next(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for ; i >= 0; i, n = h.next(s) {
		tail := s[i+n:]
		if bp := h.basePath; bp != "" && strings.HasPrefix(tail, bp) && (len(tail) == len(bp) || !isPathByte(tail[len(bp)])) {
			tail = tail[len(bp):] // base-relative: the document's path
		}
		b.WriteString(s[:i])
		if tail == "" || tail[0] != '/' {
			b.WriteByte('/')
		}
		s = tail
	}
	b.WriteString(s)
	return b.String()
}

// hideBytes is hideString for a body; b itself comes back when it holds
// no upstream URL.
func (h *addressHider) hideBytes(b []byte) []byte {
	for _, p := range h.raw {
		if bytes.Contains(b, p) {
			return []byte(h.hideString(string(b)))
		}
	}
	return b
}

// next finds the first prefix occurrence that is a whole origin (not
// followed by more host or port characters); it returns its index and
// length, or -1.
func (h *addressHider) next(s string) (int, int) {
	best, bestLen := -1, 0
	for _, p := range h.prefixes {
		for off := 0; ; {
			i := strings.Index(s[off:], p)
			if i < 0 {
				break
			}
			i += off
			if end := i + len(p); end == len(s) || !isHostByte(s[end]) {
				if best < 0 || i < best || i == best && len(p) > bestLen {
					best, bestLen = i, len(p)
				}
				break
			}
			off = i + 1
		}
	}
	return best, bestLen
}

// isHostByte: a byte that continues a host or port (so "http://h:80" is
// not a prefix of "http://h:8080").
func isHostByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(".-_~%:@", c) >= 0
}

// isPathByte: a byte that continues a path segment.
func isPathByte(c byte) bool { return isHostByte(c) || strings.IndexByte("!$&'()*+,;=", c) >= 0 }

// hideResult rewrites every text and the structuredContent of r.
func (h *addressHider) hideResult(r *mcp.CallToolResult) {
	if r == nil {
		return
	}
	for i := range r.Content {
		c := &r.Content[i]
		c.Text = h.hideString(c.Text)
		if c.Resource != nil {
			c.Resource.Text = h.hideString(c.Resource.Text)
		}
	}
	if raw, ok := r.StructuredContent.(json.RawMessage); ok {
		if hidden := h.hideBytes(raw); len(hidden) != len(raw) { // (a rewrite only shortens)
			r.StructuredContent = json.RawMessage(hidden)
		}
	}
}

// transportReason explains a failed exchange in words that name neither
// the upstream's address nor a resolved IP (net errors print both).
func (h *addressHider) transportReason(err error) string {
	var (
		dnsErr  *net.DNSError
		unknown x509.UnknownAuthorityError
		badName x509.HostnameError
		invalid x509.CertificateInvalidError
		verify  *tls.CertificateVerificationError
		record  tls.RecordHeaderError
		alert   tls.AlertError
		opErr   *net.OpError
	)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "the connection was reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to the upstream's host"
	case errors.As(err, &dnsErr):
		return "its host name could not be resolved"
	case errors.As(err, &unknown):
		return "the TLS certificate is signed by an unknown authority"
	case errors.As(err, &badName):
		return "the TLS certificate is not valid for the upstream's host name"
	case errors.As(err, &invalid):
		return "the TLS certificate is not valid (expired, not yet valid or not for this use)"
	case errors.As(err, &verify), errors.As(err, &alert):
		return "the TLS handshake failed"
	case errors.As(err, &record):
		return "the upstream does not speak TLS"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the upstream closed the connection before answering"
	case errors.As(err, &opErr) && opErr.Err != nil:
		err = opErr.Err // without "dial tcp 10.0.0.7:8080"
	}
	s := h.hideString(err.Error())
	for _, name := range []string{h.host, h.hostname} {
		if name != "" {
			s = strings.ReplaceAll(s, name, "upstream")
		}
	}
	return s
}
