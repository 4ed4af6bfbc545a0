package proxy

import (
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/openapi"
)

var str = map[string]any{"type": "string"}

func TestPathInjectionStaysInSegment(t *testing.T) {
	rec := newRecorder(t, nil)
	p := newProxy(t, rec.srv.URL+"/api/v1/", nil)
	e := endpoint(t, p, mkTool("getFile", "GET", "/files/{name}/meta", map[string]any{"name": str}, []string{"name"},
		openapi.Argument{Name: "name", In: openapi.InPath, Param: "name", Required: true, Style: "simple"}))
	host := mustURL(t, rec.srv.URL).Host
	for _, tc := range []struct{ value, want string }{
		{"plain", "/api/v1/files/plain/meta"},
		{"../admin", "/api/v1/files/..%2Fadmin/meta"},
		{"..", "/api/v1/files/%2E%2E/meta"},
		{".", "/api/v1/files/%2E/meta"},
		{"%2F", "/api/v1/files/%252F/meta"},
		{"a/b", "/api/v1/files/a%2Fb/meta"},
		{"?x=1", "/api/v1/files/%3Fx%3D1/meta"},
		{"#frag", "/api/v1/files/%23frag/meta"},
		{"http://evil.example", "/api/v1/files/http%3A%2F%2Fevil.example/meta"},
		{"//evil.example/x", "/api/v1/files/%2F%2Fevil.example%2Fx/meta"},
		{"@evil.example", "/api/v1/files/%40evil.example/meta"},
		{"a b\r\nHost: x", "/api/v1/files/a%20b%0D%0AHost%3A%20x/meta"},
		{"café", "/api/v1/files/caf%C3%A9/meta"},
		{"a.b", "/api/v1/files/a.b/meta"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			args, _ := jsonString(map[string]any{"name": tc.value})
			res := call(t, p, e, args)
			wantOK(t, res)
			got := rec.last(t)
			if got.RequestURI != tc.want {
				t.Errorf("request URI = %q, want %q", got.RequestURI, tc.want)
			}
			if got.Host != host {
				t.Errorf("host = %q, want %q", got.Host, host)
			}
			// the server decodes the segment back to exactly the value
			segs := strings.Split(got.RawPath, "/")
			if dec, _ := url.PathUnescape(segs[4]); dec != tc.value {
				t.Errorf("segment decodes to %q, want %q", dec, tc.value)
			}
		})
	}
	// an empty path value is a tool error and nothing is sent
	rec.reset()
	wantError(t, call(t, p, e, `{"name":""}`), "must not be empty")
	if n := len(rec.all()); n != 0 {
		t.Fatalf("%d requests sent for an invalid call", n)
	}
}

