package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// hostTransport sends every request with the given Host and Origin headers.
type hostTransport struct {
	host, origin string
	next         http.RoundTripper
}

func (h hostTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if h.host != "" {
		r.Host = h.host
	}
	if h.origin != "" {
		r.Header.Set("Origin", h.origin)
	}
	return h.next.RoundTrip(r)
}

// TestDNSRebindingGuard checks the MCP endpoint's Host and Origin guard on
// the real binary: loopback only by default, --allowed-hosts and
// --allowed-origins widen it.
func TestDNSRebindingGuard(t *testing.T) {
	discover := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`
	post := func(t *testing.T, url, host, origin string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(discover))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	t.Run("Default", func(t *testing.T) {
		g := startDemo(t)
		for _, tc := range []struct{ host, origin string }{
			{"evil.example", ""},
			{"evil.example:80", ""},
			{"", "http://evil.example"},
			{"", "null"},
		} {
			code, body := post(t, g.URL, tc.host, tc.origin)
			if code != http.StatusForbidden || !strings.Contains(body, "not allowed") {
				t.Errorf("Host %q Origin %q: %d %s, want 403", tc.host, tc.origin, code, body)
			}
		}
		// A refused Host is logged once, naming the setting that fixes it.
		post(t, g.URL, "evil.example", "")
		if n := strings.Count(g.Log.String(), "host=evil.example\n"); n != 1 || !strings.Contains(g.Log.String(), "--allowed-hosts") {
			t.Errorf("the refused Host was logged %d times:\n%s", n, g.Log.String())
		}
		// The loopback names on any port pass, and a loopback browser page too.
		port := g.Base[strings.LastIndex(g.Base, ":")+1:]
		for _, tc := range []struct{ host, origin string }{
			{"localhost:" + port, ""},
			{"", "http://localhost:3000"},
			{"[::1]:" + port, "http://127.0.0.1:8080"},
		} {
			cs := connectHTTP(t, g.URL, connectOptions{Wrap: func(rt http.RoundTripper) http.RoundTripper {
				return hostTransport{host: tc.host, origin: tc.origin, next: rt}
			}})
			wantOK(t, "listCategories", call(t, cs, "listCategories", nil))
		}
	})

	t.Run("Allowed", func(t *testing.T) {
		g := startDemo(t, "--allowed-hosts", "mcp.example", "--allowed-origins", "https://app.example")
		// The go-sdk client behind a proxy that presents the public name.
		cs := connectHTTP(t, g.URL, connectOptions{Bearer: "demo-token", Wrap: func(rt http.RoundTripper) http.RoundTripper {
			return hostTransport{host: "mcp.example", origin: "https://app.example", next: rt}
		}})
		wantOK(t, "getPet via mcp.example", call(t, cs, "getPet", map[string]any{"petId": 1}))
		for _, tc := range []struct{ host, origin string }{
			{"other.example", ""},
			{"mcp.example", "https://evil.example"},
			{"mcp.example", "http://app.example"}, // scheme must match
		} {
			if code, body := post(t, g.URL, tc.host, tc.origin); code != http.StatusForbidden {
				t.Errorf("Host %q Origin %q: %d %s, want 403", tc.host, tc.origin, code, body)
			}
		}
	})
}
