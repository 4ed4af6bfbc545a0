package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

const base = "http://127.0.0.1:8081" // the server in the document

func loadDoc(t testing.TB) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(OpenAPI())
	if err != nil {
		t.Fatalf("load embedded document: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("validate embedded document: %v", err)
	}
	return doc
}

func TestOpenAPIDocumentDescribesEveryRoute(t *testing.T) {
	doc := loadDoc(t)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	var inDoc []string
	ids := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			inDoc = append(inDoc, method+" "+path+" "+op.OperationID)
			if op.Summary == "" || op.Description == "" {
				t.Errorf("%s %s: missing summary or description", method, path)
			}
			if ids[op.OperationID] {
				t.Errorf("duplicate operationId %q", op.OperationID)
			}
			ids[op.OperationID] = true
		}
	}
	var served []string
	for _, op := range Operations() {
		served = append(served, op.Method+" "+op.Path+" "+op.OperationID)
	}
	sort.Strings(inDoc)
	sort.Strings(served)
	if !slices.Equal(inDoc, served) {
		t.Errorf("document and routes differ:\n doc:    %v\n served: %v", inDoc, served)
	}
	// Routes marked public are exactly the operations with security: [].
	for _, rt := range routes() {
		op := doc.Paths.Find(rt.path).GetOperation(rt.method)
		public := op.Security != nil && len(*op.Security) == 0
		if public != rt.public {
			t.Errorf("%s: public=%v in code, %v in document", rt.opID, rt.public, public)
		}
	}
	// The features the gateway must handle are all present.
	raw := string(OpenAPI())
	for _, want := range []string{`"deepObject"`, `"explode": false`, `"in": "header"`, `"in": "cookie"`,
		`"multipart/form-data"`, `"application/x-www-form-urlencoded"`, `"application/octet-stream"`,
		`"discriminator"`, `"oneOf"`, `"bearer"`, `"#/components/schemas/Category"`} {
		if !strings.Contains(raw, want) {
			t.Errorf("document lacks %s", want)
		}
	}
	cat := doc.Components.Schemas["Category"].Value
	if got := cat.Properties["children"].Value.Items.Ref; got != "#/components/schemas/Category" {
		t.Errorf("Category.children.items = %q, want a recursive $ref", got)
	}
}

// checker sends requests to an API and checks each request and response
// against the document.
type checker struct {
	t      *testing.T
	api    *API
	doc    *openapi3.T
	router routers.Router
}

func newChecker(t *testing.T, opts Options) *checker {
	doc := loadDoc(t)
	r, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatalf("router: %v", err)
	}
	return &checker{t: t, api: New(opts), doc: doc, router: r}
}

// call describes one request and what must come back.
type call struct {
	name    string
	method  string
	target  string // path and query
	ctype   string
	body    string
	header  map[string]string
	status  int
	invalid bool // the request deliberately violates the document
	check   func(t *testing.T, res *http.Response, body []byte)
}

func (c *checker) run(calls []call) {
	for _, cl := range calls {
		c.t.Run(cl.name, func(t *testing.T) { c.do(t, cl) })
	}
}

