package proxy

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/openapi"
)

// FuzzBuildRequest checks the encoding invariants for any argument value:
// the host never changes, a path value stays in its one segment and decodes
// back to itself (dot segments are encoded), a query value round-trips, and
// a header value either is rejected or carries no control byte.
func FuzzBuildRequest(f *testing.F) {
	for _, s := range []string{"", "a", "..", ".", "../x", "%2F", "a/b", "?x=1", "#f", "http://evil.example", "\r\nX: y", "\x00", "é", "a;b=c", "{x}"} {
		f.Add(s)
	}
	p, err := New(Config{BaseURL: &url.URL{Scheme: "http", Host: "up.example:8080", Path: "/base"}})
	if err != nil {
		f.Fatal(err)
	}
	e, err := p.Endpoint(mkTool("t", "GET", "/a/{v}/b", map[string]any{"v": str, "q": str, "h": str}, nil,
		openapi.Argument{Name: "v", In: openapi.InPath, Param: "v", Required: true, Style: "simple"},
		openapi.Argument{Name: "q", In: openapi.InQuery, Param: "q", Style: "form", Explode: true},
		openapi.Argument{Name: "h", In: openapi.InHeader, Param: "X-H", Style: "simple"}))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := map[string]any{"v": s, "q": s, "h": s}
		req, err := p.buildRequest(context.Background(), e, args)
		var ce *callError
		if err != nil && !errors.As(err, &ce) {
			t.Fatal(err)
		}
		if ce != nil {
			msg := ce.msg
			if !strings.Contains(msg, "/h") && !(s == "" && strings.Contains(msg, "/v")) {
				t.Fatalf("unexpected rejection of %q: %s", s, msg)
			}
			return
		}
		if req.URL.Host != "up.example:8080" || req.URL.Scheme != "http" || req.Host != "up.example:8080" {
			t.Fatalf("host changed: %v", req.URL)
		}
		raw := req.URL.EscapedPath()
		if raw != req.URL.RawPath {
			t.Fatalf("net/url would re-encode the path: %q vs %q", raw, req.URL.RawPath)
		}
		segs := strings.Split(raw, "/")
		if len(segs) != 5 || segs[1] != "base" || segs[2] != "a" || segs[4] != "b" {
			t.Fatalf("path shape changed for %q: %q", s, raw)
		}
		if segs[3] == "." || segs[3] == ".." {
			t.Fatalf("dot segment for %q", s)
		}
		if dec, err := url.PathUnescape(segs[3]); err != nil || dec != s {
			t.Fatalf("segment %q decodes to %q (%v), want %q", segs[3], dec, err, s)
		}
		if q, err := url.ParseQuery(req.URL.RawQuery); err != nil || q.Get("q") != s || len(q) != 1 {
			t.Fatalf("query %q does not round-trip %q (%v)", req.URL.RawQuery, s, err)
		}
		if h := req.Header.Get("X-H"); h != s || !validHeaderValue(h) {
			t.Fatalf("header %q for %q", h, s)
		}
	})
}