func TestPathStyles(t *testing.T) {
	rec := newRecorder(t, nil)
	p := newProxy(t, rec.srv.URL, nil)
	anyT := map[string]any{}
	for _, tc := range []struct {
		name    string
		style   string
		explode bool
		value   string
		want    string
	}{
		{"simple-prim", "simple", false, `5`, "/x/5"},
		{"simple-array", "simple", false, `[3,4,"a/b"]`, "/x/3,4,a%2Fb"},
		{"simple-object", "simple", false, `{"R":100,"G":200}`, "/x/G,200,R,100"},
		{"simple-object-explode", "simple", true, `{"R":100,"G":200}`, "/x/G=200,R=100"},
		{"label-prim", "label", false, `"blue"`, "/x/.blue"},
		{"label-array", "label", false, `["a","b"]`, "/x/.a,b"},
		{"label-array-explode", "label", true, `["a","b"]`, "/x/.a.b"},
		{"label-object-explode", "label", true, `{"R":1,"G":2}`, "/x/.G=2.R=1"},
		{"matrix-prim", "matrix", false, `"blue"`, "/x/;v=blue"},
		{"matrix-array", "matrix", false, `["a","b"]`, "/x/;v=a,b"},
		{"matrix-array-explode", "matrix", true, `["a","b"]`, "/x/;v=a;v=b"},
		{"matrix-object", "matrix", false, `{"R":1,"G":2}`, "/x/;v=G,2,R,1"},
		{"matrix-object-explode", "matrix", true, `{"R":1,"G":2}`, "/x/;G=2;R=1"},
		{"big-integer", "simple", false, `123456789012345678901234567890`, "/x/123456789012345678901234567890"},
		{"bool", "simple", false, `true`, "/x/true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := endpoint(t, p, mkTool("t", "GET", "/x/{v}", map[string]any{"v": anyT}, []string{"v"},
				openapi.Argument{Name: "v", In: openapi.InPath, Param: "v", Required: true, Style: tc.style, Explode: tc.explode}))
			wantOK(t, call(t, p, e, `{"v":`+tc.value+`}`))
			if got := rec.last(t).RequestURI; got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestQueryStyles(t *testing.T) {
	rec := newRecorder(t, nil)
	p := newProxy(t, rec.srv.URL, nil)
	anyT := map[string]any{}
	for _, tc := range []struct {
		name          string
		style         string
		explode       bool
		allowReserved bool
		contentType   string
		value         string
		want          string
	}{
		{"form-prim", "form", true, false, "", `"a b&c=d#e"`, "q=a%20b%26c%3Dd%23e"},
		{"form-array-explode", "form", true, false, "", `["x","y"]`, "q=x&q=y"},
		{"form-array", "form", false, false, "", `["x","y,z"]`, "q=x,y%2Cz"},
		{"form-object-explode", "form", true, false, "", `{"b":1,"a":"2"}`, "a=2&b=1"},
		{"form-object", "form", false, false, "", `{"b":1,"a":"2"}`, "q=a,2,b,1"},
		{"space", "spaceDelimited", false, false, "", `["x","y"]`, "q=x%20y"},
		{"pipe", "pipeDelimited", false, false, "", `["x","y"]`, "q=x%7Cy"},
		{"pipe-explode", "pipeDelimited", true, false, "", `["x","y"]`, "q=x&q=y"},
		{"deep", "deepObject", true, false, "", `{"status":"available","n":{"a":1},"t":["x","y"]}`,
			"q%5Bn%5D%5Ba%5D=1&q%5Bstatus%5D=available&q%5Bt%5D=x&q%5Bt%5D=y"},
		{"reserved", "form", true, true, "", `"a/b:c?d"`, "q=a/b:c?d"},
		{"reserved-keeps-structure", "form", true, true, "", `"a&b=c#d"`, "q=a%26b=c%23d"},
		{"content-json", "", false, false, "application/json", `{"a":[1,2]}`, "q=%7B%22a%22%3A%5B1%2C2%5D%7D"},
		{"empty-array-explode", "form", true, false, "", `[]`, ""},
		{"null", "form", true, false, "", `null`, ""},
		{"crlf", "form", true, false, "", `"x\r\nSet-Cookie: a=b"`, "q=x%0D%0ASet-Cookie%3A%20a%3Db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := endpoint(t, p, mkTool("t", "GET", "/s", map[string]any{"q": anyT}, nil,
				openapi.Argument{Name: "q", In: openapi.InQuery, Param: "q", Style: tc.style, Explode: tc.explode,
					AllowReserved: tc.allowReserved, ContentType: tc.contentType}))
			wantOK(t, call(t, p, e, `{"q":`+tc.value+`}`))
			got := rec.last(t)
			if got.RawQuery != tc.want {
				t.Errorf("query %q, want %q", got.RawQuery, tc.want)
			}
			if got.RawPath != "/s" {
				t.Errorf("path changed: %q", got.RawPath)
			}
		})
	}
}

func TestQueryTemplateLiteral(t *testing.T) {
	rec := newRecorder(t, nil)
	p := newProxy(t, rec.srv.URL, nil)
	e := endpoint(t, p, mkTool("t", "GET", "/search?kind={k}", map[string]any{"k": str, "q": str}, nil,
		openapi.Argument{Name: "k", In: openapi.InPath, Param: "k", Style: "simple"},
		openapi.Argument{Name: "q", In: openapi.InQuery, Param: "q", Style: "form", Explode: true}))
	wantOK(t, call(t, p, e, `{"k":"a&b","q":"z"}`))
	if got := rec.last(t).RequestURI; got != "/search?kind=a%26b&q=z" {
		t.Fatalf("got %q", got)
	}
}

