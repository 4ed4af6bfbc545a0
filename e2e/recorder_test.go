package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorded is one request as the upstream received it.
type recorded struct {
	Method     string
	RequestURI string // the request target exactly as sent
	RawPath    string // r.URL.EscapedPath()
	Path       string // r.URL.Path (decoded)
	RawQuery   string
	Host       string
	Header     http.Header
	Cookies    []*http.Cookie
	Body       []byte
}

// recorder is an upstream that records every request it receives. Its
// answers depend on the path (see serve).
type recorder struct {
	srv *httptest.Server

	mu   sync.Mutex
	reqs []recorded

	redirects map[string]redirect // by escaped path; guarded by mu

	held    chan struct{} // GET /hold signals its arrival here…
	release chan struct{} // …and answers once this is closed
}

// redirect is an answer of the recorder: status code and Location.
type redirect struct {
	code     int
	location string
}

// redirect makes the recorder answer path with a redirect.
func (rec *recorder) redirect(path string, code int, location string) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.redirects == nil {
		rec.redirects = map[string]redirect{}
	}
	rec.redirects[path] = redirect{code, location}
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	rec := &recorder{held: make(chan struct{}, 16), release: make(chan struct{})}
	rec.srv = httptest.NewServer(http.HandlerFunc(rec.serve))
	t.Cleanup(rec.srv.Close)
	return rec
}

// requests returns a copy of what was recorded so far.
func (rec *recorder) requests() []recorded {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]recorded(nil), rec.reqs...)
}

// last returns the last recorded request whose decoded path starts with
// prefix.
func (rec *recorder) last(t *testing.T, prefix string) recorded {
	t.Helper()
	rs := rec.requests()
	for i := len(rs) - 1; i >= 0; i-- {
		if strings.HasPrefix(rs[i].RawPath, prefix) {
			return rs[i]
		}
	}
	t.Fatalf("the upstream received no request under %s; it received %d requests", prefix, len(rs))
	return recorded{}
}

// serve records the request, then answers by path. It is not a ServeMux on
// purpose: a mux would clean "/items/.." and redirect, hiding what was sent.
func (rec *recorder) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, recorded{
		Method: r.Method, RequestURI: r.RequestURI, RawPath: r.URL.EscapedPath(), Path: r.URL.Path,
		RawQuery: r.URL.RawQuery, Host: r.Host, Header: r.Header.Clone(), Cookies: r.Cookies(), Body: body,
	})
	rd, isRedirect := rec.redirects[r.URL.EscapedPath()]
	rec.mu.Unlock()

	switch p := r.URL.EscapedPath(); {
	case isRedirect:
		w.Header().Set("Location", rd.location)
		w.WriteHeader(rd.code)
	case strings.HasPrefix(p, "/status/"):
		code, _ := strconv.Atoi(strings.TrimPrefix(p, "/status/"))
		if code == 429 {
			w.Header().Set("Retry-After", "7")
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(code)
		_, _ = fmt.Fprintf(w, `{"title":"status %d from the recorder","status":%d}`, code, code)
	case p == "/hold":
		rec.held <- struct{}{}
		select {
		case <-rec.release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"held":true}`)
	case p == "/slow" || p == "/keyed-slow":
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"late":true}`)
	case p == "/big":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, strings.Repeat("0123456789abcdef", 8192)) // 128 KiB
	case p == "/big-json":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":"`+strings.Repeat("x", 128<<10)+`"}`)
	case p == "/big-bin":
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(bytes.Repeat([]byte{0xAB}, 128<<10))
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "path": r.URL.EscapedPath()})
	}
}

