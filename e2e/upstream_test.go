package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The caller's bearer in the recorder tests: it must reach the recorder and
// nothing else, and never appear in the gateway's log.
const clientBearer = "client-bearer-e2e-7f3a9c"

// TestRecordedUpstream starts a recording upstream, a second recording
// server on another origin, and `mcpgate serve --spec … --upstream …` in
// passthrough mode with a 500 ms upstream timeout and a 4 KiB response cap,
// and proves with the recorded requests how every argument was sent.
func TestRecordedUpstream(t *testing.T) {
	rec := newRecorder(t)
	other := newRecorder(t) // another origin: must never see a request
	_, port, _ := strings.Cut(strings.TrimPrefix(rec.srv.URL, "http://"), ":")
	rec.redirect("/away", 302, other.srv.URL+"/stolen?from=away")
	rec.redirect("/away-307", 307, other.srv.URL+"/stolen-307")
	// The same socket under another name is another origin too.
	rec.redirect("/away-alias", 302, "http://localhost:"+port+"/items/alias")
	rec.redirect("/same", 302, "/items/landed")
	rec.redirect("/same-307", 307, "/items/landed-307")
	// --check-output: the truncated-JSON check below is the output check's.
	g := startRecorded(t, rec, nil, "--upstream-timeout", "500ms", "--max-response-bytes", "4096", "--log-level", "debug", "--check-output")
	cs := connectHTTP(t, g.URL, connectOptions{Bearer: clientBearer})

	t.Run("ParameterStyles", func(t *testing.T) {
		res := call(t, cs, "styles", map[string]any{
			"simple": []string{"a", "b c"}, "label": []string{"a", "b"},
			"matrix": map[string]any{"x": 1, "y": 2}, "simpleObj": map[string]any{"r": 100, "g": 200},
			"formExploded": []string{"a", "b&c"}, "formFlat": []string{"a", "b"},
			"space": []string{"a", "b"}, "pipe": []string{"a", "b"},
			"deep": map[string]any{"a": "x y", "b": 2}, "obj": map[string]any{"p": "1", "r": "2"}, "flag": true,
			"X-List": []string{"a", "b"}, "X-Num": 7, "session": "abc", "prefs": []string{"a", "b"},
		})
		wantOK(t, "styles", res)
		r := rec.last(t, "/styles/")
		t.Logf("recorded: %s %s\n  headers %v\n  cookies %v", r.Method, r.RequestURI, r.Header, r.Cookies)
		// Path: simple array, label array, matrix exploded object, simple
		// object (keys in sorted order).
		if want := "/styles/a,b%20c/.a,b/;x=1;y=2/g,200,r,100"; r.RawPath != want {
			t.Errorf("path = %s, want %s", r.RawPath, want)
		}
		q, err := url.ParseQuery(r.RawQuery)
		if err != nil {
			t.Fatalf("query %q: %v", r.RawQuery, err)
		}
		for k, want := range map[string][]string{
			"formExploded": {"a", "b&c"}, // form, explode: one pair per item
			"formFlat":     {"a,b"},      // form, explode false: comma-joined
			"space":        {"a b"},      // spaceDelimited
			"pipe":         {"a|b"},      // pipeDelimited
			"deep[a]":      {"x y"},      // deepObject
			"deep[b]":      {"2"},
			"p":            {"1"}, // form object, explode: its properties
			"r":            {"2"},
			"flag":         {"true"},
		} {
			if fmt.Sprint(q[k]) != fmt.Sprint(want) {
				t.Errorf("query %s = %q, want %q (raw query %s)", k, q[k], want, r.RawQuery)
			}
		}
		if len(q) != 9 {
			t.Errorf("query has %d names, want 9: %s", len(q), r.RawQuery)
		}
		for _, raw := range []string{"formFlat=a,b", "space=a%20b", "formExploded=a&formExploded=b%26c"} {
			if !strings.Contains(r.RawQuery, raw) {
				t.Errorf("raw query lacks %s: %s", raw, r.RawQuery)
			}
		}
		if got := r.Header.Values("X-List"); fmt.Sprint(got) != "[a,b]" {
			t.Errorf("X-List = %q, want [a,b]", got)
		}
		if got := r.Header.Get("X-Num"); got != "7" {
			t.Errorf("X-Num = %q", got)
		}
		if got := r.Header.Values("Cookie"); len(got) != 1 || got[0] != "prefs=a,b; session=abc" {
			t.Errorf("Cookie = %q, want one header prefs=a,b; session=abc", got)
		}
		if r.Header.Get("Authorization") != "Bearer "+clientBearer {
			t.Errorf("Authorization = %q: the caller's bearer did not arrive", r.Header.Get("Authorization"))
		}
	})

	t.Run("MoreParameterStyles", func(t *testing.T) {
		wantOK(t, "moreStyles", call(t, cs, "moreStyles", map[string]any{
			"labelX": []string{"a", "b"}, "matrixArr": []string{"a", "b"}, "matrixArrX": []string{"a", "b"},
			"simpleObjX": map[string]any{"r": 100, "g": 200}, "objFlat": map[string]any{"p": "1", "r": "2"},
			"X-Obj": map[string]any{"a": 1, "b": "x"}, "X-Flat": map[string]any{"a": 1, "b": "x"}, "num": 5,
		}))
		r := rec.last(t, "/more/")
		t.Logf("recorded: %s %s", r.Method, r.RequestURI)
		// label exploded array, matrix array, matrix exploded array, simple
		// exploded object; form object not exploded.
		if want := "/more/.a.b/;matrixArr=a,b/;matrixArrX=a;matrixArrX=b/g=200,r=100?objFlat=p,1,r,2"; r.RequestURI != want {
			t.Errorf("request target %s, want %s", r.RequestURI, want)
		}
		for h, want := range map[string]string{"X-Obj": "a=1,b=x", "X-Flat": "a,1,b,x", "Cookie": "num=5"} {
			if got := r.Header.Values(h); len(got) != 1 || got[0] != want {
				t.Errorf("%s = %q, want %q", h, got, want)
			}
		}
	})

	t.Run("UpstreamErrors", func(t *testing.T) {
		for code, want := range map[int]string{
			400: "HTTP 400 Bad Request",
			401: "Authentication failed (HTTP 401",
			403: "Permission denied (HTTP 403",
			404: "HTTP 404 Not Found",
			429: "retry after 7s",
			500: "HTTP 500 Internal Server Error",
			503: "HTTP 503 Service Unavailable",
		} {
			res := call(t, cs, "status", map[string]any{"code": code})
			wantError(t, fmt.Sprint("status ", code), res, want, fmt.Sprintf("status %d from the recorder", code))
		}
	})

	t.Run("Bodies", func(t *testing.T) {
		wantOK(t, "postJSON", call(t, cs, "postJSON", map[string]any{"name": "n\"ame", "n": 3, "nested": map[string]any{"k": "v", "list": []int{1, 2}}}))
		r := rec.last(t, "/json")
		if r.Method != "POST" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("postJSON: %s Content-Type %q", r.Method, r.Header.Get("Content-Type"))
		}
		var got map[string]any
		if err := json.Unmarshal(r.Body, &got); err != nil {
			t.Fatalf("postJSON body %q: %v", r.Body, err)
		}
		if b, _ := json.Marshal(got); string(b) != `{"n":3,"name":"n\"ame","nested":{"k":"v","list":[1,2]}}` {
			t.Errorf("postJSON body = %s", r.Body)
		}

		wantOK(t, "postForm", call(t, cs, "postForm", map[string]any{"a": "x&y=z ü", "b": true, "n": 12}))
		r = rec.last(t, "/form")
		if r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			t.Errorf("postForm Content-Type %q", r.Header.Get("Content-Type"))
		}
		form, err := url.ParseQuery(string(r.Body))
		if err != nil || form.Get("a") != "x&y=z ü" || form.Get("b") != "true" || form.Get("n") != "12" || len(form) != 3 {
			t.Errorf("postForm body %q → %v (%v)", r.Body, form, err)
		}

		file := []byte("\x00\x01binary\r\n--not-a-boundary\xff")
		wantOK(t, "upload", call(t, cs, "upload", map[string]any{
			"caption": "hello \"world\"",
			"file":    map[string]any{"content": base64.StdEncoding.EncodeToString(file), "filename": "a b.bin", "contentType": "application/x-e2e"},
		}))
		parts := parseMultipart(t, rec.last(t, "/upload"))
		if f := parts["file"]; f == nil || !bytes.Equal(f.Data, file) || f.FileName != "a b.bin" || f.ContentType != "application/x-e2e" {
			t.Errorf("upload file part = %+v", f)
		}
		if c := parts["caption"]; c == nil || string(c.Data) != "hello \"world\"" || c.FileName != "" {
			t.Errorf("upload caption part = %+v", c)
		}
		if len(parts) != 2 {
			t.Errorf("upload: %d parts, want 2", len(parts))
		}

		wantOK(t, "postText", call(t, cs, "postText", map[string]any{"body": "line 1\r\nline 2 ü"}))
		r = rec.last(t, "/text")
		if r.Header.Get("Content-Type") != "text/plain" || string(r.Body) != "line 1\r\nline 2 ü" {
			t.Errorf("postText: Content-Type %q body %q", r.Header.Get("Content-Type"), r.Body)
		}

		wantOK(t, "postArray", call(t, cs, "postArray", map[string]any{"body": []int{3, 1, 2}}))
		r = rec.last(t, "/array")
		if r.Header.Get("Content-Type") != "application/json" || string(r.Body) != "[3,1,2]" {
			t.Errorf("postArray: Content-Type %q body %q", r.Header.Get("Content-Type"), r.Body)
		}

		blob := bytes.Repeat([]byte{0, 0xff, 'x'}, 100)
		wantOK(t, "putBlob", call(t, cs, "putBlob", map[string]any{"name": "b/1", "body": base64.StdEncoding.EncodeToString(blob)}))
		r = rec.last(t, "/blob/")
		if r.Method != "PUT" || r.RawPath != "/blob/b%2F1" || r.Header.Get("Content-Type") != "application/octet-stream" || !bytes.Equal(r.Body, blob) {
			t.Errorf("putBlob: %s %s Content-Type %q body %d bytes", r.Method, r.RawPath, r.Header.Get("Content-Type"), len(r.Body))
		}
	})

	t.Run("NameClashes", func(t *testing.T) {
		// A path, a query and a header parameter and a body property all
		// named id: each argument goes where its name says.
		res := call(t, cs, "clash", map[string]any{"id": "p", "query_id": "q", "header_id": "h", "body_id": "b", "other": "o"})
		if res.IsError {
			// the names may differ from what this test assumes: show them
			lt, _ := cs.ListTools(t.Context(), nil)
			for _, tool := range lt.Tools {
				if tool.Name == "clash" {
					b, _ := json.Marshal(tool.InputSchema)
					t.Fatalf("clash: %s\ninputSchema %s", text(res), b)
				}
			}
		}
		r := rec.last(t, "/clash/")
		if r.RequestURI != "/clash/p?id=q" || r.Header.Get("Id") != "h" || string(r.Body) != `{"id":"b","other":"o"}` {
			t.Errorf("clash: %s %s id header %q body %s", r.Method, r.RequestURI, r.Header.Get("Id"), r.Body)
		}
	})

	t.Run("PathInjection", func(t *testing.T) {
		// Each value must arrive as exactly one segment under /items/ that
		// decodes back to the value, at the recorder's own host, with no
		// query: the recorded request target is the evidence.
		for _, tc := range []struct{ id, target string }{
			{"../admin", "/items/..%2Fadmin"},
			{"..", "/items/%2E%2E"},
			{".", "/items/%2E"},
			{"%2F", "/items/%252F"},
			{"a/b", "/items/a%2Fb"},
			{"?x=1", "/items/%3Fx%3D1"},
			{"#frag", "/items/%23frag"},
			{"http://evil.example/x", "/items/http%3A%2F%2Fevil.example%2Fx"},
			{"//evil.example", "/items/%2F%2Fevil.example"},
			{"a\r\nb", "/items/a%0D%0Ab"},
			{";x=1", "/items/%3Bx%3D1"},
			{"a+b c", "/items/a%2Bb%20c"},
		} {
			before := len(rec.requests())
			res := call(t, cs, "getItem", map[string]any{"id": tc.id})
			wantOK(t, fmt.Sprintf("getItem %q", tc.id), res)
			rs := rec.requests()
			if len(rs) != before+1 {
				t.Errorf("getItem %q: %d upstream requests, want 1", tc.id, len(rs)-before)
				continue
			}
			r := rs[len(rs)-1]
			t.Logf("id %-26q → %s %s (Host %s)", tc.id, r.Method, r.RequestURI, r.Host)
			seg, _ := strings.CutPrefix(r.RawPath, "/items/")
			dec, err := url.PathUnescape(seg)
			switch {
			case r.RequestURI != tc.target:
				t.Errorf("getItem %q: request target %s, want %s", tc.id, r.RequestURI, tc.target)
			case strings.Contains(seg, "/") || err != nil || dec != tc.id:
				t.Errorf("getItem %q: segment %q decodes to %q (%v)", tc.id, seg, dec, err)
			case r.RawQuery != "" || r.Host != strings.TrimPrefix(rec.srv.URL, "http://"):
				t.Errorf("getItem %q: query %q host %q", tc.id, r.RawQuery, r.Host)
			}
		}
		// A query value cannot add query parameters either.
		wantOK(t, "getItem q", call(t, cs, "getItem", map[string]any{"id": "x", "q": "1&admin=true#x"}))
		r := rec.last(t, "/items/x")
		if q, _ := url.ParseQuery(r.RawQuery); len(q) != 1 || q.Get("q") != "1&admin=true#x" {
			t.Errorf("query injection: raw query %q", r.RawQuery)
		}
	})

	t.Run("HeaderInjection", func(t *testing.T) {
		before := len(rec.requests())
		for _, v := range []string{"a\r\nX-Injected: 1", "a\nX-Injected: 1", "a\rX-Injected: 1", "a\x00b"} {
			res := call(t, cs, "getItem", map[string]any{"id": "h", "X-Note": v})
			wantError(t, fmt.Sprintf("X-Note %q", v), res, "Invalid arguments", "X-Note")
		}
		if n := len(rec.requests()) - before; n != 0 {
			t.Errorf("a header value with CR/LF/NUL reached the upstream (%d requests)", n)
		}
		for _, r := range rec.requests() {
			if r.Header.Get("X-Injected") != "" {
				t.Errorf("the upstream received an injected header: %s %v", r.RequestURI, r.Header)
			}
		}
		wantOK(t, "X-Note plain", call(t, cs, "getItem", map[string]any{"id": "h", "X-Note": "plain: value, with\ttab"}))
		if got := rec.last(t, "/items/h").Header.Values("X-Note"); fmt.Sprint(got) != "[plain: value, with\ttab]" {
			t.Errorf("X-Note = %q", got)
		}
	})

	t.Run("ReservedHeaders", func(t *testing.T) {
		// Header parameters named like hop-by-hop, framing, routing or
		// credential headers are not offered as arguments, and a call that
		// gives them anyway is refused with nothing sent.
		reserved := []string{"Host", "Connection", "Transfer-Encoding", "Content-Length", "Cookie", "Proxy-Authorization", "Authorization", "X-API-Key"}
		for tool, err := range cs.Tools(context.Background(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			if tool.Name != "keyedClash" {
				continue
			}
			schema, _ := json.Marshal(tool.InputSchema)
			for _, h := range reserved {
				if strings.Contains(string(schema), `"`+h+`"`) {
					t.Errorf("keyedClash offers %s as an argument: %s", h, schema)
				}
			}
		}
		before := len(rec.requests())
		wantError(t, "keyedClash", call(t, cs, "keyedClash", map[string]any{
			"Host": "evil.example", "Connection": "close, X-API-Key", "Transfer-Encoding": "chunked",
			"Content-Length": "100", "Cookie": "session=stolen", "Proxy-Authorization": "Basic ZXZpbDpldmls",
		}), "Invalid arguments")
		if n := len(rec.requests()) - before; n != 0 {
			t.Errorf("a refused call reached the upstream (%d requests)", n)
		}
		wantOK(t, "keyedClash", call(t, cs, "keyedClash", map[string]any{}))
		r := rec.last(t, "/keyed-clash")
		t.Logf("recorded: %s %s Host %s headers %v", r.Method, r.RequestURI, r.Host, r.Header)
		if r.Host != strings.TrimPrefix(rec.srv.URL, "http://") {
			t.Errorf("Host = %q", r.Host)
		}
		for _, h := range []string{"Connection", "Transfer-Encoding", "Cookie", "Proxy-Authorization"} {
			if v := r.Header.Values(h); len(v) > 0 {
				t.Errorf("%s reached the upstream: %q", h, v)
			}
		}
		if len(r.Body) != 0 {
			t.Errorf("a GET carried a body of %d bytes", len(r.Body))
		}
		if r.Header.Get("Authorization") != "Bearer "+clientBearer {
			t.Errorf("Authorization = %q", r.Header.Get("Authorization"))
		}
		lt, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range lt.Tools {
			if tool.Name == "keyedClash" {
				if b, _ := json.Marshal(tool.InputSchema); strings.Contains(string(b), `"Authorization"`) {
					t.Errorf("keyedClash offers an Authorization argument: %s", b)
				}
			}
		}
	})

	t.Run("SameOriginRedirect", func(t *testing.T) {
		res := call(t, cs, "redirectSame", nil)
		wantOK(t, "redirectSame", res)
		r := rec.last(t, "/items/landed")
		if r.Method != "GET" || r.Header.Get("Authorization") != "Bearer "+clientBearer {
			t.Errorf("after a same-origin 302: %s with Authorization %q", r.Method, r.Header.Get("Authorization"))
		}
		wantOK(t, "redirectSame307", call(t, cs, "redirectSame307", map[string]any{"v": "kept"}))
		r = rec.last(t, "/items/landed-307")
		if r.Method != "POST" || string(r.Body) != `{"v":"kept"}` || r.Header.Get("Authorization") != "Bearer "+clientBearer {
			t.Errorf("after a same-origin 307: %s body %q Authorization %q", r.Method, r.Body, r.Header.Get("Authorization"))
		}
	})

	t.Run("CrossOriginRedirect", func(t *testing.T) {
		for _, tc := range []struct {
			tool string
			args map[string]any
			code string
		}{
			{"redirectAway", nil, "302"},
			{"redirectAway307", map[string]any{"secret": "body-secret"}, "307"},
			{"redirectAlias", nil, "302"},
		} {
			res := call(t, cs, tc.tool, tc.args)
			t.Logf("%s → isError %v: %s", tc.tool, res.IsError, text(res))
			if !res.IsError || !strings.Contains(text(res), tc.code) || !strings.Contains(text(res), "another origin") {
				t.Errorf("%s: want a tool error naming the %s to another origin", tc.tool, tc.code)
			}
		}
		for _, r := range other.requests() {
			t.Errorf("the other origin received %s %s with Authorization %q", r.Method, r.RequestURI, r.Header.Get("Authorization"))
		}
		for _, r := range rec.requests() {
			if r.Host != strings.TrimPrefix(rec.srv.URL, "http://") || strings.HasPrefix(r.RawPath, "/items/alias") {
				t.Errorf("a request reached the upstream under another name: Host %s %s", r.Host, r.RequestURI)
			}
		}
		// Each redirecting operation was requested exactly once, with the
		// credential, and nothing followed it.
		for _, p := range []string{"/away", "/away-307", "/away-alias"} {
			n := 0
			for _, r := range rec.requests() {
				if r.RawPath == p {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s requested %d times, want 1", p, n)
			}
		}
	})

	t.Run("Timeout", func(t *testing.T) {
		start := time.Now()
		res := call(t, cs, "slow", nil)
		took := time.Since(start)
		wantError(t, "slow", res, "did not answer within 500ms")
		t.Logf("slow (%v) → %s", took.Round(time.Millisecond), text(res))
		if took < 400*time.Millisecond || took > 10*time.Second {
			t.Errorf("slow took %v with --upstream-timeout 500ms", took)
		}
		// The gateway keeps serving.
		wantOK(t, "getItem after a timeout", call(t, cs, "getItem", map[string]any{"id": "after-timeout"}))
	})

	t.Run("OversizedResponses", func(t *testing.T) {
		res := call(t, cs, "big", nil)
		wantOK(t, "big", res)
		txt := text(res)
		if !strings.Contains(txt, "[Response truncated: the upstream sent more than 4096 bytes; only the first 4096 are shown.]") {
			t.Errorf("big: no truncation note in %d bytes of text: …%s", len(txt), txt[max(0, len(txt)-200):])
		}
		if !strings.HasPrefix(txt, "0123456789abcdef") || len(txt) > 4096+200 {
			t.Errorf("big: %d bytes of text, want the first 4096 and a note", len(txt))
		}
		res = call(t, cs, "bigJSON", nil)
		txt = text(res)
		t.Logf("bigJSON → isError %v, %d bytes of text, ending …%s", res.IsError, len(txt), txt[max(0, len(txt)-160):])
		if !strings.Contains(txt, "truncated") || len(txt) > 4096+400 {
			t.Errorf("bigJSON (isError %v): %d bytes, want at most 4096 with a truncation note: …%s", res.IsError, len(txt), txt[max(0, len(txt)-300):])
		}
		res = call(t, cs, "bigBinary", nil)
		wantError(t, "bigBinary", res, "4096")
		t.Logf("bigBinary → %s", text(res))
	})

	t.Run("TruncatedJSONMessage", func(t *testing.T) {
		// A JSON answer cut at the cap cannot be structuredContent, so with
		// the output check on it is a tool error; the error should say the
		// answer was too large, not that it is not JSON.
		res := call(t, cs, "bigJSON", nil)
		wantError(t, "bigJSON", res, "truncated")
		first := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*sdk.TextContent); ok {
				first = tc.Text
			}
		}
		if strings.Contains(first, "not JSON") || !strings.Contains(first, "4096") {
			t.Fatalf("a JSON body cut at --max-response-bytes is reported as %q; it should name the 4096-byte limit", first)
		}
	})

	t.Run("CredentialOnlyToUpstream", func(t *testing.T) {
		for _, r := range rec.requests() {
			if got := r.Header.Get("Authorization"); got != "Bearer "+clientBearer {
				t.Errorf("%s %s: Authorization %q", r.Method, r.RequestURI, got)
			}
		}
		if strings.Contains(g.Log.String(), clientBearer) {
			t.Errorf("the gateway's log contains the caller's bearer:\n%s", g.Log.String())
		}
	})
}

