package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcpgate/mcpgate/demo"
	"github.com/mcpgate/mcpgate/mcp"
)

func TestHideUpstreamURLs(t *testing.T) {
	for _, c := range []struct{ base, in, want string }{
		{"http://10.0.0.7:8080", `{"self":"http://10.0.0.7:8080/pets/1","n":1}`, `{"self":"/pets/1","n":1}`},
		{"http://10.0.0.7:8080", `see http://10.0.0.7:8080 and http://10.0.0.7:8080?x=1#f`, `see / and /?x=1#f`},
		{"http://10.0.0.7:8080", `http://10.0.0.7:80801/x http://10.0.0.7:8080.evil/x`, `http://10.0.0.7:80801/x http://10.0.0.7:8080.evil/x`}, // other origins
		{"http://10.0.0.7:8080", `http://10.0.0.7/x https://10.0.0.7:8080/x`, `http://10.0.0.7/x https://10.0.0.7:8080/x`},
		{"http://10.0.0.7:8080/api/v1", `"http://10.0.0.7:8080/api/v1/reports/7?a=b"`, `"/reports/7?a=b"`},
		{"http://10.0.0.7:8080/api/v1", `"http://10.0.0.7:8080/api/v10/x" "http://10.0.0.7:8080/other"`, `"/api/v10/x" "/other"`},
		{"http://10.0.0.7:8080/api/v1/", `http://10.0.0.7:8080/api/v1`, `/`},
		{"https://API.Example.com", `https://API.Example.com/a https://api.example.com/b https://api.example.com:443/c https://api.example.com:4430/d`, `/a /b /c https://api.example.com:4430/d`},
		{"http://[::1]:9000", `resource_metadata="http://[::1]:9000/.well-known/oauth-protected-resource"`, `resource_metadata="/.well-known/oauth-protected-resource"`},
		{"http://10.0.0.7:8080", `nothing here`, `nothing here`},
	} {
		p := newProxy(t, c.base, nil)
		if got := p.hide.hideString(c.in); got != c.want {
			t.Errorf("%s: hide(%s) = %s, want %s", c.base, c.in, got, c.want)
		}
		if got := string(p.hide.hideBytes([]byte(c.in))); got != c.want {
			t.Errorf("%s: hideBytes(%s) = %s, want %s", c.base, c.in, got, c.want)
		}
	}
	p := newProxy(t, "http://10.0.0.7:8080", nil)
	in := `{"id":1,"name":"Rex"}`
	if n := testing.AllocsPerRun(100, func() { p.hide.hideString(in); p.hide.hideBytes([]byte(in)) }); n != 0 {
		t.Errorf("%v allocations without an upstream URL", n)
	}
}

