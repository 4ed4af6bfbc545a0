package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"testing"

	"github.com/mcpgate/mcpgate/demo"
	"github.com/mcpgate/mcpgate/mcp"
)

// The benchmarks compare, against the same demo upstream (GET /pets/1,
// about 300 bytes of JSON) and with the same tuned transport:
//   - BenchmarkDirectGET: a bare client request (the floor);
//   - BenchmarkReverseProxyGET: httputil.ReverseProxy.ServeHTTP called in
//     process (one upstream hop, no inbound socket);
//   - BenchmarkDispatchGET: Proxy.Dispatch for the getPet tool (validate,
//     encode, forward the bearer, render the JSON as structuredContent).
// Each reports ns/op and allocs/op; the upstream runs in the same process,
// so its CPU is included in all three.

func benchUpstream(b *testing.B) *httptest.Server {
	b.Helper()
	srv := httptest.NewServer(demo.New(demo.Options{RequireAuth: true}))
	b.Cleanup(srv.Close)
	return srv
}

func BenchmarkDispatchGET(b *testing.B) {
	p, eps, _ := demoGateway(b, demo.Options{RequireAuth: true}, nil)
	e := eps["getPet"]
	ctx := mcp.WithPrincipal(context.Background(), mcp.Principal{Subject: "demo-user", Credential: mcp.NewSecret("demo-token")})
	args := json.RawMessage(`{"petId":1}`)
	if r, err := p.Dispatch(ctx, e, args); err != nil || r.IsError {
		b.Fatalf("%v %+v", err, r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := p.Dispatch(ctx, e, args)
		if err != nil || r.IsError {
			b.Fatal(err)
		}
	}
}

func BenchmarkDispatchGETParallel(b *testing.B) {
	p, eps, _ := demoGateway(b, demo.Options{RequireAuth: true}, nil)
	e := eps["getPet"]
	ctx := mcp.WithPrincipal(context.Background(), mcp.Principal{Subject: "demo-user", Credential: mcp.NewSecret("demo-token")})
	args := json.RawMessage(`{"petId":1}`)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, err := p.Dispatch(ctx, e, args)
			if err != nil || r.IsError {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkReverseProxyGET(b *testing.B) {
	srv := benchUpstream(b)
	rp := httputil.NewSingleHostReverseProxy(mustURL(b, srv.URL))
	rp.Transport = newTLSTransport() // net/http's, as a bare reverse proxy has
	req := httptest.NewRequest("GET", "http://gateway/pets/1", nil)
	req.Header.Set("Authorization", "Bearer demo-token")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := &discardWriter{h: http.Header{}}
		rp.ServeHTTP(w, req)
		if w.code != 200 {
			b.Fatal(w.code)
		}
	}
}

func BenchmarkDirectGET(b *testing.B) {
	srv := benchUpstream(b)
	c := &http.Client{Transport: NewTransport()}
	req, _ := http.NewRequest("GET", srv.URL+"/pets/1", nil)
	req.Header.Set("Authorization", "Bearer demo-token")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(c int)   { w.code = c }
func (w *discardWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = 200
	}
	return len(b), nil
}

// BenchmarkPrepareGET measures only the proxy's own request work for
// getPet (decode + validate the arguments, build the URL and headers,
// apply the credential), without the network; BenchmarkPrepareQuery the
// same for listPets with query parameters.
func BenchmarkPrepareGET(b *testing.B) { benchPrepare(b, "getPet", `{"petId":1}`) }

func BenchmarkPrepareQuery(b *testing.B) {
	benchPrepare(b, "listPets", `{"limit":2,"cursor":"c-1","filter":{"status":"available","species":"dog"}}`)
}

func benchPrepare(b *testing.B, tool, arguments string) {
	p, eps, _ := demoGateway(b, demo.Options{}, nil)
	e := eps[tool]
	ctx := mcp.WithPrincipal(context.Background(), mcp.Principal{Credential: mcp.NewSecret("demo-token")})
	args := json.RawMessage(arguments)
	b.ReportAllocs()
	for b.Loop() {
		v, err := e.decodeArgs(args)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.buildRequest(ctx, e, v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderJSON measures turning a 2xx JSON response into the tool
// result (validate + compact, structuredContent + text).
func BenchmarkRenderJSON(b *testing.B) {
	p, eps, srv := demoGateway(b, demo.Options{}, nil)
	e := eps["getPet"]
	resp, err := http.Get(srv.URL + "/pets/1")
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_ = p
	b.ReportAllocs()
	for b.Loop() {
		res, _ := e.render(resp, body, false)
		if res.IsError {
			b.Fatal(text(res))
		}
	}
}

// cannedTransport answers every request with the same JSON, without a
// network: what BenchmarkDispatchCanned allocates is the proxy's own work
// (arguments, request, response read, result) and net/http's request and
// response values, nothing of a server.
type cannedTransport struct {
	body   []byte
	header http.Header
}

func (c *cannedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: c.header, Body: io.NopCloser(bytes.NewReader(c.body)), ContentLength: int64(len(c.body)), Request: req}, nil
}

// BenchmarkDispatchCanned is getPet against a canned upstream answer.
func BenchmarkDispatchCanned(b *testing.B) {
	canned := &cannedTransport{
		body:   []byte(`{"id":1,"name":"Rex","species":"dog","status":"available","tags":["friendly"],"categoryId":2,"details":{"kind":"dog","breed":"mixed","goodBoy":true},"hasPhoto":true,"version":3,"createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z"}`),
		header: http.Header{"Content-Type": {"application/json"}, "Content-Length": {"236"}},
	}
	p, eps, _ := demoGateway(b, demo.Options{}, func(c *Config) { c.Transport = canned })
	e := eps["getPet"]
	ctx := mcp.WithPrincipal(context.Background(), mcp.Principal{Subject: "demo-user", Credential: mcp.NewSecret("demo-token")})
	args := json.RawMessage(`{"petId":1}`)
	b.ReportAllocs()
	for b.Loop() {
		r, err := p.Dispatch(ctx, e, args)
		if err != nil || r.IsError {
			b.Fatal(err, r)
		}
	}
}