func (c *checker) do(t *testing.T, cl call) (*http.Response, []byte) {
	t.Helper()
	mk := func() *http.Request {
		var body io.Reader
		if cl.body != "" {
			body = strings.NewReader(cl.body)
		}
		req := httptest.NewRequest(cl.method, base+cl.target, body)
		if cl.ctype != "" {
			req.Header.Set("Content-Type", cl.ctype)
		}
		for k, v := range cl.header {
			req.Header.Set(k, v)
		}
		return req
	}
	rec := httptest.NewRecorder()
	c.api.ServeHTTP(rec, mk())
	res := rec.Result()
	body := rec.Body.Bytes()
	if res.StatusCode != cl.status {
		t.Fatalf("%s %s: status %d, want %d; body %s", cl.method, cl.target, res.StatusCode, cl.status, body)
	}
	if res.StatusCode >= 400 {
		if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("error content type %q", ct)
		}
		var p Problem
		if err := json.Unmarshal(body, &p); err != nil || p.Status != res.StatusCode || p.Title == "" || p.Detail == "" {
			t.Errorf("bad problem body %s (err %v)", body, err)
		}
	}

	vreq := mk()
	route, params, err := c.router.FindRoute(vreq)
	if err != nil {
		if cl.invalid {
			return res, body
		}
		t.Fatalf("document has no route for %s %s: %v", cl.method, cl.target, err)
	}
	in := &openapi3filter.RequestValidationInput{
		Request: vreq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	}
	if err := openapi3filter.ValidateRequest(context.Background(), in); (err != nil) != cl.invalid {
		t.Errorf("request valid against the document = %v, want %v (err: %v)", err == nil, !cl.invalid, err)
	}
	rin := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: res.StatusCode, Header: res.Header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if ct := res.Header.Get("Content-Type"); ct == "image/png" || res.StatusCode == http.StatusFound {
		rin.Options.ExcludeResponseBody = true
	}
	if err := openapi3filter.ValidateResponse(context.Background(), rin); err != nil {
		t.Errorf("response does not match the document: %v\nbody: %s", err, body)
	}
	if cl.check != nil {
		cl.check(t, res, body)
	}
	return res, body
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, b, err)
	}
	return v
}

func TestPets(t *testing.T) {
	c := newChecker(t, Options{})
	c.run([]call{
		{name: "get seeded", method: "GET", target: "/pets/1", status: 200, check: func(t *testing.T, res *http.Response, b []byte) {
			p := decode[Pet](t, b)
			if p.ID != 1 || p.Name != "Rex" || p.Species != "dog" || !p.HasPhoto || p.Details == nil || p.Details.Kind != "dog" {
				t.Errorf("pet 1 = %+v", p)
			}
			if res.Header.Get("ETag") != `"v1"` || res.Header.Get("Content-Type") != "application/json" {
				t.Errorf("headers %v", res.Header)
			}
		}},
		{name: "get missing", method: "GET", target: "/pets/999", status: 404},
		{name: "get bad id", method: "GET", target: "/pets/abc", status: 400, invalid: true},
		{name: "create", method: "POST", target: "/pets", ctype: "application/json",
			body:   `{"name":"Tom","species":"cat","tags":["indoor"],"categoryId":3,"details":{"kind":"cat","indoor":true,"livesLeft":7}}`,
			status: 201, check: func(t *testing.T, res *http.Response, b []byte) {
				p := decode[Pet](t, b)
				if p.ID != 25 || p.Status != "available" || *p.Details.LivesLeft != 7 || res.Header.Get("Location") != "/pets/25" {
					t.Errorf("created %+v, Location %q", p, res.Header.Get("Location"))
				}
			}},
		{name: "get created", method: "GET", target: "/pets/25", status: 200, check: func(t *testing.T, _ *http.Response, b []byte) {
			if p := decode[Pet](t, b); p.Name != "Tom" || !slices.Equal(p.Tags, []string{"indoor"}) {
				t.Errorf("got %+v", p)
			}
		}},
		{name: "create duplicate name", method: "POST", target: "/pets", ctype: "application/json",
			body: `{"name":"tom","species":"cat"}`, status: 409},
		{name: "create missing name", method: "POST", target: "/pets", ctype: "application/json",
			body: `{"species":"cat"}`, status: 422, invalid: true},
		{name: "create details mismatch", method: "POST", target: "/pets", ctype: "application/json",
			body: `{"name":"Odd","species":"bird","details":{"kind":"dog"}}`, status: 422},
		{name: "create unknown category", method: "POST", target: "/pets", ctype: "application/json",
			body: `{"name":"Odd","species":"bird","categoryId":77}`, status: 422},
		{name: "create malformed json", method: "POST", target: "/pets", ctype: "application/json",
			body: `{"name":`, status: 400, invalid: true},
		{name: "create unknown field", method: "POST", target: "/pets", ctype: "application/json",
			body: `{"name":"X","species":"dog","color":"red"}`, status: 400, invalid: true},
		{name: "create wrong media type", method: "POST", target: "/pets", ctype: "text/plain",
			body: `name=x`, status: 415, invalid: true},
		{name: "replace", method: "PUT", target: "/pets/25", ctype: "application/json",
			body: `{"name":"Tommy","species":"cat","status":"adopted"}`, status: 200, check: func(t *testing.T, res *http.Response, b []byte) {
				p := decode[Pet](t, b)
				if p.Name != "Tommy" || p.Status != "adopted" || p.Version != 2 || p.Details != nil || len(p.Tags) != 0 {
					t.Errorf("replaced %+v", p)
				}
				if res.Header.Get("ETag") != `"v2"` {
					t.Errorf("ETag %q", res.Header.Get("ETag"))
				}
			}},
		{name: "replace missing", method: "PUT", target: "/pets/999", ctype: "application/json",
			body: `{"name":"Nobody","species":"cat"}`, status: 404},
		{name: "patch", method: "PATCH", target: "/pets/25", ctype: "application/merge-patch+json",
			header: map[string]string{"If-Match": `"v2"`}, body: `{"tags":["calm","old"]}`, status: 200,
			check: func(t *testing.T, _ *http.Response, b []byte) {
				p := decode[Pet](t, b)
				if p.Name != "Tommy" || !slices.Equal(p.Tags, []string{"calm", "old"}) || p.Version != 3 {
					t.Errorf("patched %+v", p)
				}
			}},
		{name: "patch stale etag", method: "PATCH", target: "/pets/25", ctype: "application/json",
			header: map[string]string{"If-Match": `"v2"`}, body: `{"name":"Late"}`, status: 412},
		{name: "patch invalid status", method: "PATCH", target: "/pets/25", ctype: "application/json",
			body: `{"status":"lost"}`, status: 422, invalid: true},
		{name: "patch name taken", method: "PATCH", target: "/pets/25", ctype: "application/json",
			body: `{"name":"REX"}`, status: 409},
		{name: "delete", method: "DELETE", target: "/pets/25", status: 204},
		{name: "get deleted", method: "GET", target: "/pets/25", status: 404},
		{name: "delete again", method: "DELETE", target: "/pets/25", status: 404},
	})
}

