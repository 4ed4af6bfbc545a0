package proxy

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/openapi"
)

// A small hand-written document whose generated routes exercise every
// parameter location and style through openapi.Generate.
const styleDoc = `
openapi: 3.0.3
info: {title: styles, version: "1"}
paths:
  /items/{id}/{labels}/{matrix}:
    get:
      operationId: getItem
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
        - {name: labels, in: path, required: true, style: label, explode: true, schema: {type: array, items: {type: string}}}
        - {name: matrix, in: path, required: true, style: matrix, schema: {type: object, properties: {a: {type: string}, b: {type: string}}}}
        - {name: sp, in: query, style: spaceDelimited, explode: false, schema: {type: array, items: {type: string}}}
        - {name: pp, in: query, style: pipeDelimited, explode: false, schema: {type: array, items: {type: string}}}
        - {name: filter, in: query, style: deepObject, explode: true, schema: {type: object, properties: {status: {type: string}}}}
        - {name: ids, in: query, explode: false, schema: {type: array, items: {type: integer}}}
        - {name: raw, in: query, allowReserved: true, schema: {type: string}}
        - {name: where, in: query, content: {application/json: {schema: {type: object}}}}
        - {name: X-Trace, in: header, schema: {type: string}}
        - {name: Authorization, in: header, schema: {type: string}}
        - {name: session, in: cookie, schema: {type: string}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object}}}}
  /forms:
    post:
      operationId: postForm
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema:
              type: object
              required: [name]
              properties:
                name: {type: string}
                colors: {type: array, items: {type: string}}
            encoding:
              colors: {style: form, explode: false}
      responses:
        "204": {description: done}
  /uploads:
    post:
      operationId: upload
      requestBody:
        content:
          multipart/form-data:
            schema:
              type: object
              properties:
                doc: {type: string, format: binary}
                note: {type: string}
      responses:
        "201": {description: created}
  /issues/{key}/attachments:
    post:
      operationId: attach
      parameters:
        - {name: key, in: path, required: true, schema: {type: string}}
      requestBody:
        required: true
        content:
          multipart/form-data:
            schema: {type: string, format: binary}
      responses:
        "200": {description: ok}
  /gallery:
    put:
      operationId: gallery
      requestBody:
        content:
          multipart/form-data:
            schema:
              type: object
              properties:
                photos: {type: array, items: {type: string, format: binary}}
      responses:
        "200": {description: ok}
`

