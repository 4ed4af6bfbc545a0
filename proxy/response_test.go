package proxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
)

func reply(status int, contentType, body string, hdr ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		} else {
			w.Header()["Content-Type"] = nil // no sniffing: really untyped
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

func TestResponses(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n\x00\x01"
	big := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name       string
		h          http.HandlerFunc
		redact     []string
		isError    bool
		text       []string // substrings of the text content
		structured string
		block      string // type of the first non-text block
		mime       string
	}{
		{name: "json", h: reply(200, "application/json", "{\n \"a\": 1, \"big\": 123456789012345678901234567890}"),
			text: []string{`{"a":1,"big":123456789012345678901234567890}`}, structured: `{"a":1,"big":123456789012345678901234567890}`},
		{name: "json-array", h: reply(200, "application/vnd.api+json; charset=utf-8", `[1,2]`), text: []string{`[1,2]`}, structured: `[1,2]`},
		{name: "json-untyped", h: reply(200, "", `{"x":true}`), structured: `{"x":true}`},
		{name: "json-malformed", h: reply(200, "application/json", `{"x":`), text: []string{`{"x":`}},
		{name: "redact", h: reply(200, "application/json", `{"user":{"ssn":"123","name":"a"},"items":[{"secret":1,"id":1},{"secret":2,"id":2}],"token":"t"}`),
			redact: []string{"user.ssn", "items.secret", "token", "missing.path"}, structured: `{"items":[{"id":1},{"id":2}],"user":{"name":"a"}}`},
		{name: "redact-top-array", h: reply(200, "application/json", `[{"secret":1,"id":1},{"secret":2,"id":2}]`),
			redact: []string{"secret"}, structured: `[{"id":1},{"id":2}]`},
		{name: "text", h: reply(200, "text/plain; charset=utf-8", "hello\nworld"), text: []string{"hello\nworld"}},
		{name: "csv", h: reply(200, "text/csv", "a,b\n1,2"), text: []string{"a,b\n1,2"}},
		{name: "image", h: reply(200, "image/png", png), block: "image", mime: "image/png"},
		{name: "audio", h: reply(200, "audio/wav", "RIFF...."), block: "audio", mime: "audio/wav"},
		{name: "binary", h: reply(200, "application/pdf", "%PDF-1.7"), block: "resource", mime: "application/pdf"},
		{name: "no-content", h: reply(204, "", ""), text: []string{"HTTP 204 No Content"}},
		{name: "empty-200", h: reply(200, "", ""), text: []string{"HTTP 200 OK (empty body)"}},
		{name: "404", h: reply(404, "application/problem+json", `{"title":"Not Found","detail":"no pet 9"}`), isError: true,
			text: []string{"HTTP 404 Not Found", `"detail":"no pet 9"`}},
		{name: "404-redacted", h: reply(404, "application/json", `{"detail":"x","secret":"s3"}`), redact: []string{"secret"}, isError: true,
			text: []string{"HTTP 404 Not Found", `{"detail":"x"}`}},
		{name: "500", h: reply(500, "text/plain", "boom"), isError: true, text: []string{"HTTP 500 Internal Server Error (upstream error). boom"}},
		{name: "401", h: reply(401, "application/json", `{"detail":"bad token"}`, "WWW-Authenticate", `Bearer error="invalid_token"`), isError: true,
			text: []string{"Authentication failed (HTTP 401", "bad token", `invalid_token`}},
		{name: "403", h: reply(403, "", ""), isError: true, text: []string{"Permission denied (HTTP 403"}},
		{name: "429", h: reply(429, "", "", "Retry-After", "7"), isError: true, text: []string{"Rate limited", "7s"}},
		{name: "truncated-text", h: reply(200, "text/plain", big), text: []string{strings.Repeat("x", 256), "Response truncated", "256 bytes"}},
		{name: "truncated-json", h: reply(200, "application/json", `{"a":"`+big+`"}`), text: []string{"Response truncated"}},
		{name: "truncated-json-redacted", h: reply(200, "application/json", `{"a":"`+big+`"}`), redact: []string{"a"}, isError: true,
			text: []string{"exceeds the 256-byte limit"}},
		{name: "truncated-image", h: reply(200, "image/png", big), isError: true, text: []string{"image/png response exceeds the 256-byte limit"}},
		{name: "long-error-excerpt", h: reply(400, "text/plain", strings.Repeat("e", 5000)), isError: true, text: []string{"HTTP 400 Bad Request"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, tc.h)
			p := newProxy(t, rec.srv.URL, func(c *Config) { c.MaxResponseBytes = 256 })
			tool := mkTool("t", "GET", "/r", nil, nil)
			tool.RedactResponse = tc.redact
			res := call(t, p, endpoint(t, p, tool), `{}`)
			if res.IsError != tc.isError {
				t.Fatalf("isError = %v: %s", res.IsError, text(res))
			}
			for _, s := range tc.text {
				if !strings.Contains(text(res), s) {
					t.Errorf("text %q does not contain %q", text(res), s)
				}
			}
			if got := structured(t, res); got != tc.structured {
				t.Errorf("structuredContent = %s, want %s", got, tc.structured)
			}
			if tc.structured != "" && text(res) != tc.structured {
				t.Errorf("text %q is not the structured JSON", text(res))
			}
			if tc.block != "" {
				c := res.Content[0]
				if c.Type != tc.block {
					t.Fatalf("block %q, want %q", c.Type, tc.block)
				}
				data, mt := c.Data, c.MIMEType
				if c.Resource != nil {
					data, mt = c.Resource.Blob, c.Resource.MIMEType
					if !strings.HasSuffix(c.Resource.URI, "/r") {
						t.Errorf("resource uri %q", c.Resource.URI)
					}
				}
				if mt != tc.mime {
					t.Errorf("mime %q want %q", mt, tc.mime)
				}
				if _, err := base64.StdEncoding.DecodeString(data); err != nil || data == "" {
					t.Errorf("data %q is not base64", data)
				}
			}
			if len(text(res)) > 3000 {
				t.Errorf("error text is %d bytes", len(text(res)))
			}
			if _, err := json.Marshal(res); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestAccepted(t *testing.T) {
	for _, tc := range []struct {
		name, header, value, want, path, shown string
	}{
		{"location", "Location", "/reports/7", "/reports/7", "/reports/7", "its status is at /reports/7 "},
		{"location-query", "Location", "../reports/7?v=2", "/reports/7?v=2", "/reports/7?v=2", "its status is at /reports/7?v=2 "},
		{"operation-location", "Operation-Location", "https://status.example/ops/1", "https://status.example/ops/1", "", "another origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, reply(202, "application/json", `{"id":7,"status":"running"}`, tc.header, tc.value, "Retry-After", "3"))
			p := newProxy(t, rec.srv.URL, nil)
			e := endpoint(t, p, mkTool("t", "POST", "/reports", nil, nil))
			out, err := p.Do(t.Context(), e, nil)
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != 202 || out.Accepted == nil {
				t.Fatalf("status %d accepted %+v", out.Status, out.Accepted)
			}
			want := tc.want
			if strings.HasPrefix(want, "/") {
				want = rec.srv.URL + want
			}
			if out.Accepted.Location != want || out.Accepted.RetryAfter != 3*time.Second {
				t.Errorf("accepted %+v, want %s", out.Accepted, want)
			}
			wantOK(t, out.Result)
			if !strings.Contains(text(out.Result), "accepted (HTTP 202)") || !strings.Contains(text(out.Result), tc.shown) || strings.Contains(text(out.Result), "://") {
				t.Errorf("text %q, want it to say %q and no absolute URL", text(out.Result), tc.shown)
			}
			if out.Accepted.Path != tc.path {
				t.Errorf("path %q, want %q", out.Accepted.Path, tc.path)
			}
			if structured(t, out.Result) != `{"id":7,"status":"running"}` {
				t.Errorf("structured %s", structured(t, out.Result))
			}
		})
	}
}

func TestTimeoutAndConnectionErrors(t *testing.T) {
	release := make(chan struct{})
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	p := newProxy(t, rec.srv.URL, func(c *Config) { c.Timeout = 50 * time.Millisecond })
	e := endpoint(t, p, mkTool("t", "GET", "/slow", nil, nil))
	wantError(t, call(t, p, e, `{}`), "did not answer within 50ms")

	// the caller cancels
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p2 := newProxy(t, rec.srv.URL, nil)
	wantError(t, callCtx(t, ctx, p2, endpoint(t, p2, mkTool("t", "GET", "/slow", nil, nil)), `{}`), "cancelled")

	// nothing listens
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p3 := newProxy(t, "http://"+addr, nil)
	wantError(t, call(t, p3, endpoint(t, p3, mkTool("t", "GET", "/x", nil, nil)), `{}`), "Could not reach the upstream", "connection refused")
}

func TestRedirects(t *testing.T) {
	const token = "secret-token-123"
	other := newRecorder(t, reply(200, "application/json", `{"other":true}`))
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/target", http.StatusFound)
		case "/same307":
			http.Redirect(w, r, "/echo", http.StatusTemporaryRedirect)
		case "/echo":
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"method":"` + r.Method + `","body":` + string(body) + `}`))
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/cross":
			http.Redirect(w, r, other.srv.URL+"/steal?x=1", http.StatusTemporaryRedirect)
		case "/target":
			w.Header().Set("Content-Type", "application/json")
			b, _ := json.Marshal(map[string]string{"auth": r.Header.Get("Authorization"), "key": r.Header.Get("X-Api-Key"), "q": r.URL.RawQuery})
			_, _ = w.Write(b)
		}
	})
	static, err := Static(map[string]openapi.SecurityScheme{"key": {Type: "apiKey", In: "header", Name: "X-Api-Key"}, "q": {Type: "apiKey", In: "query", Name: "api_key"}},
		map[string]string{"key": "static-key", "q": "query-key"})
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, up.srv.URL, func(c *Config) { c.Auth = Chain(Passthrough(), static) })
	ctx := mcp.WithPrincipal(t.Context(), mcp.Principal{Subject: "u", Credential: mcp.NewSecret(token)})
	tool := func(path string) *Endpoint {
		tl := mkTool("t", "POST", path, map[string]any{"a": str}, nil, openapi.Argument{Name: "a", In: openapi.InBodyProperty, Param: "a"})
		tl.Route.Security = []openapi.SecurityRequirement{{"key": nil, "q": nil}}
		return endpoint(t, p, tl)
	}

	res := callCtx(t, ctx, p, tool("/same"), `{"a":"x"}`)
	wantOK(t, res)
	if structured(t, res) != `{"auth":"Bearer `+token+`","key":"static-key","q":"api_key=query-key"}` {
		t.Errorf("same-origin redirect lost the credential: %s", structured(t, res))
	}

	// a 307 re-sends the method and the body
	res = callCtx(t, ctx, p, tool("/same307"), `{"a":"x"}`)
	wantOK(t, res)
	if structured(t, res) != `{"method":"POST","body":{"a":"x"}}` {
		t.Errorf("307: %s / %s", structured(t, res), text(res))
	}

	res = callCtx(t, ctx, p, tool("/cross"), `{"a":"x"}`)
	wantError(t, res, "another origin", "not followed")
	if strings.Contains(text(res), token) || strings.Contains(text(res), "static-key") || strings.Contains(text(res), "query-key") {
		t.Errorf("a secret leaked into the result: %s", text(res))
	}
	if n := len(other.all()); n != 0 {
		t.Fatalf("the cross-origin target received %d requests: %+v", n, other.all())
	}

	res = callCtx(t, ctx, p, tool("/loop"), `{"a":"x"}`)
	wantError(t, res, "redirected too many times")
	if strings.Contains(text(res), "query-key") {
		t.Errorf("query secret in error: %s", text(res))
	}
	// 1 + MaxRedirects requests for the loop
	loops := 0
	for _, r := range up.all() {
		if r.RawPath == "/loop" {
			loops++
		}
	}
	if loops != DefaultMaxRedirects+1 {
		t.Errorf("loop requests %d", loops)
	}

	// never follow
	pn := newProxy(t, up.srv.URL, func(c *Config) { c.MaxRedirects = -1 })
	tn := endpoint(t, pn, mkTool("t", "GET", "/same", nil, nil))
	wantError(t, call(t, pn, tn, `{}`), "HTTP 302 Found", "not followed")
}

func TestAuthResolvers(t *testing.T) {
	rec := newRecorder(t, nil)
	schemes := map[string]openapi.SecurityScheme{
		"hdr":    {Type: "apiKey", In: "header", Name: "X-Api-Key"},
		"qry":    {Type: "apiKey", In: "query", Name: "api_key"},
		"ck":     {Type: "apiKey", In: "cookie", Name: "sid"},
		"basic":  {Type: "http", Scheme: "basic"},
		"bearer": {Type: "http", Scheme: "bearer"},
		"oauth":  {Type: "oauth2"},
	}
	secrets := map[string]string{"hdr": "H1", "qry": "Q 1&", "ck": "C;1", "basic": "user:pa:ss", "bearer": "B1"}
	static, err := Static(schemes, secrets)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, rec.srv.URL, func(c *Config) { c.Auth = static })
	for _, tc := range []struct {
		name     string
		security []openapi.SecurityRequirement
		check    func(t *testing.T, r recorded)
	}{
		{"header", []openapi.SecurityRequirement{{"hdr": nil}}, func(t *testing.T, r recorded) {
			if r.Header.Get("X-Api-Key") != "H1" {
				t.Errorf("X-Api-Key %q", r.Header.Get("X-Api-Key"))
			}
		}},
		{"query", []openapi.SecurityRequirement{{"qry": nil}}, func(t *testing.T, r recorded) {
			if r.RawQuery != "q=1&api_key=Q+1%26" {
				t.Errorf("query %q", r.RawQuery)
			}
		}},
		{"cookie", []openapi.SecurityRequirement{{"ck": nil}}, func(t *testing.T, r recorded) {
			if r.Header.Get("Cookie") != "sid=C%3B1" {
				t.Errorf("cookie %q", r.Header.Get("Cookie"))
			}
		}},
		{"basic", []openapi.SecurityRequirement{{"basic": nil}}, func(t *testing.T, r recorded) {
			u, pw, ok := (&http.Request{Header: r.Header}).BasicAuth()
			if !ok || u != "user" || pw != "pa:ss" {
				t.Errorf("basic %q %q", u, pw)
			}
		}},
		{"bearer", []openapi.SecurityRequirement{{"bearer": nil}}, func(t *testing.T, r recorded) {
			if r.Header.Get("Authorization") != "Bearer B1" {
				t.Errorf("authorization %q", r.Header.Get("Authorization"))
			}
		}},
		{"first-satisfiable-alternative", []openapi.SecurityRequirement{{"oauth": nil}, {"hdr": nil, "ck": nil}, {"bearer": nil}}, func(t *testing.T, r recorded) {
			if r.Header.Get("X-Api-Key") != "H1" || r.Header.Get("Cookie") != "sid=C%3B1" || r.Header.Get("Authorization") != "" {
				t.Errorf("headers %v", r.Header)
			}
		}},
		{"none-declared", nil, func(t *testing.T, r recorded) {
			if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
				t.Errorf("credentials sent to an unsecured route: %v", r.Header)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := mkTool("t", "GET", "/a", map[string]any{"q": str}, nil, openapi.Argument{Name: "q", In: openapi.InQuery, Param: "q", Style: "form", Explode: true})
			tl.Route.Security = tc.security
			wantOK(t, call(t, p, endpoint(t, p, tl), `{"q":"1"}`))
			tc.check(t, rec.last(t))
		})
	}

	// applying twice (a followed redirect) adds nothing twice
	req, _ := http.NewRequest("GET", "http://up.example/a?x=1&api_key=forged", nil)
	req.Header.Set("Cookie", "sid=forged; theme=dark")
	route := &openapi.Route{Security: []openapi.SecurityRequirement{{"qry": nil, "ck": nil, "hdr": nil}}}
	for range 2 {
		if err := static.Apply(t.Context(), req, route); err != nil {
			t.Fatal(err)
		}
	}
	if req.URL.RawQuery != "x=1&api_key=Q+1%26" || req.Header.Get("Cookie") != "theme=dark; sid=C%3B1" || len(req.Header.Values("X-Api-Key")) != 1 {
		t.Errorf("not idempotent: %q %v", req.URL.RawQuery, req.Header)
	}

	if _, err := Static(schemes, map[string]string{"nope": "x"}); err == nil {
		t.Error("a secret for an unknown scheme was accepted")
	}
	_, err = Static(schemes, map[string]string{"hdr": "bad\r\nvalue-SECRET"})
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("bad header secret: %v", err)
	}
	env := map[string]string{"MCPGATE_SECRET_HDR": "fromenv"}
	fromEnv, err := StaticFromEnv(schemes, "MCPGATE_SECRET_", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil || strings.Join(fromEnv.Schemes(), ",") != "hdr" {
		t.Fatalf("from env: %v %v", fromEnv, err)
	}

	// passthrough: anonymous sends nothing; a credential is forwarded verbatim
	pp := newProxy(t, rec.srv.URL, nil)
	e := endpoint(t, pp, mkTool("t", "GET", "/p", nil, nil))
	wantOK(t, call(t, pp, e, `{}`))
	if a := rec.last(t).Header.Get("Authorization"); a != "" {
		t.Errorf("anonymous sent %q", a)
	}
	ctx := mcp.WithPrincipal(t.Context(), mcp.Principal{Credential: mcp.NewSecret("tok.en-1")})
	wantOK(t, callCtx(t, ctx, pp, e, `{}`))
	if a := rec.last(t).Header.Get("Authorization"); a != "Bearer tok.en-1" {
		t.Errorf("passthrough sent %q", a)
	}
	bad := mcp.WithPrincipal(t.Context(), mcp.Principal{Credential: mcp.NewSecret("x\r\nX-Evil: 1")})
	wantError(t, callCtx(t, bad, pp, e, `{}`), "Authentication failed")
}

func TestUnauthorizedWithoutCredential(t *testing.T) {
	rec := newRecorder(t, reply(401, "", ""))
	p := newProxy(t, rec.srv.URL, nil)
	wantError(t, call(t, p, endpoint(t, p, mkTool("t", "GET", "/a", nil, nil)), `{}`), "Authentication failed (HTTP 401", "none were sent")
}

// TestSecretsNeverLogged captures every log line of a full run (build
// warnings, debug dispatch lines, failures) and looks for the secrets.
func TestSecretsNeverLogged(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	const bearer, key, qkey = "BEARER-SECRET-1", "APIKEY-SECRET-2", "QUERY-SECRET-3"
	static, err := Static(map[string]openapi.SecurityScheme{
		"k": {Type: "apiKey", In: "header", Name: "X-Key"},
		"q": {Type: "apiKey", In: "query", Name: "key"},
	}, map[string]string{"k": key, "q": qkey})
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("configured", "auth", static)
	rec := newRecorder(t, reply(401, "text/plain", "nope"))
	p := newProxy(t, rec.srv.URL, func(c *Config) { c.Logger = logger; c.Auth = Chain(Passthrough(), static) })
	tl := mkTool("t", "GET", "/a", map[string]any{"h": str}, nil,
		openapi.Argument{Name: "h", In: openapi.InHeader, Param: "Authorization"})
	tl.Route.Security = []openapi.SecurityRequirement{{"k": nil, "q": nil}}
	e := endpoint(t, p, tl)
	ctx := mcp.WithPrincipal(t.Context(), mcp.Principal{Credential: mcp.NewSecret(bearer)})
	res := callCtx(t, ctx, p, e, `{}`)
	wantError(t, res, "Authentication failed")
	got := rec.last(t)
	if got.Header.Get("Authorization") != "Bearer "+bearer || got.Header.Get("X-Key") != key || !strings.Contains(got.RawQuery, qkey) {
		t.Fatalf("credentials did not reach the upstream: %v %q", got.Header, got.RawQuery)
	}
	// a connection failure too
	p2 := newProxy(t, "http://127.0.0.1:1", func(c *Config) { c.Logger = logger; c.Auth = Chain(Passthrough(), static) })
	res2 := callCtx(t, ctx, p2, endpoint(t, p2, tl), `{}`)
	wantError(t, res2)
	out := logs.String() + text(res) + text(res2) + static.String()
	for _, s := range []string{bearer, key, qkey} {
		if strings.Contains(out, s) {
			t.Errorf("secret %q appears in logs or results:\n%s", s, out)
		}
	}
	if !strings.Contains(logs.String(), "proxy: dispatch") || !strings.Contains(logs.String(), "reserved") {
		t.Errorf("expected dispatch and warning log lines:\n%s", logs.String())
	}
}

func TestCheckOutput(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","required":["id"],"properties":{"id":{"type":"integer"}}}`)
	for _, tc := range []struct {
		name    string
		h       http.HandlerFunc
		check   bool
		isError bool
		text    string
	}{
		{"valid", reply(200, "application/json", `{"id":1}`), true, false, `{"id":1}`},
		{"mismatch", reply(200, "application/json", `{"id":"x"}`), true, true, "does not match the tool's documented output schema: /id: got string, want integer"},
		{"not-json", reply(200, "text/plain", `hello`), true, true, "not JSON"},
		{"mismatch-unchecked", reply(200, "application/json", `{"id":"x"}`), false, false, `{"id":"x"}`},
		{"accepted-unchecked", reply(202, "application/json", `{"job":1}`, "Location", "/jobs/1"), true, false, "accepted (HTTP 202)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, tc.h)
			p := newProxy(t, rec.srv.URL, func(c *Config) { c.CheckOutput = tc.check })
			tool := mkTool("t", "GET", "/o", nil, nil)
			tool.OutputSchema = schema
			res := call(t, p, endpoint(t, p, tool), `{}`)
			if res.IsError != tc.isError || !strings.Contains(text(res), tc.text) {
				t.Fatalf("isError=%v text=%q", res.IsError, text(res))
			}
			if res.IsError && res.StructuredContent != nil {
				t.Error("an error result carries structuredContent")
			}
		})
	}
}