func TestListPetsPaginationAndFilters(t *testing.T) {
	c := newChecker(t, Options{})
	// Walk all pages of 7 and check we see every pet exactly once, in order.
	var all []int64
	cursor := ""
	for page := 0; ; page++ {
		target := "/pets?limit=7"
		if cursor != "" {
			target += "&cursor=" + cursor
		}
		_, b := c.do(t, call{method: "GET", target: target, status: 200})
		pg := decode[PetPage](t, b)
		if len(pg.Items) > 7 {
			t.Fatalf("page of %d > limit", len(pg.Items))
		}
		for _, p := range pg.Items {
			all = append(all, p.ID)
		}
		if pg.NextCursor == "" {
			break
		}
		if page > 10 {
			t.Fatal("pagination does not end")
		}
		cursor = pg.NextCursor
	}
	if len(all) != 24 || !slices.IsSorted(all) || all[0] != 1 || all[23] != 24 {
		t.Fatalf("walked ids %v", all)
	}

	c.run([]call{
		{name: "default page", method: "GET", target: "/pets", status: 200, check: func(t *testing.T, _ *http.Response, b []byte) {
			pg := decode[PetPage](t, b)
			if len(pg.Items) != 20 || pg.NextCursor == "" {
				t.Errorf("default page has %d items, cursor %q", len(pg.Items), pg.NextCursor)
			}
		}},
		{name: "deepObject filter", method: "GET", target: "/pets?filter[species]=dog&filter[status]=available&limit=100", status: 200,
			check: func(t *testing.T, _ *http.Response, b []byte) {
				pg := decode[PetPage](t, b)
				if len(pg.Items) == 0 {
					t.Fatal("no dogs")
				}
				for _, p := range pg.Items {
					if p.Species != "dog" || p.Status != "available" {
						t.Errorf("filter let through %+v", p)
					}
				}
			}},
		{name: "tags csv", method: "GET", target: "/pets?tags=friendly,trained&limit=100", status: 200,
			check: func(t *testing.T, _ *http.Response, b []byte) {
				pg := decode[PetPage](t, b)
				if len(pg.Items) != 8 {
					t.Errorf("tags=friendly,trained matched %d pets, want 8", len(pg.Items))
				}
				for _, p := range pg.Items {
					if !slices.Contains(p.Tags, "trained") || !slices.Contains(p.Tags, "friendly") {
						t.Errorf("pet %d tags %v", p.ID, p.Tags)
					}
				}
			}},
		{name: "category filter", method: "GET", target: "/pets?filter[categoryId]=6", status: 200,
			check: func(t *testing.T, _ *http.Response, b []byte) {
				for _, p := range decode[PetPage](t, b).Items {
					if p.Species != "fish" {
						t.Errorf("category 6 returned %+v", p)
					}
				}
			}},
		{name: "request id echoed", method: "GET", target: "/pets?limit=1", header: map[string]string{"X-Request-Id": "abc-123"}, status: 200,
			check: func(t *testing.T, res *http.Response, _ []byte) {
				if res.Header.Get("X-Request-Id") != "abc-123" {
					t.Errorf("X-Request-Id %q", res.Header.Get("X-Request-Id"))
				}
			}},
		{name: "limit too big", method: "GET", target: "/pets?limit=1000", status: 400, invalid: true},
		{name: "bad cursor", method: "GET", target: "/pets?cursor=!!", status: 400},
		// Invalid per the document (additionalProperties: false), but
		// kin-openapi does not apply that to deepObject parameters.
		{name: "unknown filter", method: "GET", target: "/pets?filter[color]=red", status: 400},
		{name: "bad species filter", method: "GET", target: "/pets?filter[species]=dragon", status: 400, invalid: true},
	})
}

