package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestSpecWatcher: a file written in place or replaced by a rename, and a
// polled URL whose body changes, each signal once; a URL that answers 304
// or the same body does not.
func TestSpecWatcher(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "openapi.yaml")
	if err := os.WriteFile(file, []byte("v1"), 0o600); err != nil {
		t.Fatal(err)
	}
	var body atomic.Value
	body.Store("v1")
	var conditional atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := body.Load().(string)
		if r.Header.Get("If-None-Match") == `"`+b+`"` {
			conditional.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"`+b+`"`)
		w.Write([]byte(b))
	}))
	defer srv.Close()

	changes := make(chan string, 16)
	w := &specWatcher{logger: discardLogger(), client: srv.Client(), interval: 20 * time.Millisecond, debounce: 20 * time.Millisecond,
		changed: func(spec string) { changes <- spec }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.watch(ctx, []string{file, srv.URL, "demo"}) }()
	defer func() { cancel(); <-done }()

	expect := func(what, want string) {
		t.Helper()
		select {
		case got := <-changes:
			if got != want {
				t.Fatalf("%s: changed(%q), want %q", what, got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no change signalled", what)
		}
	}
	time.Sleep(100 * time.Millisecond) // the watch and the first poll are set up
	if err := os.WriteFile(file, []byte("v2"), 0o600); err != nil {
		t.Fatal(err)
	}
	expect("write", file)
	tmp := filepath.Join(dir, "new.yaml")
	os.WriteFile(tmp, []byte("v3"), 0o600)
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	expect("rename over", file)
	for conditional.Load() < 2 {
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case got := <-changes:
		t.Fatalf("an unchanged URL signalled %q", got)
	default:
	}
	body.Store("v2")
	expect("URL changed", srv.URL)
}