func TestHeadersAndCookies(t *testing.T) {
	rec := newRecorder(t, nil)
	p := newProxy(t, rec.srv.URL, nil)
	props := map[string]any{"rid": str, "ids": map[string]any{"type": "array"}, "auth": str, "host": str, "theme": str, "prefs": map[string]any{"type": "object"}}
	e := endpoint(t, p, mkTool("t", "GET", "/h", props, nil,
		openapi.Argument{Name: "rid", In: openapi.InHeader, Param: "X-Request-Id", Style: "simple"},
		openapi.Argument{Name: "ids", In: openapi.InHeader, Param: "X-Ids", Style: "simple"},
		openapi.Argument{Name: "auth", In: openapi.InHeader, Param: "Authorization", Style: "simple"},
		openapi.Argument{Name: "host", In: openapi.InHeader, Param: "Host", Style: "simple"},
		openapi.Argument{Name: "theme", In: openapi.InCookie, Param: "theme", Style: "form", Explode: true},
		openapi.Argument{Name: "prefs", In: openapi.InCookie, Param: "prefs", Style: "form", Explode: false},
	))
	if len(e.Warnings()) != 2 {
		t.Errorf("warnings = %q, want two dropped headers", e.Warnings())
	}
	wantOK(t, call(t, p, e, `{"rid":"abc 1","ids":[1,2],"auth":"Bearer stolen","host":"evil.example","theme":"dark; admin=1","prefs":{"a":"x y"}}`))
	got := rec.last(t)
	if v := got.Header.Get("X-Request-Id"); v != "abc 1" {
		t.Errorf("X-Request-Id = %q", v)
	}
	if v := got.Header.Get("X-Ids"); v != "1,2" {
		t.Errorf("X-Ids = %q", v)
	}
	if v := got.Header.Get("Authorization"); v != "" {
		t.Errorf("an argument set Authorization: %q", v)
	}
	if got.Host != mustURL(t, rec.srv.URL).Host {
		t.Errorf("an argument changed Host: %q", got.Host)
	}
	if v := got.Header.Get("Cookie"); v != "theme=dark%3B%20admin=1; prefs=a,x%20y" {
		t.Errorf("Cookie = %q", v)
	}
	r := &http.Request{Header: got.Header}
	if c, err := r.Cookie("admin"); err == nil {
		t.Errorf("cookie injection: %v", c)
	}

	// CR/LF/NUL in a header value: tool error, nothing sent.
	rec.reset()
	for _, v := range []string{`"a\r\nX-Evil: 1"`, `"a\nb"`, `"a\u0000b"`} {
		wantError(t, call(t, p, e, `{"rid":`+v+`}`), "/rid", "control characters")
	}
	if n := len(rec.all()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func TestBodies(t *testing.T) {
	rec := newRecorder(t, nil)
	p := newProxy(t, rec.srv.URL, nil)
	anyT := map[string]any{}
	png := []byte("\x89PNG\r\n\x1a\nfake")
	b64 := base64.StdEncoding.EncodeToString(png)

	t.Run("json-properties", func(t *testing.T) {
		e := endpoint(t, p, mkTool("t", "POST", "/j", map[string]any{"name": str, "n": anyT, "id": str}, nil,
			openapi.Argument{Name: "name", In: openapi.InBodyProperty, Param: "name"},
			openapi.Argument{Name: "n", In: openapi.InBodyProperty, Param: "count"}))
		wantOK(t, call(t, p, e, `{"name":"<a&b>","n":12345678901234567890}`))
		got := rec.last(t)
		if string(got.Body) != `{"count":12345678901234567890,"name":"<a&b>"}` {
			t.Errorf("body %s", got.Body)
		}
		if ct := got.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("content type %q", ct)
		}
	})
	t.Run("json-whole", func(t *testing.T) {
		tool := mkTool("t", "PUT", "/w", map[string]any{"body": map[string]any{"type": "array"}}, nil,
			openapi.Argument{Name: "body", In: openapi.InWholeBody, Required: true})
		tool.Route.Body = &openapi.Body{ContentType: "application/merge-patch+json", Required: true, Whole: true}
		e := endpoint(t, p, tool)
		wantOK(t, call(t, p, e, `{"body":[1,"x",null]}`))
		got := rec.last(t)
		if string(got.Body) != `[1,"x",null]` || got.Header.Get("Content-Type") != "application/merge-patch+json" {
			t.Errorf("body %s, type %q", got.Body, got.Header.Get("Content-Type"))
		}
	})
	t.Run("optional-body-absent", func(t *testing.T) {
		tool := mkTool("t", "POST", "/o", map[string]any{"a": str}, nil,
			openapi.Argument{Name: "a", In: openapi.InBodyProperty, Param: "a"})
		tool.Route.Body = &openapi.Body{ContentType: "application/json"}
		e := endpoint(t, p, tool)
		wantOK(t, call(t, p, e, `{}`))
		if got := rec.last(t); len(got.Body) != 0 || got.Header.Get("Content-Type") != "" {
			t.Errorf("body %q type %q", got.Body, got.Header.Get("Content-Type"))
		}
	})
	t.Run("form", func(t *testing.T) {
		tool := mkTool("t", "POST", "/f", map[string]any{"petId": anyT, "note": str, "tags": anyT, "meta": anyT}, nil,
			openapi.Argument{Name: "petId", In: openapi.InBodyProperty, Param: "petId", Style: "form", Explode: true},
			openapi.Argument{Name: "note", In: openapi.InBodyProperty, Param: "note", Style: "form", Explode: true},
			openapi.Argument{Name: "tags", In: openapi.InBodyProperty, Param: "tags", Style: "form", Explode: false},
			openapi.Argument{Name: "meta", In: openapi.InBodyProperty, Param: "meta", ContentType: "application/json"})
		tool.Route.Body = &openapi.Body{ContentType: "application/x-www-form-urlencoded", Required: true}
		e := endpoint(t, p, tool)
		wantOK(t, call(t, p, e, `{"petId":7,"note":"a b&c=d","tags":["x","y"],"meta":{"k":1}}`))
		got := rec.last(t)
		want := "petId=7&note=a+b%26c%3Dd&tags=x,y&meta=%7B%22k%22%3A1%7D"
		if string(got.Body) != want {
			t.Errorf("body %s\nwant %s", got.Body, want)
		}
		vals, err := url.ParseQuery(string(got.Body))
		if err != nil || vals.Get("note") != "a b&c=d" || vals.Get("meta") != `{"k":1}` {
			t.Errorf("form decodes to %v (%v)", vals, err)
		}
	})
	t.Run("multipart", func(t *testing.T) {
		tool := mkTool("t", "POST", "/m", map[string]any{"file": anyT, "caption": str, "tags": anyT, "meta": anyT}, nil,
			openapi.Argument{Name: "file", In: openapi.InBodyProperty, Param: "file", File: true, ContentType: "image/png, application/octet-stream"},
			openapi.Argument{Name: "caption", In: openapi.InBodyProperty, Param: "caption"},
			openapi.Argument{Name: "tags", In: openapi.InBodyProperty, Param: "tags"},
			openapi.Argument{Name: "meta", In: openapi.InBodyProperty, Param: "meta"})
		tool.Route.Body = &openapi.Body{ContentType: "multipart/form-data", Required: true}
		e := endpoint(t, p, tool)
		wantOK(t, call(t, p, e, `{"file":{"content":"`+b64+`","filename":"a\"b.png"},"caption":"hi","tags":["x","y"],"meta":{"k":1}}`))
		got := rec.last(t)
		mt, params, err := mime.ParseMediaType(got.Header.Get("Content-Type"))
		if err != nil || mt != "multipart/form-data" {
			t.Fatalf("content type %q", got.Header.Get("Content-Type"))
		}
		mr := multipart.NewReader(strings.NewReader(string(got.Body)), params["boundary"])
		parts := map[string][]string{}
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(part)
			parts[part.FormName()] = append(parts[part.FormName()], string(b))
			if part.FormName() == "file" {
				if part.FileName() != `a"b.png` || part.Header.Get("Content-Type") != "image/png" {
					t.Errorf("file part filename %q type %q", part.FileName(), part.Header.Get("Content-Type"))
				}
			}
			if part.FormName() == "meta" && part.Header.Get("Content-Type") != "application/json" {
				t.Errorf("meta part type %q", part.Header.Get("Content-Type"))
			}
		}
		if parts["file"][0] != string(png) || parts["caption"][0] != "hi" || strings.Join(parts["tags"], "|") != "x|y" || parts["meta"][0] != `{"k":1}` {
			t.Errorf("parts %q", parts)
		}
	})
	t.Run("octet-stream", func(t *testing.T) {
		tool := mkTool("t", "PUT", "/b", map[string]any{"body": str}, []string{"body"},
			openapi.Argument{Name: "body", In: openapi.InWholeBody, Required: true, Base64: true})
		tool.Route.Body = &openapi.Body{ContentType: "application/octet-stream", Required: true, Whole: true}
		e := endpoint(t, p, tool)
		wantOK(t, call(t, p, e, `{"body":"`+b64+`"}`))
		got := rec.last(t)
		if string(got.Body) != string(png) || got.Header.Get("Content-Type") != "application/octet-stream" {
			t.Errorf("body %q type %q", got.Body, got.Header.Get("Content-Type"))
		}
		wantError(t, call(t, p, e, `{"body":"not base64!"}`), "/body", "base64")
	})
	t.Run("base64 text", func(t *testing.T) {
		// A body the document says is base64 text (format: byte) goes as
		// the text itself, whatever its media type.
		tool := mkTool("t", "PUT", "/cover", map[string]any{"body": str}, []string{"body"},
			openapi.Argument{Name: "body", In: openapi.InWholeBody, Required: true})
		tool.Route.Body = &openapi.Body{ContentType: "image/jpeg", Required: true, Whole: true}
		e := endpoint(t, p, tool)
		wantOK(t, call(t, p, e, `{"body":"`+b64+`"}`))
		got := rec.last(t)
		if string(got.Body) != b64 || got.Header.Get("Content-Type") != "image/jpeg" {
			t.Errorf("body %q type %q", got.Body, got.Header.Get("Content-Type"))
		}
	})
	t.Run("text", func(t *testing.T) {
		tool := mkTool("t", "POST", "/t", map[string]any{"body": str}, nil,
			openapi.Argument{Name: "body", In: openapi.InWholeBody, Required: true})
		tool.Route.Body = &openapi.Body{ContentType: "text/plain", Required: true, Whole: true}
		e := endpoint(t, p, tool)
		wantOK(t, call(t, p, e, `{"body":"line1\nline2"}`))
		got := rec.last(t)
		if string(got.Body) != "line1\nline2" || got.Header.Get("Content-Type") != "text/plain" {
			t.Errorf("body %q type %q", got.Body, got.Header.Get("Content-Type"))
		}
	})
}