func multipartBody(t *testing.T, fileCT string, file []byte, caption string) (string, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	if file != nil {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="file"; filename="pet.png"`)
		h.Set("Content-Type", fileCT)
		pw, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = pw.Write(file)
	}
	if caption != "" {
		if err := mw.WriteField("caption", caption); err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), b.String()
}

func TestPhotos(t *testing.T) {
	c := newChecker(t, Options{})
	img := samplePNG()
	ct, body := multipartBody(t, "image/png", img, "sleepy")
	badCT, badBody := multipartBody(t, "image/png", []byte("GIF89a not a png"), "")
	noFileCT, noFileBody := multipartBody(t, "", nil, "only a caption")
	c.run([]call{
		{name: "get seeded photo", method: "GET", target: "/pets/1/photo", status: 200, check: func(t *testing.T, res *http.Response, b []byte) {
			if res.Header.Get("Content-Type") != "image/png" || !bytes.Equal(b, img) {
				t.Errorf("photo: %s, %d bytes", res.Header.Get("Content-Type"), len(b))
			}
		}},
		{name: "no photo yet", method: "GET", target: "/pets/2/photo", status: 404},
		{name: "multipart upload", method: "POST", target: "/pets/2/photo", ctype: ct, body: body, status: 201,
			check: func(t *testing.T, _ *http.Response, b []byte) {
				if pi := decode[PhotoInfo](t, b); pi.PetID != 2 || pi.Size != len(img) || pi.Caption != "sleepy" || pi.ContentType != "image/png" {
					t.Errorf("photo info %+v", pi)
				}
			}},
		{name: "download uploaded", method: "GET", target: "/pets/2/photo", status: 200, check: func(t *testing.T, _ *http.Response, b []byte) {
			if !bytes.Equal(b, img) {
				t.Error("downloaded bytes differ from upload")
			}
		}},
		{name: "pet shows photo", method: "GET", target: "/pets/2", status: 200, check: func(t *testing.T, _ *http.Response, b []byte) {
			if p := decode[Pet](t, b); !p.HasPhoto || p.Version != 2 {
				t.Errorf("pet after upload %+v", p)
			}
		}},
		{name: "multipart not png", method: "POST", target: "/pets/2/photo", ctype: badCT, body: badBody, status: 422},
		{name: "multipart without file", method: "POST", target: "/pets/2/photo", ctype: noFileCT, body: noFileBody, status: 422, invalid: true},
		{name: "multipart to missing pet", method: "POST", target: "/pets/999/photo", ctype: ct, body: body, status: 404},
		{name: "octet-stream upload", method: "PUT", target: "/pets/3/photo?caption=raw", ctype: "application/octet-stream", body: string(img), status: 200,
			check: func(t *testing.T, _ *http.Response, b []byte) {
				if pi := decode[PhotoInfo](t, b); pi.PetID != 3 || pi.Caption != "raw" || pi.Size != len(img) {
					t.Errorf("photo info %+v", pi)
				}
			}},
		{name: "octet-stream not png", method: "PUT", target: "/pets/3/photo", ctype: "application/octet-stream", body: "hello", status: 422},
		{name: "octet-stream wrong type", method: "PUT", target: "/pets/3/photo", ctype: "text/plain", body: "hello", status: 415, invalid: true},
	})
	big := bytes.Repeat([]byte{0}, MaxBodyBytes+10)
	copy(big, img)
	c.do(t, call{name: "too large", method: "PUT", target: "/pets/3/photo", ctype: "image/png", body: string(big), status: 413})
}

func TestCategoriesRedirectAndRouting(t *testing.T) {
	c := newChecker(t, Options{RequireAuth: true})
	c.run([]call{
		{name: "categories are public", method: "GET", target: "/categories", status: 200, check: func(t *testing.T, _ *http.Response, b []byte) {
			cs := decode[[]Category](t, b)
			if len(cs) != 3 || cs[0].Name != "Mammals" || len(cs[0].Children) != 2 || cs[0].Children[1].Name != "Cats" {
				t.Errorf("tree %+v", cs)
			}
		}},
		{name: "redirect", method: "GET", target: "/redirect-me", status: 302, check: func(t *testing.T, res *http.Response, _ []byte) {
			if res.Header.Get("Location") != "/users/me" {
				t.Errorf("Location %q", res.Header.Get("Location"))
			}
		}},
		{name: "unknown path", method: "GET", target: "/nope", status: 404, invalid: true},
		{name: "wrong method", method: "PATCH", target: "/orders", status: 405, invalid: true, check: func(t *testing.T, res *http.Response, _ []byte) {
			if res.Header.Get("Allow") != "POST" {
				t.Errorf("Allow %q", res.Header.Get("Allow"))
			}
		}},
	})
}

func TestAuth(t *testing.T) {
	c := newChecker(t, Options{RequireAuth: true, Tokens: map[string]string{"t-alice": "alice"}})
	c.run([]call{
		{name: "missing token", method: "GET", target: "/pets/1", status: 401, check: func(t *testing.T, res *http.Response, _ []byte) {
			if !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate %q", res.Header.Get("WWW-Authenticate"))
			}
		}},
		{name: "unknown token", method: "GET", target: "/pets/1", header: map[string]string{"Authorization": "Bearer nope"}, status: 401},
		{name: "basic scheme", method: "GET", target: "/pets/1", header: map[string]string{"Authorization": "Basic YTpi"}, status: 401},
		{name: "default token not configured", method: "GET", target: "/users/me", header: map[string]string{"Authorization": "Bearer demo-token"}, status: 401},
		{name: "me", method: "GET", target: "/users/me", header: map[string]string{"Authorization": "Bearer t-alice"}, status: 200,
			check: func(t *testing.T, _ *http.Response, b []byte) {
				if u := decode[User](t, b); u.Subject != "alice" || !u.Authenticated {
					t.Errorf("user %+v", u)
				}
			}},
		{name: "me with theme cookie", method: "GET", target: "/users/me", header: map[string]string{"Authorization": "Bearer t-alice", "Cookie": "theme=dark"}, status: 200,
			check: func(t *testing.T, _ *http.Response, b []byte) {
				if u := decode[User](t, b); u.Preferences.Theme != "dark" {
					t.Errorf("user %+v", u)
				}
			}},
		{name: "bad theme cookie", method: "GET", target: "/users/me", header: map[string]string{"Authorization": "Bearer t-alice", "Cookie": "theme=pink"}, status: 400, invalid: true},
	})

	open := newChecker(t, Options{})
	open.run([]call{
		{name: "anonymous allowed", method: "GET", target: "/users/me", status: 200, check: func(t *testing.T, _ *http.Response, b []byte) {
			if u := decode[User](t, b); u.Subject != "anonymous" || u.Authenticated {
				t.Errorf("user %+v", u)
			}
		}},
		{name: "default token", method: "GET", target: "/users/me", header: map[string]string{"Authorization": "Bearer demo-token"}, status: 200,
			check: func(t *testing.T, _ *http.Response, b []byte) {
				if u := decode[User](t, b); u.Subject != "demo-user" {
					t.Errorf("user %+v", u)
				}
			}},
		{name: "presented bad token still rejected", method: "GET", target: "/pets/1", header: map[string]string{"Authorization": "Bearer wrong"}, status: 401},
	})
}

func TestOrders(t *testing.T) {
	c := newChecker(t, Options{})
	form := "application/x-www-form-urlencoded"
	c.run([]call{
		{name: "create", method: "POST", target: "/orders", ctype: form, body: "petId=2&note=for+my+kid&express=true", status: 201,
			check: func(t *testing.T, res *http.Response, b []byte) {
				o := decode[Order](t, b)
				if o.ID != 1 || o.PetID != 2 || o.Status != "placed" || o.Note != "for my kid" || !o.Express || res.Header.Get("Location") != "/orders/1" {
					t.Errorf("order %+v Location %q", o, res.Header.Get("Location"))
				}
			}},
		{name: "pet now pending", method: "GET", target: "/pets/2", status: 200, check: func(t *testing.T, _ *http.Response, b []byte) {
			if p := decode[Pet](t, b); p.Status != "pending" {
				t.Errorf("pet status %q", p.Status)
			}
		}},
		{name: "pet not available", method: "POST", target: "/orders", ctype: form, body: "petId=2", status: 409},
		{name: "cannot delete ordered pet", method: "DELETE", target: "/pets/2", status: 409},
		{name: "unknown pet", method: "POST", target: "/orders", ctype: form, body: "petId=999", status: 422},
		{name: "missing petId", method: "POST", target: "/orders", ctype: form, body: "note=x", status: 422, invalid: true},
		{name: "json is not accepted", method: "POST", target: "/orders", ctype: "application/json", body: `{"petId":3}`, status: 415, invalid: true},
		{name: "get", method: "GET", target: "/orders/1", status: 200, check: func(t *testing.T, _ *http.Response, b []byte) {
			if o := decode[Order](t, b); o.ID != 1 || o.Status != "placed" {
				t.Errorf("order %+v", o)
			}
		}},
		{name: "get missing", method: "GET", target: "/orders/42", status: 404},
		{name: "cancel", method: "POST", target: "/orders/1/cancel", status: 200, check: func(t *testing.T, _ *http.Response, b []byte) {
			if o := decode[Order](t, b); o.Status != "cancelled" {
				t.Errorf("order %+v", o)
			}
		}},
		{name: "pet available again", method: "GET", target: "/pets/2", status: 200, check: func(t *testing.T, _ *http.Response, b []byte) {
			if p := decode[Pet](t, b); p.Status != "available" {
				t.Errorf("pet status %q", p.Status)
			}
		}},
		{name: "cancel twice", method: "POST", target: "/orders/1/cancel", status: 409},
		{name: "cancel missing", method: "POST", target: "/orders/9/cancel", status: 404},
	})
}

// fakeClock is a settable clock for report tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }
func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

func TestReports(t *testing.T) {
	clk := &fakeClock{now: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)}
	c := newChecker(t, Options{Now: clk.Now, ReportDelay: 5 * time.Second})
	c.run([]call{
		{name: "start", method: "POST", target: "/reports", ctype: "application/json", body: `{"kind":"inventory"}`, status: 202,
			check: func(t *testing.T, res *http.Response, b []byte) {
				if res.Header.Get("Location") != "/reports/1" || res.Header.Get("Retry-After") != "1" {
					t.Errorf("headers %v", res.Header)
				}
				if r := decode[Report](t, b); r.Status != "running" || r.Result != nil {
					t.Errorf("report %+v", r)
				}
			}},
		{name: "still running", method: "GET", target: "/reports/1", status: 200, check: func(t *testing.T, res *http.Response, b []byte) {
			if r := decode[Report](t, b); r.Status != "running" || r.Result != nil || res.Header.Get("Retry-After") != "1" {
				t.Errorf("report %+v", r)
			}
		}},
	})
	clk.Advance(4 * time.Second)
	c.do(t, call{name: "almost", method: "GET", target: "/reports/1", status: 200, check: func(t *testing.T, _ *http.Response, b []byte) {
		if r := decode[Report](t, b); r.Status != "running" {
			t.Errorf("report done early: %+v", r)
		}
	}})
	clk.Advance(time.Second)
	c.run([]call{
		{name: "done", method: "GET", target: "/reports/1", status: 200, check: func(t *testing.T, res *http.Response, b []byte) {
			r := decode[Report](t, b)
			if r.Status != "done" || r.Result == nil || r.Result.Total != 24 || r.Result.ByStatus["adopted"] != 4 || r.Result.ByStatus["available"] != 20 {
				t.Errorf("report %+v result %+v", r, r.Result)
			}
			if res.Header.Get("Retry-After") != "" {
				t.Error("Retry-After on a finished report")
			}
		}},
		{name: "bad kind", method: "POST", target: "/reports", ctype: "application/json", body: `{"kind":"weather"}`, status: 422, invalid: true},
		{name: "missing", method: "GET", target: "/reports/7", status: 404},
	})
}

func TestDefaultReportDelayUsesRealClock(t *testing.T) {
	api := New(Options{ReportDelay: -1})
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest("POST", "/reports", strings.NewReader(`{"kind":"orders"}`)))
	if rec.Code != 415 { // no Content-Type
		t.Fatalf("status %d", rec.Code)
	}
	req := httptest.NewRequest("POST", "/reports", strings.NewReader(`{"kind":"orders"}`))
	req.Header.Set("Content-Type", "application/json")
	rec = httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	if rec.Code != 202 {
		t.Fatalf("status %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest("GET", "/reports/1", nil))
	if r := decode[Report](t, rec.Body.Bytes()); r.Status != "done" || r.Result.Total != 0 {
		t.Errorf("negative delay: report %+v", r)
	}
}

func TestAPIsAreIndependent(t *testing.T) {
	a, b := New(Options{}), New(Options{})
	req := httptest.NewRequest("DELETE", "/pets/1", nil)
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	if rec.Code != 204 {
		t.Fatalf("delete: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	b.ServeHTTP(rec, httptest.NewRequest("GET", "/pets/1", nil))
	if rec.Code != 200 {
		t.Fatalf("pet 1 gone from a second API: %d", rec.Code)
	}
}

func TestConcurrentUse(t *testing.T) {
	api := New(Options{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				var req *http.Request
				switch (w + i) % 4 {
				case 0:
					req = httptest.NewRequest("GET", "/pets/3", nil)
				case 1:
					req = httptest.NewRequest("PATCH", "/pets/3", strings.NewReader(fmt.Sprintf(`{"tags":["t%d"]}`, i)))
					req.Header.Set("Content-Type", "application/json")
				case 2:
					req = httptest.NewRequest("GET", "/pets?limit=5", nil)
				case 3:
					req = httptest.NewRequest("POST", "/pets", strings.NewReader(fmt.Sprintf(`{"name":"n-%d-%d","species":"fish"}`, w, i)))
					req.Header.Set("Content-Type", "application/json")
				}
				rec := httptest.NewRecorder()
				api.ServeHTTP(rec, req)
				if rec.Code >= 300 {
					t.Errorf("%s %s: %d %s", req.Method, req.URL, rec.Code, rec.Body)
				}
			}
		})
	}
	wg.Wait()
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest("GET", "/pets/3", nil))
	if p := decode[Pet](t, rec.Body.Bytes()); p.Version != 1+8*50/4 {
		t.Errorf("version after %d patches = %d", 8*50/4, p.Version)
	}
}

func TestOpenAPIReturnsACopy(t *testing.T) {
	d := OpenAPI()
	d[0] = 'X'
	if OpenAPI()[0] == 'X' {
		t.Error("OpenAPI returned shared bytes")
	}
}

// nopWriter is a minimal ResponseWriter so the benchmark measures the API,
// not httptest.ResponseRecorder.
type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nopWriter) WriteHeader(int)             {}

func BenchmarkGetPet(b *testing.B) {
	api := New(Options{})
	req := httptest.NewRequest("GET", "/pets/7", nil)
	w := &nopWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		api.ServeHTTP(w, req)
	}
}