// recorderSpec is the OpenAPI document of the recording upstream: every
// parameter location and style, every body type, redirects, a slow and
// oversized responses, and three security schemes.
const recorderSpec = `openapi: 3.0.3
info: {title: recording upstream, version: "1.0"}
servers: [{url: "http://127.0.0.1:1"}]
security: [{bearerAuth: []}]
components:
  securitySchemes:
    bearerAuth: {type: http, scheme: bearer}
    apiKeyHeader: {type: apiKey, in: header, name: X-API-Key}
    apiKeyQuery: {type: apiKey, in: query, name: api_key}
  responses:
    OK: {description: ok, content: {application/json: {schema: {type: object}}}}
paths:
  /items/{id}:
    get:
      operationId: getItem
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
        - {name: X-Note, in: header, schema: {type: string}}
        - {name: q, in: query, schema: {type: string}}
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /styles/{simple}/{label}/{matrix}/{simpleObj}:
    get:
      operationId: styles
      parameters:
        - {name: simple, in: path, required: true, schema: {type: array, items: {type: string}}}
        - {name: label, in: path, required: true, style: label, schema: {type: array, items: {type: string}}}
        - {name: matrix, in: path, required: true, style: matrix, explode: true, schema: {type: object, properties: {x: {type: integer}, y: {type: integer}}}}
        - {name: simpleObj, in: path, required: true, schema: {type: object, properties: {r: {type: integer}, g: {type: integer}}}}
        - {name: formExploded, in: query, schema: {type: array, items: {type: string}}}
        - {name: formFlat, in: query, explode: false, schema: {type: array, items: {type: string}}}
        - {name: space, in: query, style: spaceDelimited, explode: false, schema: {type: array, items: {type: string}}}
        - {name: pipe, in: query, style: pipeDelimited, explode: false, schema: {type: array, items: {type: string}}}
        - {name: deep, in: query, style: deepObject, explode: true, schema: {type: object, properties: {a: {type: string}, b: {type: integer}}}}
        - {name: obj, in: query, style: form, explode: true, schema: {type: object, properties: {p: {type: string}, r: {type: string}}}}
        - {name: flag, in: query, schema: {type: boolean}}
        - {name: X-List, in: header, schema: {type: array, items: {type: string}}}
        - {name: X-Num, in: header, schema: {type: integer}}
        - {name: session, in: cookie, schema: {type: string}}
        - {name: prefs, in: cookie, explode: false, schema: {type: array, items: {type: string}}}
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /more/{labelX}/{matrixArr}/{matrixArrX}/{simpleObjX}:
    get:
      operationId: moreStyles
      parameters:
        - {name: labelX, in: path, required: true, style: label, explode: true, schema: {type: array, items: {type: string}}}
        - {name: matrixArr, in: path, required: true, style: matrix, schema: {type: array, items: {type: string}}}
        - {name: matrixArrX, in: path, required: true, style: matrix, explode: true, schema: {type: array, items: {type: string}}}
        - {name: simpleObjX, in: path, required: true, explode: true, schema: {type: object, properties: {r: {type: integer}, g: {type: integer}}}}
        - {name: objFlat, in: query, explode: false, schema: {type: object, properties: {p: {type: string}, r: {type: string}}}}
        - {name: X-Obj, in: header, explode: true, schema: {type: object, properties: {a: {type: integer}, b: {type: string}}}}
        - {name: X-Flat, in: header, schema: {type: object, properties: {a: {type: integer}, b: {type: string}}}}
        - {name: num, in: cookie, schema: {type: integer}}
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /status/{code}:
    get:
      operationId: status
      parameters: [{name: code, in: path, required: true, schema: {type: integer}}]
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /json:
    post:
      operationId: postJSON
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [name]
              properties:
                name: {type: string}
                n: {type: integer}
                nested: {type: object, properties: {k: {type: string}, list: {type: array, items: {type: integer}}}}
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /text:
    post:
      operationId: postText
      requestBody: {required: true, content: {text/plain: {schema: {type: string}}}}
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /array:
    post:
      operationId: postArray
      requestBody: {required: true, content: {application/json: {schema: {type: array, items: {type: integer}}}}}
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /clash/{id}:
    put:
      operationId: clash
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
        - {name: id, in: query, schema: {type: string}}
        - {name: id, in: header, schema: {type: string}}
      requestBody: {required: true, content: {application/json: {schema: {type: object, properties: {id: {type: string}, other: {type: string}}}}}}
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /form:
    post:
      operationId: postForm
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema: {type: object, properties: {a: {type: string}, b: {type: boolean}, n: {type: integer}}}
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /upload:
    post:
      operationId: upload
      requestBody:
        required: true
        content:
          multipart/form-data:
            schema: {type: object, required: [file], properties: {file: {type: string, format: binary}, caption: {type: string}}}
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /blob/{name}:
    put:
      operationId: putBlob
      parameters: [{name: name, in: path, required: true, schema: {type: string}}]
      requestBody: {required: true, content: {application/octet-stream: {schema: {type: string, format: binary}}}}
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /away:
    get:
      operationId: redirectAway
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /away-alias:
    get:
      operationId: redirectAlias
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /away-307:
    post:
      operationId: redirectAway307
      requestBody: {required: true, content: {application/json: {schema: {type: object, properties: {secret: {type: string}}}}}}
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /same:
    get:
      operationId: redirectSame
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /same-307:
    post:
      operationId: redirectSame307
      requestBody: {required: true, content: {application/json: {schema: {type: object, properties: {v: {type: string}}}}}}
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /hold:
    get:
      operationId: hold
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /slow:
    get:
      operationId: slow
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /big:
    get:
      operationId: big
      responses: {"200": {description: ok, content: {text/plain: {schema: {type: string}}}}}
  /big-json:
    get:
      operationId: bigJSON
      responses: {"200": {description: ok, content: {application/json: {schema: {type: object}}}}}
  /big-bin:
    get:
      operationId: bigBinary
      responses: {"200": {description: ok, content: {application/octet-stream: {schema: {type: string, format: binary}}}}}
  /keyed:
    get:
      operationId: keyedHeader
      security: [{apiKeyHeader: []}]
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /keyed-clash:
    get:
      operationId: keyedClash
      security: [{apiKeyHeader: []}]
      parameters:
        - {name: X-API-Key, in: header, schema: {type: string}}
        - {name: Authorization, in: header, schema: {type: string}}
        - {name: Host, in: header, schema: {type: string}}
        - {name: Connection, in: header, schema: {type: string}}
        - {name: Transfer-Encoding, in: header, schema: {type: string}}
        - {name: Content-Length, in: header, schema: {type: string}}
        - {name: Cookie, in: header, schema: {type: string}}
        - {name: Proxy-Authorization, in: header, schema: {type: string}}
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /keyed-redirect:
    get:
      operationId: keyedRedirect
      security: [{apiKeyQuery: []}]
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /keyed-away:
    get:
      operationId: keyedAway
      security: [{apiKeyQuery: []}]
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /keyed-slow:
    get:
      operationId: keyedSlow
      security: [{apiKeyQuery: []}]
      responses: {"200": {$ref: "#/components/responses/OK"}}
  /keyed-query:
    get:
      operationId: keyedQuery
      security: [{apiKeyQuery: []}]
      parameters: [{name: page, in: query, schema: {type: integer}}]
      responses: {"200": {$ref: "#/components/responses/OK"}}
`

// writeSpec writes the recorder's document to a temporary file.
func writeSpec(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "recorder.yaml")
	if err := os.WriteFile(p, []byte(recorderSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startRecorded starts a gateway in front of rec.
func startRecorded(t *testing.T, rec *recorder, env []string, extra ...string) *gatewayProc {
	t.Helper()
	args := append([]string{"--spec", writeSpec(t), "--upstream", rec.srv.URL, "--store", "memory"}, extra...)
	return startGateway(t, env, args...)
}

// parseMultipart decodes a recorded multipart/form-data body.
func parseMultipart(t *testing.T, r recorded) map[string]*partInfo {
	t.Helper()
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		t.Fatalf("Content-Type %q: %v", r.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"])
	parts := map[string]*partInfo{}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("multipart body: %v\n%q", err, r.Body)
		}
		b, _ := io.ReadAll(p)
		parts[p.FormName()] = &partInfo{FileName: p.FileName(), ContentType: p.Header.Get("Content-Type"), Data: b}
	}
	return parts
}

type partInfo struct {
	FileName    string
	ContentType string
	Data        []byte
}