func TestGeneratedRoutes(t *testing.T) {
	doc, err := openapi.Parse(context.Background(), []byte(styleDoc), "styles.yaml", openapi.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := openapi.Generate(doc, openapi.GenerateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(t, nil)
	p := newProxy(t, rec.srv.URL, nil)
	eps, err := p.Endpoints(gen.Tools)
	if err != nil {
		t.Fatal(err)
	}

	args := map[string]any{
		"id": 7, "labels": []string{"x", "y/z"}, "matrix": map[string]string{"a": "1", "b": "2"},
		"sp": []string{"a", "b"}, "pp": []string{"c", "d"}, "filter": map[string]string{"status": "on"},
		"ids": []int{1, 2}, "raw": "a/b?c", "where": map[string]int{"n": 1},
		"X-Trace": "t-1", "session": "s 1",
	}
	// the Authorization header parameter is dropped by the generator (or by
	// the endpoint), never settable
	if eps["getItem"].names.find([]byte("Authorization")) != nil {
		args["Authorization"] = "Bearer forged"
	}
	b, _ := json.Marshal(args)
	wantOK(t, call(t, p, eps["getItem"], string(b)))
	got := rec.last(t)
	if want := "/items/7/.x.y%2Fz/;matrix=a,1,b,2"; got.RawPath != want {
		t.Errorf("path %q, want %q", got.RawPath, want)
	}
	q, _ := url.ParseQuery(got.RawQuery)
	for k, want := range map[string]string{"sp": "a b", "pp": "c|d", "filter[status]": "on", "ids": "1,2", "raw": "a/b?c", "where": `{"n":1}`} {
		if q.Get(k) != want {
			t.Errorf("query %s = %q, want %q (raw %q)", k, q.Get(k), want, got.RawQuery)
		}
	}
	if !strings.Contains(got.RawQuery, "raw=a/b?c") {
		t.Errorf("allowReserved not honoured: %q", got.RawQuery)
	}
	if got.Header.Get("X-Trace") != "t-1" || got.Header.Get("Cookie") != "session=s%201" || got.Header.Get("Authorization") != "" {
		t.Errorf("headers %v", got.Header)
	}

	res := call(t, p, eps["postForm"], `{"colors":["red","green"]}`)
	wantError(t, res, "/name: missing required property")
	wantOK(t, call(t, p, eps["postForm"], `{"name":"n","colors":["red","green"]}`))
	if got := rec.last(t); string(got.Body) != "colors=red,green&name=n" && string(got.Body) != "name=n&colors=red,green" {
		t.Errorf("form body %q", got.Body)
	}

	wantOK(t, call(t, p, eps["upload"], `{"doc":{"content":"aGVsbG8=","filename":"h.txt"},"note":"n"}`))
	got = rec.last(t)
	if !strings.Contains(string(got.Body), `filename="h.txt"`) || !strings.Contains(string(got.Body), "hello") {
		t.Errorf("multipart body %q", got.Body)
	}

	// A body that is one binary string: the part "file".
	wantOK(t, call(t, p, eps["attach"], `{"key":"K-1","file":{"content":"aGVsbG8=","filename":"a.txt"}}`))
	got = rec.last(t)
	if !strings.Contains(string(got.Body), `name="file"; filename="a.txt"`) || !strings.Contains(string(got.Body), "hello") {
		t.Errorf("binary multipart body %q", got.Body)
	}
	// An array of files: one part each, under the field's name.
	wantOK(t, call(t, p, eps["gallery"], `{"photos":[{"content":"aGVsbG8=","filename":"1.png"},{"content":"d29ybGQ=","filename":"2.png"}]}`))
	got = rec.last(t)
	if body := string(got.Body); strings.Count(body, `name="photos"`) != 2 || !strings.Contains(body, `filename="2.png"`) || !strings.Contains(body, "world") {
		t.Errorf("array of files body %q", got.Body)
	}
	wantError(t, call(t, p, eps["gallery"], `{"photos":[{"content":"aGVsbG8="},{"content":"not base64!"}]}`), "/photos/1/content", "base64")
}

// TestHiddenCredentialParameterIsFilledByStaticMode: the generator hides a
// parameter that is a security scheme's apiKey; the static credential mode
// still sends it, and an agent cannot set it.
func TestHiddenCredentialParameterIsFilledByStaticMode(t *testing.T) {
	const src = `
openapi: 3.0.3
info: {title: keys, version: "1"}
security: [{key: []}]
components:
  securitySchemes:
    key: {type: apiKey, in: query, name: api_key}
paths:
  /things:
    get:
      operationId: listThings
      parameters:
        - {name: api_key, in: query, required: true, schema: {type: string}}
        - {name: q, in: query, schema: {type: string}}
      responses: {"200": {description: ok}}
`
	doc, err := openapi.Parse(context.Background(), []byte(src), "keys.yaml", openapi.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := openapi.Generate(doc, openapi.GenerateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tool := &gen.Tools[0]
	if len(tool.Route.Arguments) != 1 || tool.Route.Arguments[0].Name != "q" || len(tool.Route.Hidden) != 1 {
		t.Fatalf("arguments %+v, hidden %+v", tool.Route.Arguments, tool.Route.Hidden)
	}
	static, err := Static(gen.SecuritySchemes, map[string]string{"key": "SECRET"})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(t, nil)
	p := newProxy(t, rec.srv.URL, func(c *Config) { c.Auth = static })
	wantOK(t, call(t, p, endpoint(t, p, tool), `{"q":"x","api_key":"forged"}`))
	if q, _ := url.ParseQuery(rec.last(t).RawQuery); q.Get("api_key") != "SECRET" || len(q["api_key"]) != 1 || q.Get("q") != "x" {
		t.Errorf("query %v", q)
	}
}
