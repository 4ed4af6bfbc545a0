// Package demo is mcpgate's built-in demo API: a small pet store (pets,
// categories, orders, users, long-running reports) served as a plain
// net/http handler, together with the OpenAPI 3.1 document that describes it.
//
// `mcpgate serve --demo` runs this API in-process and serves it through the
// gateway; tests and benchmarks use it as a realistic upstream. It exercises
// the shapes a gateway has to handle: JSON, form, multipart and raw binary
// request bodies; path, query (form/explode=false array and deepObject),
// header and cookie parameters; cursor pagination; problem+json errors;
// bearer authentication; a same-origin redirect; and an asynchronous job that
// answers 202 Accepted with a Location to poll.
//
// Invariants:
//   - The package has no package-level mutable state. Every [API] owns its
//     data; separate APIs never share anything.
//   - An [API] is safe for concurrent use. Pet records are copy-on-write: a
//     record (including its pre-encoded JSON) is never modified after it has
//     been stored, so readers may use it after releasing the lock.
//   - Every route the handler serves is described by the embedded document
//     returned by [OpenAPI], and every operation in the document is served
//     (checked by the package tests).
//   - Errors are application/problem+json bodies with type, title, status and
//     detail; unknown paths answer 404 and known paths with an unsupported
//     method answer 405 with Allow, in the same format.
package demo

import (
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed openapi.json
var openapiDoc []byte

// OpenAPI returns the OpenAPI 3.1 document (JSON) describing the demo API.
// The caller gets its own copy and may modify it.
func OpenAPI() []byte {
	return append([]byte(nil), openapiDoc...)
}

// DefaultReportDelay is how long a report job runs when Options.ReportDelay
// is zero.
const DefaultReportDelay = 2 * time.Second

// MaxBodyBytes bounds every request body the API reads (1 MiB).
const MaxBodyBytes = 1 << 20

// Options configures an [API]. The zero value is a working, unauthenticated
// demo.
type Options struct {
	// RequireAuth makes every operation except the public ones (listCategories,
	// redirectMe) answer 401 unless the request carries a known bearer token.
	// A presented token is always checked, whatever RequireAuth says: an
	// unknown token gets 401.
	RequireAuth bool
	// Tokens maps bearer tokens to the subject they authenticate. When nil,
	// the single token "demo-token" authenticates subject "demo-user".
	Tokens map[string]string
	// ReportDelay is how long a report job stays "running" after POST
	// /reports. Zero means DefaultReportDelay; negative means done at once.
	ReportDelay time.Duration
	// Now is the clock used for timestamps and report completion. Nil means
	// time.Now. Tests inject a fake clock here.
	Now func() time.Time
}

// Operation names one operation the API serves, as the OpenAPI document
// describes it. Path uses OpenAPI template syntax ("/pets/{petId}").
type Operation struct {
	Method      string
	Path        string
	OperationID string
}

// Operations lists every operation the API serves, in document order.
func Operations() []Operation {
	rs := routes()
	ops := make([]Operation, len(rs))
	for i, r := range rs {
		ops[i] = Operation{Method: r.method, Path: r.path, OperationID: r.opID}
	}
	return ops
}

// API is the demo API, an http.Handler over in-memory data seeded at
// construction. Create it with [New].
type API struct {
	now         func() time.Time
	reportDelay time.Duration
	requireAuth bool
	tokens      map[string]string
	routes      []route
	mux         *http.ServeMux
	ctJSON      []string // {"application/json"}, shared read-only header value

	mu         sync.RWMutex
	pets       map[int64]*petRecord
	nextPet    int64
	orders     map[int64]*Order
	nextOrder  int64
	reports    map[int64]*report
	nextReport int64
	categories []Category // immutable after New
}

// route is one operation: its HTTP method and OpenAPI path, and the handler.
type route struct {
	method string
	path   string
	opID   string
	public bool // security: [] in the document
	h      func(*API, http.ResponseWriter, *http.Request, principal)
}

// routes is the single table of operations; the document must match it.
func routes() []route {
	return []route{
		{"GET", "/pets", "listPets", false, (*API).listPets},
		{"POST", "/pets", "createPet", false, (*API).createPet},
		{"GET", "/pets/{petId}", "getPet", false, (*API).getPet},
		{"PUT", "/pets/{petId}", "replacePet", false, (*API).replacePet},
		{"PATCH", "/pets/{petId}", "updatePet", false, (*API).updatePet},
		{"DELETE", "/pets/{petId}", "deletePet", false, (*API).deletePet},
		{"POST", "/pets/{petId}/photo", "uploadPetPhoto", false, (*API).uploadPetPhoto},
		{"PUT", "/pets/{petId}/photo", "putPetPhoto", false, (*API).putPetPhoto},
		{"GET", "/pets/{petId}/photo", "getPetPhoto", false, (*API).getPetPhoto},
		{"GET", "/categories", "listCategories", true, (*API).listCategories},
		{"POST", "/orders", "createOrder", false, (*API).createOrder},
		{"GET", "/orders/{orderId}", "getOrder", false, (*API).getOrder},
		{"POST", "/orders/{orderId}/cancel", "cancelOrder", false, (*API).cancelOrder},
		{"GET", "/users/me", "getCurrentUser", false, (*API).getCurrentUser},
		{"POST", "/reports", "createReport", false, (*API).createReport},
		{"GET", "/reports/{reportId}", "getReport", false, (*API).getReport},
		{"GET", "/redirect-me", "redirectMe", true, (*API).redirectMe},
	}
}

// New returns a demo API seeded with sample categories and pets (pet 1 has
// a PNG photo).
func New(opts Options) *API {
	a := &API{
		now:         opts.Now,
		reportDelay: opts.ReportDelay,
		requireAuth: opts.RequireAuth,
		tokens:      opts.Tokens,
		routes:      routes(),
		mux:         http.NewServeMux(),
		ctJSON:      []string{"application/json"},
		pets:        make(map[int64]*petRecord),
		orders:      make(map[int64]*Order),
		reports:     make(map[int64]*report),
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.reportDelay == 0 {
		a.reportDelay = DefaultReportDelay
	}
	if a.tokens == nil {
		a.tokens = map[string]string{"demo-token": "demo-user"}
	}
	for _, rt := range a.routes {
		a.mux.Handle(rt.method+" "+rt.path, a.wrap(rt))
	}
	a.mux.HandleFunc("/", a.fallback)
	a.seed()
	return a
}

// ServeHTTP serves the demo API.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mux.ServeHTTP(w, r)
}

// principal is the caller as authenticated by the bearer token.
type principal struct {
	subject       string
	authenticated bool
}

// wrap applies authentication to one route.
func (a *API) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principal{subject: "anonymous"}
		if !rt.public {
			var ok bool
			p, ok = a.authenticate(w, r)
			if !ok {
				return
			}
		}
		rt.h(a, w, r, p)
	})
}

