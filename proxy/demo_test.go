package proxy

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/demo"
	"github.com/mcpgate/mcpgate/mcp"
)

// demoGateway serves the demo API and compiles an endpoint for every tool
// generated from its document.
func demoGateway(t testing.TB, opts demo.Options, mod func(*Config)) (*Proxy, map[string]*Endpoint, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(demo.New(opts))
	t.Cleanup(srv.Close)
	p := newProxy(t, srv.URL, mod)
	eps, err := p.Endpoints(demoTools(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != len(demo.Operations()) {
		t.Fatalf("%d endpoints for %d operations", len(eps), len(demo.Operations()))
	}
	return p, eps, srv
}

func TestDemoEndToEnd(t *testing.T) {
	p, eps, srv := demoGateway(t, demo.Options{RequireAuth: true}, nil)
	ctx := mcp.WithPrincipal(t.Context(), mcp.Principal{Subject: "demo-user", Credential: mcp.NewSecret("demo-token")})
	do := func(tool, args string) *mcp.CallToolResult {
		t.Helper()
		e := eps[tool]
		if e == nil {
			t.Fatalf("no endpoint %s", tool)
		}
		return callCtx(t, ctx, p, e, args)
	}
	decode := func(r *mcp.CallToolResult) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(structured(t, r)), &m); err != nil {
			t.Fatalf("structured content: %v (%s)", err, text(r))
		}
		return m
	}

	// list pets: form array (explode=false), deepObject filter, header
	res := do("listPets", `{"limit":2,"filter":{"status":"available"},"X-Request-Id":"r-1"}`)
	wantOK(t, res)
	list := decode(res)
	items, _ := list["items"].([]any)
	if len(items) != 2 || list["nextCursor"] == nil {
		t.Fatalf("listPets: %s", text(res))
	}
	res = do("listPets", `{"limit":101}`)
	wantError(t, res, "Invalid arguments", "/limit")

	// create a pet (JSON body)
	res = do("createPet", `{"name":"Gatewayed Rex","species":"dog","tags":["gw-good","gw-boy"]}`)
	wantOK(t, res)
	pet := decode(res)
	if pet["name"] != "Gatewayed Rex" || pet["id"] == nil {
		t.Fatalf("createPet: %s", text(res))
	}
	id := pet["id"].(float64)
	idArg := strconv.FormatInt(int64(id), 10)

	// tags form array (explode=false) finds the new pet
	res = do("listPets", `{"tags":["gw-good","gw-boy"]}`)
	wantOK(t, res)
	if items := decode(res)["items"].([]any); len(items) != 1 {
		t.Fatalf("listPets by tags: %s", text(res))
	}

	// create an order (form body)
	res = do("createOrder", `{"petId":`+idArg+`,"note":"deliver at 9 & ring","express":true}`)
	wantOK(t, res)
	order := decode(res)
	if order["note"] != "deliver at 9 & ring" || order["express"] != true {
		t.Fatalf("createOrder: %s", text(res))
	}

	// upload a photo (multipart), then read it back (image content)
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDRdemo")
	b64 := base64.StdEncoding.EncodeToString(png)
	res = do("uploadPetPhoto", `{"petId":`+idArg+`,"caption":"smile","file":{"content":"`+b64+`","filename":"rex.png","contentType":"image/png"}}`)
	wantOK(t, res)
	if info := decode(res); info["size"] != float64(len(png)) || info["caption"] != "smile" {
		t.Fatalf("uploadPetPhoto: %s", text(res))
	}
	res = do("getPetPhoto", `{"petId":`+idArg+`}`)
	wantOK(t, res)
	if c := res.Content[0]; c.Type != "image" || c.MIMEType != "image/png" || c.Data != b64 {
		t.Fatalf("getPetPhoto: %+v", c)
	}
	// the same through the raw binary body
	res = do("putPetPhoto", `{"petId":`+idArg+`,"caption":"again","body":"`+b64+`"}`)
	wantOK(t, res)

	// a 202 with Location: reported for polling
	out, err := p.Do(ctx, eps["createReport"], json.RawMessage(`{"kind":"inventory"}`))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != 202 || out.Accepted == nil || !strings.HasPrefix(out.Accepted.Location, srv.URL+"/reports/") || out.Accepted.RetryAfter != time.Second {
		t.Fatalf("createReport: status %d accepted %+v", out.Status, out.Accepted)
	}
	wantOK(t, out.Result)
	if !strings.HasPrefix(out.Accepted.Path, "/reports/") || !strings.Contains(text(out.Result), "its status is at "+out.Accepted.Path+" ") ||
		strings.Contains(text(out.Result), srv.URL) {
		t.Fatalf("createReport text: %s (path %q)", text(out.Result), out.Accepted.Path)
	}

	// cookie parameter and the caller's identity
	res = do("getCurrentUser", `{"theme":"dark"}`)
	wantOK(t, res)
	if u := decode(res); u["subject"] != "demo-user" || u["authenticated"] != true {
		t.Fatalf("getCurrentUser: %s", text(res))
	}
	// same-origin redirect keeps the credential
	res = do("redirectMe", `{}`)
	wantOK(t, res)
	if u := decode(res); u["authenticated"] != true {
		t.Fatalf("redirectMe: %s", text(res))
	}

	// not found and unknown id
	res = do("getPet", `{"petId":999999}`)
	wantError(t, res, "HTTP 404 Not Found", "no pet with id 999999")

	// a wrong credential: authentication failed
	bad := mcp.WithPrincipal(t.Context(), mcp.Principal{Credential: mcp.NewSecret("wrong")})
	res = callCtx(t, bad, p, eps["listPets"], `{}`)
	wantError(t, res, "Authentication failed (HTTP 401")
	// anonymous caller
	res = callCtx(t, t.Context(), p, eps["listPets"], `{}`)
	wantError(t, res, "Authentication failed (HTTP 401", "none were sent")

	// the Handler adapter
	h := p.Handler(eps["listCategories"])
	res, err = h(ctx, &mcp.CallToolRequest{Name: "listCategories", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, res)
}

func TestConcurrentDispatch(t *testing.T) {
	p, eps, _ := demoGateway(t, demo.Options{RequireAuth: true}, nil)
	ctx := mcp.WithPrincipal(t.Context(), mcp.Principal{Credential: mcp.NewSecret("demo-token")})
	errs := make(chan string, 64)
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 20 {
				tool, args := "getPet", `{"petId":1}`
				if (g+i)%3 == 0 {
					tool, args = "listPets", `{"limit":3,"filter":{"status":"available"}}`
				}
				r, err := p.Dispatch(ctx, eps[tool], json.RawMessage(args))
				if err != nil || r.IsError {
					errs <- fmt.Sprint(err, r)
					return
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestPollAccepted(t *testing.T) {
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	var clock atomic.Int64 // offset from now, in ns
	p, eps, _ := demoGateway(t, demo.Options{RequireAuth: true, ReportDelay: time.Minute, Now: func() time.Time { return now.Add(time.Duration(clock.Load())) }}, nil)
	ctx := mcp.WithPrincipal(t.Context(), mcp.Principal{Credential: mcp.NewSecret("demo-token")})
	out, err := p.Do(ctx, eps["createReport"], json.RawMessage(`{"kind":"orders"}`))
	if err != nil || out.Accepted == nil {
		t.Fatalf("%v %+v", err, out)
	}
	st, err := p.Poll(ctx, eps["createReport"], out.Accepted)
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, st.Result)
	if !strings.Contains(structured(t, st.Result), `"status":"running"`) || st.Accepted == nil || st.Accepted.Location != out.Accepted.Location {
		t.Fatalf("poll while running must report the operation still accepted: %s %+v", text(st.Result), st.Accepted)
	}
	clock.Store(int64(2 * time.Minute))
	st, err = p.Poll(ctx, eps["createReport"], out.Accepted)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(structured(t, st.Result), `"status":"done"`) || st.Accepted != nil {
		t.Fatalf("poll when done: %s %+v", text(st.Result), st.Accepted)
	}
	// another origin is never polled
	st, err = p.Poll(ctx, eps["createReport"], &Accepted{Location: "http://evil.example/ops/1"})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, st.Result, "another origin")
}