// TestUnreachableUpstream points the gateway at a port nobody listens on:
// a tool error, and the gateway keeps serving.
func TestUnreachableUpstream(t *testing.T) {
	dead := "http://" + freePort(t)
	g := startGateway(t, nil, "--spec", writeSpec(t), "--upstream", dead, "--store", "memory")
	cs := connectHTTP(t, g.URL, connectOptions{Bearer: clientBearer})
	for range 2 {
		wantError(t, "getItem", call(t, cs, "getItem", map[string]any{"id": "x"}), "Could not reach the upstream", "connection refused")
	}
	if strings.Contains(g.Log.String(), clientBearer) {
		t.Errorf("the gateway's log contains the caller's bearer:\n%s", g.Log.String())
	}
}

// TestStaticCredentials runs the gateway with --credentials static and the
// API keys in MCPGATE_SECRET_<SCHEME>: the keys arrive where the document
// says (header, query), the MCP client's own bearer never does, and the log
// contains neither.
func TestStaticCredentials(t *testing.T) {
	const headerKey, queryKey, bearerKey = "hdr-secret-e2e-4521", "qry-secret-e2e-9034", "static-bearer-e2e-1177"
	rec := newRecorder(t)
	other := newRecorder(t)
	rec.redirect("/keyed-redirect", 302, "/items/kq?x=1")
	rec.redirect("/keyed-away", 302, other.srv.URL+"/stolen")
	g := startRecorded(t, rec, []string{
		"MCPGATE_SECRET_APIKEYHEADER=" + headerKey,
		"MCPGATE_SECRET_APIKEYQUERY=" + queryKey,
		"MCPGATE_SECRET_BEARERAUTH=" + bearerKey,
	}, "--credentials", "static", "--log-level", "debug", "--upstream-timeout", "500ms")
	cs := connectHTTP(t, g.URL, connectOptions{Bearer: clientBearer})

	wantOK(t, "keyedHeader", call(t, cs, "keyedHeader", nil))
	r := rec.last(t, "/keyed")
	if got := r.Header.Values("X-Api-Key"); fmt.Sprint(got) != "["+headerKey+"]" {
		t.Errorf("keyedHeader: X-API-Key = %q, want the static secret", got)
	}
	if r.RawQuery != "" {
		t.Errorf("keyedHeader: query %q", r.RawQuery)
	}

	wantOK(t, "keyedQuery", call(t, cs, "keyedQuery", map[string]any{"page": 2}))
	r = rec.last(t, "/keyed-query")
	if q, _ := url.ParseQuery(r.RawQuery); q.Get("api_key") != queryKey || q.Get("page") != "2" || len(q) != 2 {
		t.Errorf("keyedQuery: query %q, want api_key=<secret>&page=2", r.RawQuery)
	}
	if r.Header.Get("X-Api-Key") != "" {
		t.Errorf("keyedQuery: the header key was sent too")
	}
	// A same-origin redirect gets the query key again (the new Location
	// does not carry it); a cross-origin one is not followed; neither the
	// error of a redirect nor that of a timeout shows the key.
	wantOK(t, "keyedRedirect", call(t, cs, "keyedRedirect", nil))
	if q, _ := url.ParseQuery(rec.last(t, "/items/kq").RawQuery); q.Get("api_key") != queryKey || q.Get("x") != "1" {
		t.Errorf("after a same-origin redirect: query %q, want x=1 and the key", rec.last(t, "/items/kq").RawQuery)
	}
	res := call(t, cs, "keyedAway", nil)
	wantError(t, "keyedAway", res, "another origin")
	for _, r := range other.requests() {
		t.Errorf("the other origin received %s", r.RequestURI)
	}
	slow := call(t, cs, "keyedSlow", nil)
	wantError(t, "keyedSlow", slow, "did not answer within 500ms")
	for _, r := range []string{text(res), text(slow)} {
		if strings.Contains(r, queryKey) {
			t.Errorf("a tool error shows the query key: %s", r)
		}
	}

	// The API key header is not an argument: an agent cannot choose it, and
	// the static secret is what is sent.
	wantError(t, "keyedClash", call(t, cs, "keyedClash", map[string]any{"X-API-Key": "agent-chosen-key"}), "Invalid arguments")
	wantOK(t, "keyedClash", call(t, cs, "keyedClash", map[string]any{}))
	if got := rec.last(t, "/keyed-clash").Header.Values("X-Api-Key"); fmt.Sprint(got) != "["+headerKey+"]" {
		t.Errorf("keyedClash: X-API-Key = %q, want only the static secret", got)
	}

	// The bearer scheme gets the static bearer, not the MCP client's.
	wantOK(t, "getItem", call(t, cs, "getItem", map[string]any{"id": "static"}))
	if got := rec.last(t, "/items/static").Header.Values("Authorization"); fmt.Sprint(got) != "[Bearer "+bearerKey+"]" {
		t.Errorf("getItem: Authorization = %q, want the static bearer", got)
	}

	for _, r := range rec.requests() {
		dump := fmt.Sprintf("%s %v %v %s", r.RequestURI, r.Header, r.Cookies, r.Body)
		if strings.Contains(dump, clientBearer) {
			t.Errorf("static mode forwarded the MCP client's credential: %s", dump)
		}
		if strings.HasPrefix(r.RawPath, "/keyed") && r.Header.Get("Authorization") != "" {
			t.Errorf("%s: an Authorization header was sent to an API-key operation", r.RequestURI)
		}
	}
	log := g.Log.String()
	for _, s := range []string{headerKey, queryKey, bearerKey, clientBearer} {
		if strings.Contains(log, s) {
			t.Errorf("the gateway's log contains the secret %q:\n%s", s, log)
		}
	}
}