// TestNoUpstreamAddressInResults runs every demo tool, with valid and
// random arguments, against the demo API and against upstreams that fail
// in every way the proxy reports (refused and reset connections, timeouts,
// cross- and same-origin redirects, 202s, 401 challenges, bodies full of
// their own URLs, oversized answers, TLS spoken to plain HTTP), and scans
// each result, as the client would receive it, for the upstream's
// host:port.
func TestNoUpstreamAddressInResults(t *testing.T) {
	tools := demoTools(t)
	valid := map[string]string{
		"listPets": `{"limit":2}`, "createPet": `{"name":"Rex","species":"dog"}`, "getPet": `{"petId":1}`,
		"replacePet": `{"petId":2,"name":"Max","species":"dog"}`, "updatePet": `{"petId":2,"name":"Maxi"}`, "deletePet": `{"petId":3}`,
		"getPetPhoto": `{"petId":1}`, "uploadPetPhoto": benchUploadArgs, "putPetPhoto": `{"petId":1,"body":"aGk="}`,
		"listCategories": `{}`, "createOrder": `{"petId":1}`, "getOrder": `{"orderId":1}`, "cancelOrder": `{"orderId":1}`,
		"getCurrentUser": `{"theme":"dark"}`, "createReport": `{"kind":"orders"}`, "getReport": `{"reportId":1}`, "redirectMe": `{}`,
	}
	rng := rand.New(rand.NewPCG(5, 6))
	argsFor := func(t *testing.T, name string, random int) []string {
		out := []string{valid[name], `{}`, `{"petId":"x","orderId":-1}`, `[1]`}
		for _, tool := range tools {
			if tool.Name != name {
				continue
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tool.InputSchema))
			if err != nil {
				t.Fatal(err)
			}
			g := &valueGen{next: func(k int) int { return rng.IntN(k) }}
			for range random {
				raw, _ := json.Marshal(g.value(doc, 0))
				out = append(out, string(raw))
			}
		}
		return out
	}
	caller := mcp.WithPrincipal(context.Background(), mcp.Principal{Subject: "demo-user", Credential: mcp.NewSecret("demo-token")})
	scanned := 0
	scan := func(t *testing.T, hostport string, p *Proxy, eps map[string]*Endpoint, random int) {
		t.Helper()
		needles := []string{hostport, strings.Replace(hostport, "127.0.0.1", "localhost", 1)}
		for _, tool := range tools {
			e := eps[tool.Name]
			for _, args := range argsFor(t, tool.Name, random) {
				for _, ctx := range []context.Context{caller, context.Background()} {
					out, err := p.Do(ctx, e, json.RawMessage(args))
					if err != nil {
						t.Fatal(err)
					}
					results := []*mcp.CallToolResult{out.Result}
					if out.Accepted != nil {
						polled, err := p.Poll(ctx, e, out.Accepted)
						if err != nil {
							t.Fatal(err)
						}
						results = append(results, polled.Result)
					}
					for _, r := range results {
						wire, err := json.Marshal(r)
						if err != nil {
							t.Fatal(err)
						}
						scanned++
						for _, n := range needles {
							if bytes.Contains(wire, []byte(n)) {
								t.Fatalf("%s %s: the result names the upstream (%s): %s", tool.Name, args, n, wire)
							}
						}
					}
				}
			}
		}
	}

	t.Run("demo", func(t *testing.T) {
		srv := httptest.NewServer(demo.New(demo.Options{RequireAuth: true}))
		t.Cleanup(srv.Close)
		for _, mod := range []func(*Config){nil,
			func(c *Config) { c.MaxResponseBytes = 64 },
			func(c *Config) { c.MaxRedirects = -1 },
			func(c *Config) { c.CheckOutput = true },
		} {
			p := newProxy(t, srv.URL, mod)
			eps, err := p.Endpoints(tools)
			if err != nil {
				t.Fatal(err)
			}
			scan(t, strings.TrimPrefix(srv.URL, "http://"), p, eps, 40)
		}
	})

	var mode atomic.Value // the hostile upstream's behaviour
	var self string       // its URL
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch mode.Load().(string) {
		case "links":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"self":"` + self + r.URL.Path + `","next":"` + self + `/pets?cursor=2","escaped":"` + strings.ReplaceAll(self, "/", `\/`) + `/x"}`))
		case "text":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(`<a href="` + self + `/login">sign in at ` + self + `</a>`))
		case "problem":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"type":"` + self + `/errors/boom","instance":"` + self + r.URL.Path + `"}`))
		case "challenge":
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+self+`/.well-known/oauth-protected-resource"`)
			w.WriteHeader(http.StatusUnauthorized)
		case "accepted":
			w.Header().Set("Location", self+"/reports/9")
			w.WriteHeader(http.StatusAccepted)
		case "accepted-elsewhere":
			w.Header().Set("Operation-Location", "http://10.9.9.9:1234/ops/1")
			w.WriteHeader(http.StatusAccepted)
		case "redirect-same":
			http.Redirect(w, r, self+"/loop", http.StatusFound)
		case "redirect-other":
			http.Redirect(w, r, "http://10.9.9.9:1234/steal", http.StatusTemporaryRedirect)
		case "binary":
			w.Header().Set("Content-Type", "application/pdf")
			_, _ = w.Write([]byte("%PDF-1.4 " + self))
		case "hang":
			select {
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
		case "reset":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0)
				}
				conn.Close()
			}
		case "cut":
			w.Header().Set("Content-Length", "1000")
			_, _ = w.Write([]byte(`{"partial":"` + self))
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}
	}))
	t.Cleanup(hostile.Close)
	self = hostile.URL
	hostport := strings.TrimPrefix(hostile.URL, "http://")
	for _, m := range []string{"links", "text", "problem", "challenge", "accepted", "accepted-elsewhere", "redirect-same", "redirect-other", "binary", "hang", "reset", "cut"} {
		t.Run(m, func(t *testing.T) {
			mode.Store(m)
			p := newProxy(t, hostile.URL, func(c *Config) { c.Timeout = 10 * time.Millisecond; c.MaxRedirects = 2 })
			eps, err := p.Endpoints(tools)
			if err != nil {
				t.Fatal(err)
			}
			scan(t, hostport, p, eps, 0)
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		untrusted := httptest.NewTLSServer(http.NotFoundHandler())
		t.Cleanup(untrusted.Close)
		noDNS := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: "internal-api.corp", IsNotFound: true}}
		}}
		for base, rt := range map[string]http.RoundTripper{
			"http://" + addr:                nil, // refused
			"https://" + hostport:           nil, // TLS to plain HTTP
			untrusted.URL:                   nil, // a certificate no one trusts
			"http://internal-api.corp:8080": noDNS,
		} {
			p := newProxy(t, base, func(c *Config) { c.Transport = rt })
			eps, err := p.Endpoints(tools)
			if err != nil {
				t.Fatal(err)
			}
			scan(t, strings.SplitN(base, "://", 2)[1], p, eps, 0)
		}
	})
	if scanned < 2000 {
		t.Errorf("only %d results scanned", scanned)
	}
}