func TestValidationListsEveryProblem(t *testing.T) {
	rec := newRecorder(t, nil)
	p := newProxy(t, rec.srv.URL, nil)
	props := map[string]any{
		"limit": map[string]any{"type": "integer", "maximum": 100},
		"name":  str,
		"kind":  map[string]any{"enum": []string{"a", "b"}},
		"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	}
	e := endpoint(t, p, mkTool("t", "GET", "/v", props, []string{"name", "kind"},
		openapi.Argument{Name: "limit", In: openapi.InQuery, Param: "limit", Style: "form", Explode: true},
		openapi.Argument{Name: "name", In: openapi.InQuery, Param: "name", Style: "form", Explode: true},
		openapi.Argument{Name: "kind", In: openapi.InQuery, Param: "kind", Style: "form", Explode: true},
		openapi.Argument{Name: "tags", In: openapi.InQuery, Param: "tags", Style: "form", Explode: true}))
	res := call(t, p, e, `{"limit":1000,"tags":["ok",5]}`)
	wantError(t, res, "Invalid arguments:", "/limit: ", "100", "/tags/1: ", "/name: missing required property", "/kind: missing required property")
	t.Log(text(res))
	wantError(t, call(t, p, e, `[1,2]`), "must be a JSON object")
	wantError(t, call(t, p, e, `{"name":`), "not valid JSON")
	if n := len(rec.all()); n != 0 {
		t.Fatalf("%d requests sent for invalid calls", n)
	}
	// a big integer survives validation and encoding
	e2 := endpoint(t, p, mkTool("t", "GET", "/v", map[string]any{"id": map[string]any{"type": "integer"}}, nil,
		openapi.Argument{Name: "id", In: openapi.InQuery, Param: "id", Style: "form", Explode: true}))
	wantOK(t, call(t, p, e2, `{"id":9007199254740993}`))
	if q := rec.last(t).RawQuery; q != "id=9007199254740993" {
		t.Fatalf("query %q", q)
	}
}

func TestEndpointBuildErrors(t *testing.T) {
	p := newProxy(t, "http://127.0.0.1:1", nil)
	if _, err := p.Endpoint(mkTool("t", "GET", "/a/{missing}", nil, nil)); err == nil {
		t.Error("a template parameter without an argument compiled")
	}
	if _, err := p.Endpoint(mkTool("t", "GE T", "/a", nil, nil)); err == nil {
		t.Error("an invalid method compiled")
	}
	if _, err := p.Endpoint(mkTool("t", "GET", "/a", nil, nil, openapi.Argument{Name: "x", In: "body?"})); err == nil {
		t.Error("an unknown location compiled")
	}
	other := newProxy(t, "http://127.0.0.1:1", nil)
	e := endpoint(t, other, mkTool("t", "GET", "/a", nil, nil))
	if _, err := p.Dispatch(t.Context(), e, nil); err == nil {
		t.Error("an endpoint of another proxy dispatched")
	}
	if _, err := New(Config{BaseURL: mustURL(t, "ftp://x")}); err == nil {
		t.Error("ftp base URL accepted")
	}
	if _, err := New(Config{BaseURL: mustURL(t, "http://u:p@x")}); err == nil {
		t.Error("base URL with user info accepted")
	}
}

func jsonString(v any) (string, error) {
	b, err := compactJSON(v)
	return string(b), err
}

func TestUncompilableSchemaStillDispatches(t *testing.T) {
	rec := newRecorder(t, nil)
	p := newProxy(t, rec.srv.URL, nil)
	tool := mkTool("t", "GET", "relative/{id}", nil, nil, openapi.Argument{Name: "id", In: openapi.InPath, Param: "id", Required: true})
	tool.InputSchema = []byte(`{"type":"object","properties":{"id":{"$ref":"#/$defs/missing"}}}`)
	e := endpoint(t, p, tool)
	for range 2 {
		wantOK(t, call(t, p, e, `{"id":"x"}`))
	}
	if got := rec.last(t).RequestURI; got != "/relative/x" {
		t.Fatalf("got %q", got)
	}
}

func TestConnectionReuse(t *testing.T) {
	var mu sync.Mutex
	conns := 0
	rec := newRecorderWith(t, nil, func(s *http.Server) {
		s.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				mu.Lock()
				conns++
				mu.Unlock()
			}
		}
	})
	p := newProxy(t, rec.srv.URL, nil)
	e := endpoint(t, p, mkTool("t", "GET", "/a", nil, nil))
	for range 20 {
		wantOK(t, call(t, p, e, `{}`))
	}
	mu.Lock()
	defer mu.Unlock()
	if conns != 1 {
		t.Fatalf("20 sequential calls opened %d connections", conns)
	}
}
