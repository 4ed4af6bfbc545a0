package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// countingServer is an httptest server that counts the connections it
// accepted.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func get(t *testing.T, tr *Transport, ctx context.Context, method, url string, body io.Reader) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), err
}

func TestReuseAndBodies(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/chunked":
			w.Write([]byte("part one, "))
			w.(http.Flusher).Flush()
			w.Write([]byte("part two"))
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			fmt.Fprintf(w, "%s %s %q te=%v len=%d", r.Method, r.URL.RequestURI(), b, r.TransferEncoding, r.ContentLength)
		}
	})
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	ctx := context.Background()
	cases := []struct {
		method, path string
		body         io.Reader
		want         string
	}{
		{"GET", "/pets/1?x=a%20b", nil, `GET /pets/1?x=a%20b "" te=[] len=0`},
		{"POST", "/pets", strings.NewReader(`{"name":"Rex"}`), `POST /pets "{\"name\":\"Rex\"}" te=[] len=14`},
		{"POST", "/stream", io.MultiReader(strings.NewReader("a"), strings.NewReader("b")), `POST /stream "ab" te=[chunked] len=-1`},
		{"GET", "/chunked", nil, "part one, part two"},
		{"HEAD", "/pets/1", nil, ""},
		{"DELETE", "/empty", nil, ""},
		{"GET", "/pets/2", nil, `GET /pets/2 "" te=[] len=0`},
	}
	for _, c := range cases {
		resp, got, err := get(t, tr, ctx, c.method, srv.URL+c.path, c.body)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		if got != c.want {
			t.Errorf("%s %s: got %q, want %q", c.method, c.path, got, c.want)
		}
		if resp.Request == nil || resp.Request.URL.Path != strings.SplitN(c.path, "?", 2)[0] {
			t.Errorf("%s %s: response without its request", c.method, c.path)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for %d sequential exchanges, want 1", n, len(cases))
	}

	// A body read to its end keeps answering io.EOF, as net/http's does.
	req, _ := http.NewRequest("GET", srv.URL+"/pets/3", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, resp.ContentLength)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if n, err := resp.Body.Read(make([]byte, 8)); n != 0 || err != io.EOF {
			t.Errorf("read past the end: %d, %v; want 0, EOF", n, err)
		}
	}
	resp.Body.Close()
}

// TestEmptyBodies: a response without a body frees its connection at
// once, even when its (empty) body is closed unread.
func TestEmptyBodies(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		case "/304":
			w.WriteHeader(http.StatusNotModified)
		case "/zero":
			w.Header().Set("Content-Length", "0")
		default:
			io.WriteString(w, "body")
		}
	})
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	for _, c := range []struct{ method, path string }{{"GET", "/204"}, {"GET", "/304"}, {"GET", "/zero"}, {"HEAD", "/"}, {"DELETE", "/204"}} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		resp.Body.Close()
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

func TestConcurrent(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Query().Get("i"))
	})
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	var wg sync.WaitGroup
	const workers, each = 8, 50
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				want := fmt.Sprint(w*1000 + i)
				_, got, err := get(t, tr, context.Background(), "GET", srv.URL+"/?i="+want, nil)
				if err != nil || got != want {
					errs <- fmt.Errorf("got %q, %v; want %q", got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := conns.Load(); n > workers {
		t.Errorf("%d connections for %d workers", n, workers)
	}
}

func TestConnectionClose(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		io.WriteString(w, "ok")
	})
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	for _, path := range []string{"/close", "/", "/"} {
		if _, got, err := get(t, tr, context.Background(), "GET", srv.URL+path, nil); err != nil || got != "ok" {
			t.Fatalf("%s: %q, %v", path, got, err)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (the first asked to close)", n)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/", nil)
	req.Close = true
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	get(t, tr, context.Background(), "GET", srv.URL+"/", nil)
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections, want 3 (a request asked to close)", n)
	}
}

// rawServer accepts connections and runs serve on each.
func rawServer(t testing.TB, serve func(n int, c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(n, c)
		}
	}()
	return "http://" + ln.Addr().String()
}

// readRequest reads one request and its body from br.
func readRequest(br *bufio.Reader) (*http.Request, error) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(io.Discard, req.Body)
	return req, err
}