// authenticate resolves the caller or answers 401 and returns false.
func (a *API) authenticate(w http.ResponseWriter, r *http.Request) (principal, bool) {
	authz := r.Header.Get("Authorization")
	if authz == "" {
		if a.requireAuth {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcpgate-demo"`)
			problem(w, http.StatusUnauthorized, "a bearer token is required")
			return principal{}, false
		}
		return principal{subject: "anonymous"}, true
	}
	scheme, tok, _ := strings.Cut(authz, " ")
	if !strings.EqualFold(scheme, "Bearer") || tok == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpgate-demo", error="invalid_request"`)
		problem(w, http.StatusUnauthorized, "the Authorization header must be a bearer token")
		return principal{}, false
	}
	sub, ok := a.tokens[strings.TrimSpace(tok)]
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpgate-demo", error="invalid_token"`)
		problem(w, http.StatusUnauthorized, "the bearer token is not valid")
		return principal{}, false
	}
	return principal{subject: sub, authenticated: true}, true
}

// fallback answers requests no route matched: 405 with Allow when the path
// exists under another method, 404 otherwise.
func (a *API) fallback(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, rt := range a.routes {
		if pathMatches(rt.path, r.URL.Path) {
			allow = append(allow, rt.method)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		problem(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path))
		return
	}
	problem(w, http.StatusNotFound, fmt.Sprintf("no resource at %s", r.URL.Path))
}

// pathMatches reports whether a concrete path matches an OpenAPI path
// template whose {param} segments match any single non-empty segment.
func pathMatches(tmpl, path string) bool {
	ts := strings.Split(strings.Trim(tmpl, "/"), "/")
	ps := strings.Split(strings.Trim(path, "/"), "/")
	if len(ts) != len(ps) {
		return false
	}
	for i, t := range ts {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			if ps[i] == "" {
				return false
			}
			continue
		}
		if t != ps[i] {
			return false
		}
	}
	return true
}

// Problem is an RFC 9457 problem detail, the body of every error response.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// problem writes an application/problem+json error.
func problem(w http.ResponseWriter, status int, detail string) {
	b, err := json.Marshal(Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail})
	if err != nil { // cannot happen for this struct
		http.Error(w, detail, status)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeJSON writes v as JSON with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		problem(w, http.StatusInternalServerError, fmt.Errorf("encode response: %w", err).Error())
		return
	}
	writeRaw(w, status, "application/json", b)
}

// writeRaw writes pre-encoded bytes with the given status and content type.
func writeRaw(w http.ResponseWriter, status int, contentType string, b []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// encodeCursor and decodeCursor make the opaque pagination cursor: the id of
// the last pet on the previous page.
func encodeCursor(lastID int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("after:" + strconv.FormatInt(lastID, 10)))
}

func decodeCursor(c string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, fmt.Errorf("cursor is not base64url: %w", err)
	}
	s, ok := strings.CutPrefix(string(b), "after:")
	if !ok {
		return 0, fmt.Errorf("cursor %q is not a pets cursor", c)
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cursor %q: %w", c, err)
	}
	return id, nil
}
