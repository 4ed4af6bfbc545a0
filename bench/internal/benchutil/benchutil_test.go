package benchutil

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestLoopbackOnly(t *testing.T) {
	for _, a := range []string{"0.0.0.0:0", "192.168.1.1:0", ":0", "example.com:80"} {
		if ln, err := Listen(a); err == nil {
			ln.Close()
			t.Errorf("Listen(%q) accepted a non-loopback address", a)
		}
	}
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen(127.0.0.1:0): %v", err)
	}
	ln.Close()
	for _, u := range []string{"http://example.com", "ftp://127.0.0.1", "http://10.1.2.3:80"} {
		if _, err := CheckUpstream(u); err == nil {
			t.Errorf("CheckUpstream(%q) accepted", u)
		}
	}
	for _, u := range []string{"http://127.0.0.1:1", "http://localhost:2", "http://[::1]:3"} {
		if _, err := CheckUpstream(u); err != nil {
			t.Errorf("CheckUpstream(%q): %v", u, err)
		}
	}
}

func TestPetGetterForwardsAuthorization(t *testing.T) {
	var gotPath, gotAuth string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth = r.URL.Path, r.Header.Get("Authorization")
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte(`{"x":1}`))
	}))
	defer up.Close()
	g, err := NewPetGetter(up.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	status, body, err := g.Get(context.Background(), 42, "Bearer abc")
	if err != nil || status != http.StatusTeapot || string(body) != `{"x":1}` || gotPath != "/pets/42" || gotAuth != "Bearer abc" {
		t.Errorf("Get = %d %q %v; upstream saw %q %q", status, body, err, gotPath, gotAuth)
	}
	if tr := g.Client.Transport.(*http.Transport); tr.MaxIdleConnsPerHost < 64 {
		t.Errorf("idle pool %d < 64 clients", tr.MaxIdleConnsPerHost)
	}
	if _, err := NewPetGetter("http://example.com"); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("NewPetGetter(remote): %v", err)
	}
}

func TestServeMetrics(t *testing.T) {
	if a, err := ServeMetrics(""); a != nil || err != nil {
		t.Errorf("ServeMetrics(\"\") = %v, %v; want nothing served", a, err)
	}
	if _, err := ServeMetrics("0.0.0.0:0"); err == nil {
		t.Error("a non-loopback metrics address was accepted")
	}
	a, err := ServeMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get("http://" + a.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	for _, name := range []string{"\ngo_memstats_mallocs_total ", "\ngo_memstats_alloc_bytes_total ", "\ngo_gc_duration_seconds_count "} {
		if !strings.Contains(string(body), name) {
			t.Errorf("metrics lack %q", name)
		}
	}
}