const okResponse = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// TestServerClosedIdle: a server that closes a keep-alive connection
// while it is idle (as Node's 5 s keepAliveTimeout does) costs nothing,
// even to a request that could not be retried.
func TestServerClosedIdle(t *testing.T) {
	var served atomic.Int32
	url := rawServer(t, func(_ int, c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		if _, err := readRequest(br); err != nil {
			return
		}
		served.Add(1)
		io.WriteString(c, okResponse)
		// then close while idle
	})
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	for i := range 3 {
		_, got, err := get(t, tr, context.Background(), "POST", url+"/pets", strings.NewReader("{}"))
		if err != nil || got != "ok" {
			t.Fatalf("POST %d: %q, %v", i, got, err)
		}
		time.Sleep(20 * time.Millisecond) // the server's close arrives
	}
	if n := served.Load(); n != 3 {
		t.Errorf("server served %d requests, want 3", n)
	}
}

// TestRetry: a request that fails on a reused connection before any byte
// of a response is sent again when replayable, and only then.
func TestRetry(t *testing.T) {
	var requests atomic.Int32
	// Every connection answers one request, then reads the next and hangs
	// up without answering: the close comes after the request was written.
	url := rawServer(t, func(_ int, c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		if _, err := readRequest(br); err != nil {
			return
		}
		requests.Add(1)
		io.WriteString(c, okResponse)
		if _, err := readRequest(br); err == nil {
			requests.Add(1)
		}
	})
	cases := []struct {
		method string
		body   func() io.Reader
		header string
		retry  bool
	}{
		{"GET", nil, "", true},
		{"HEAD", nil, "", true},
		{"PUT", func() io.Reader { return strings.NewReader("x") }, "Idempotency-Key", true},
		{"POST", func() io.Reader { return strings.NewReader("x") }, "", false},
		{"DELETE", nil, "", false},
	}
	for _, c := range cases {
		t.Run(c.method, func(t *testing.T) {
			tr := &Transport{}
			defer tr.CloseIdleConnections()
			if _, _, err := get(t, tr, context.Background(), "GET", url+"/", nil); err != nil {
				t.Fatal(err)
			}
			requests.Store(0)
			var body io.Reader
			if c.body != nil {
				body = c.body()
			}
			req, _ := http.NewRequest(c.method, url+"/", body)
			if c.header != "" {
				req.Header.Set(c.header, "k1")
			}
			resp, err := tr.RoundTrip(req)
			if c.retry {
				if err != nil {
					t.Fatalf("not retried: %v", err)
				}
				resp.Body.Close()
				if n := requests.Load(); n != 2 {
					t.Errorf("server saw %d requests, want 2 (the lost one and the retry)", n)
				}
				return
			}
			if err == nil {
				resp.Body.Close()
				t.Fatal("a non-replayable request was sent again")
			}
			if n := requests.Load(); n != 1 {
				t.Errorf("server saw %d requests, want 1", n)
			}
		})
	}
}

func TestContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow-body" {
			w.Write([]byte("first"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	tr := &Transport{}
	defer tr.CloseIdleConnections()

	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		_, _, err := get(t, tr, ctx, "GET", srv.URL+"/hang", nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("returned after %v", d)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, _, err := get(t, tr, ctx, "GET", srv.URL+"/hang", nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("cancel during the body", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/slow-body", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		buf := make([]byte, 5)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err = io.ReadAll(resp.Body)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
	})
}

// TestEarlyClose: a body closed before its end closes its connection at
// once instead of reading the rest.
func TestEarlyClose(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/endless" {
			chunk := []byte(strings.Repeat("x", 32<<10))
			for {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
		io.WriteString(w, "ok")
	})
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", srv.URL+"/endless", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(resp.Body, make([]byte, 100))
	done := make(chan struct{})
	go func() { resp.Body.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Close drained an endless body")
	}
	if _, err := resp.Body.Read(make([]byte, 1)); err == nil {
		t.Error("read after Close succeeded")
	}
	if _, got, err := get(t, tr, context.Background(), "GET", srv.URL+"/", nil); err != nil || got != "ok" {
		t.Fatalf("%q, %v", got, err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

func TestInformational(t *testing.T) {
	url := rawServer(t, func(_ int, c net.Conn) {
		defer c.Close()
		if _, err := readRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>\r\n\r\n"+okResponse)
	})
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	resp, got, err := get(t, tr, context.Background(), "GET", url+"/", nil)
	if err != nil || got != "ok" || resp.StatusCode != 200 {
		t.Fatalf("%v %q, %v", resp, got, err)
	}
}

func TestIdleTimeout(t *testing.T) {
	closed := make(chan struct{}, 1)
	url := rawServer(t, func(_ int, c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		if _, err := readRequest(br); err != nil {
			return
		}
		io.WriteString(c, okResponse)
		if _, err := br.ReadByte(); err == io.EOF {
			closed <- struct{}{}
		}
	})
	tr := &Transport{IdleTimeout: 50 * time.Millisecond}
	defer tr.CloseIdleConnections()
	if _, _, err := get(t, tr, context.Background(), "GET", url+"/", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("an idle connection outlived IdleTimeout")
	}
}

func TestMaxIdlePerHost(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	tr := &Transport{MaxIdlePerHost: 2}
	defer tr.CloseIdleConnections()
	var resps []*http.Response
	for range 4 { // four at once: four connections
		req, _ := http.NewRequest("GET", srv.URL+"/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resps = append(resps, resp)
	}
	for _, r := range resps {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	tr.mu.Lock()
	idle := 0
	for _, l := range tr.idle {
		idle += len(l)
	}
	tr.mu.Unlock()
	if idle != 2 || conns.Load() != 4 {
		t.Errorf("%d idle of %d connections, want 2 of 4", idle, conns.Load())
	}
}

func TestNotHTTP(t *testing.T) {
	tr := &Transport{}
	for _, u := range []string{"https://example.com/", "ftp://example.com/"} {
		req, _ := http.NewRequest("GET", u, nil)
		if _, err := tr.RoundTrip(req); !errors.Is(err, errNotHTTP) {
			t.Errorf("%s: %v", u, err)
		}
	}
}

// TestHostPort: the address to dial follows the URL's host, whatever the
// host seen before it (the transport keeps the last one).
func TestHostPort(t *testing.T) {
	tr := &Transport{}
	cases := []struct{ host, want string }{
		{"example.com", "example.com:80"},
		{"example.com:8080", "example.com:8080"},
		{"example.com", "example.com:80"},
		{"[::1]", "[::1]:80"},
		{"[::1]:9000", "[::1]:9000"},
		{"10.0.0.1:80", "10.0.0.1:80"},
		{"10.0.0.1:80", "10.0.0.1:80"},
	}
	for _, c := range cases {
		if got := tr.hostPort(&url.URL{Scheme: "http", Host: c.host}); got != c.want {
			t.Errorf("hostPort(%q) = %q, want %q", c.host, got, c.want)
		}
	}
}

// earlyConn is a connection whose upstream answered and stopped reading:
// writes fail after limit bytes, reads give answer (then time out).
type earlyConn struct {
	answer  *strings.Reader
	limit   int
	written int
}

func (c *earlyConn) Read(p []byte) (int, error) {
	if c.answer.Len() == 0 {
		return 0, os.ErrDeadlineExceeded
	}
	return c.answer.Read(p)
}

func (c *earlyConn) Write(p []byte) (int, error) {
	if c.written+len(p) > c.limit {
		n := c.limit - c.written
		c.written = c.limit
		return n, &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}
	}
	c.written += len(p)
	return len(p), nil
}

func (*earlyConn) Close() error                     { return nil }
func (*earlyConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (*earlyConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (*earlyConn) SetDeadline(time.Time) error      { return nil }
func (*earlyConn) SetReadDeadline(time.Time) error  { return nil }
func (*earlyConn) SetWriteDeadline(time.Time) error { return nil }

// TestEarlyAnswer: an upstream that answers an upload before reading it
// (and stops reading) gives its answer, not a broken pipe; without an
// answer the write's error stands. Neither connection is reused.
func TestEarlyAnswer(t *testing.T) {
	for _, c := range []struct {
		name, answer string
		status       int
	}{
		{"answered", "HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 8\r\n\r\ntoo big!", 413},
		{"silent", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dials := 0
			tr := &Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
				dials++
				return &earlyConn{answer: strings.NewReader(c.answer), limit: 1000}, nil
			}}
			for range 2 {
				req, _ := http.NewRequest("POST", "http://upstream.test/upload", strings.NewReader(strings.Repeat("x", 64<<10)))
				resp, err := tr.RoundTrip(req)
				if c.status == 0 {
					// net/http reports a write failing inside the body's WriteTo
					// as a body read error, without Unwrap: its text names it.
					if err == nil || !strings.Contains(err.Error(), syscall.EPIPE.Error()) {
						t.Fatalf("err %v (%T), want the write's EPIPE", err, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("err %v, want the upstream's %d", err, c.status)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != c.status || string(b) != "too big!" {
					t.Fatalf("%d %q", resp.StatusCode, b)
				}
			}
			if dials != 2 {
				t.Errorf("%d dials for 2 requests, want 2 (never reused)", dials)
			}
		})
	}
}
