package proxy

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
)

// TestRedirectRules pins every rule of redirect.go (TestRedirects in
// response_test.go covers credentials, the loop bound and never-follow).
func TestRedirectRules(t *testing.T) {
	const token = "secret-token-456"
	other := newRecorder(t, reply(200, "application/json", `{"other":true}`))
	otherURL := mustURL(t, other.srv.URL)
	var up *recorder
	up = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		self := up.srv.URL
		_, port, _ := strings.Cut(strings.TrimPrefix(self, "http://"), ":")
		switch r.URL.Path {
		case "/see-other":
			http.Redirect(w, r, "/echo", http.StatusSeeOther)
		case "/moved":
			http.Redirect(w, r, "/echo", http.StatusMovedPermanently)
		case "/permanent":
			http.Redirect(w, r, "/echo", http.StatusPermanentRedirect)
		case "/userinfo":
			http.Redirect(w, r, "http://mallory:pw@"+strings.TrimPrefix(self, "http://")+"/echo", http.StatusFound)
		case "/upper":
			http.Redirect(w, r, "HTTP://127.0.0.1:"+port+"/echo", http.StatusFound)
		case "/scheme-relative":
			http.Redirect(w, r, "//"+otherURL.Host+"/steal", http.StatusFound)
		case "/https":
			http.Redirect(w, r, "https://127.0.0.1:"+port+"/echo", http.StatusFound)
		case "/other-port":
			http.Redirect(w, r, "http://127.0.0.1:"+otherURL.Port()+"/steal", http.StatusFound)
		case "/bad-location":
			w.Header().Set("Location", "http://[::1")
			w.WriteHeader(http.StatusFound)
		case "/no-location":
			w.WriteHeader(http.StatusFound)
		case "/hop-then-away":
			http.Redirect(w, r, "/away", http.StatusFound)
		case "/away":
			http.Redirect(w, r, other.srv.URL+"/steal", http.StatusFound)
		case "/twice":
			http.Redirect(w, r, "/see-other", http.StatusFound)
		case "/echo":
			w.Header().Set("Content-Type", "application/json")
			body := make([]byte, r.ContentLength)
			_, _ = r.Body.Read(body)
			_, _ = w.Write([]byte(`{"ok":true}`))
		}
	})
	ctx := mcp.WithPrincipal(t.Context(), mcp.Principal{Subject: "u", Credential: mcp.NewSecret(token)})
	post := func(p *Proxy, path string) *Endpoint {
		tl := mkTool("t", "POST", path, map[string]any{"a": str}, nil, openapi.Argument{Name: "a", In: openapi.InBodyProperty, Param: "a"})
		return endpoint(t, p, tl)
	}
	p := newProxy(t, up.srv.URL, nil)
	lastEcho := func(t *testing.T) recorded {
		t.Helper()
		all := up.all()
		for i := len(all) - 1; i >= 0; i-- {
			if all[i].RawPath == "/echo" {
				return all[i]
			}
		}
		t.Fatal("/echo was not requested")
		return recorded{}
	}
	checkFollowed := func(t *testing.T, path, method, body string) recorded {
		t.Helper()
		up.reset()
		wantOK(t, callCtx(t, ctx, p, post(p, path), `{"a":"x"}`))
		got := lastEcho(t)
		if got.Method != method || string(got.Body) != body {
			t.Errorf("%s: the hop was %s with body %q, want %s %q", path, got.Method, got.Body, method, body)
		}
		if got.Header.Get("Authorization") != "Bearer "+token {
			t.Errorf("%s: the hop carries Authorization %q", path, got.Header.Get("Authorization"))
		}
		if got.Header.Get("Referer") != "" {
			t.Errorf("%s: a Referer was added: %q", path, got.Header.Get("Referer"))
		}
		return got
	}
	t.Run("303-post-becomes-get", func(t *testing.T) {
		got := checkFollowed(t, "/see-other", "GET", "")
		if ct := got.Header.Get("Content-Type"); ct != "" {
			t.Errorf("the body was dropped but Content-Type %q kept", ct)
		}
	})
	t.Run("301-post-becomes-get", func(t *testing.T) { checkFollowed(t, "/moved", "GET", "") })
	t.Run("308-repeats-method-and-body", func(t *testing.T) {
		got := checkFollowed(t, "/permanent", "POST", `{"a":"x"}`)
		if got.Header.Get("Content-Type") != "application/json" {
			t.Errorf("Content-Type %q", got.Header.Get("Content-Type"))
		}
	})
	t.Run("body-dropped-for-good", func(t *testing.T) { checkFollowed(t, "/twice", "GET", "") })
	t.Run("userinfo-dropped", func(t *testing.T) {
		got := checkFollowed(t, "/userinfo", "GET", "")
		if strings.Contains(got.RequestURI, "mallory") {
			t.Errorf("user info sent: %s", got.RequestURI)
		}
	})
	t.Run("host-case-is-same-origin", func(t *testing.T) { checkFollowed(t, "/upper", "GET", "") })

	for _, path := range []string{"/scheme-relative", "/https", "/other-port", "/hop-then-away"} {
		t.Run("not-followed"+path, func(t *testing.T) {
			other.reset()
			res := callCtx(t, ctx, p, post(p, path), `{"a":"x"}`)
			wantError(t, res, "another origin", "not followed")
			if n := len(other.all()); n != 0 {
				t.Errorf("the other origin received %d requests", n)
			}
			if strings.Contains(text(res), token) || strings.Contains(text(res), otherURL.Host) {
				t.Errorf("the result names a secret or the target: %s", text(res))
			}
		})
	}
	for path, want := range map[string]string{"/bad-location": "HTTP 302 Found: the redirect was not followed", "/no-location": "HTTP 302 Found: the redirect was not followed"} {
		t.Run("reported"+path, func(t *testing.T) {
			wantError(t, callCtx(t, ctx, p, post(p, path), `{"a":"x"}`), want)
		})
	}

	t.Run("max-redirects-1", func(t *testing.T) {
		p1 := newProxy(t, up.srv.URL, func(c *Config) { c.MaxRedirects = 1 })
		wantOK(t, callCtx(t, ctx, p1, post(p1, "/see-other"), `{"a":"x"}`))
		up.reset()
		wantError(t, callCtx(t, ctx, p1, post(p1, "/twice"), `{"a":"x"}`), "redirected too many times", "stopped after 1 redirects")
		if n := len(up.all()); n != 2 {
			t.Errorf("%d requests for one allowed redirect, want 2", n)
		}
	})

	// resolvers that misbehave from the second call on, the first hop
	onRedirect := func(f func(req *http.Request) error) func(*Config) {
		calls := 0
		return func(c *Config) {
			c.Auth = AuthFunc(func(ctx context.Context, req *http.Request, _ *openapi.Route) error {
				if calls++; calls > 1 {
					return f(req)
				}
				return nil
			})
		}
	}
	t.Run("resolver-fails-on-redirect", func(t *testing.T) {
		pf := newProxy(t, up.srv.URL, onRedirect(func(*http.Request) error { return errors.New("token expired") }))
		up.reset()
		wantError(t, call(t, pf, post(pf, "/see-other"), `{"a":"x"}`), "Authentication failed on a redirect: token expired")
		if n := len(up.all()); n != 1 {
			t.Errorf("%d requests, want 1 (the hop must not be sent)", n)
		}
	})
	t.Run("resolver-moves-redirect", func(t *testing.T) {
		pm := newProxy(t, up.srv.URL, onRedirect(func(req *http.Request) (err error) {
			req.URL, err = url.Parse(other.srv.URL + "/steal")
			return err
		}))
		other.reset()
		res, err := pm.Dispatch(t.Context(), post(pm, "/see-other"), []byte(`{"a":"x"}`))
		if err == nil && (res == nil || !res.IsError) {
			t.Fatalf("a resolver moving the redirect was accepted: %v", res)
		}
		if n := len(other.all()); n != 0 {
			t.Errorf("the other origin received %d requests", n)
		}
	})
}
