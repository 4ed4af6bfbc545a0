package mcp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// rawListen opens a listen stream over a raw TCP connection and returns
// it with a reader positioned after the acknowledgement, and the response
// head.
func rawListen(t *testing.T, addr string) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
		"Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(listenBody)) + listenBody
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	var head strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the answer: %v (so far %q)", err, head.String())
		}
		head.WriteString(line)
		if strings.Contains(line, "notifications/subscriptions/acknowledged") {
			return c, r, head.String()
		}
	}
}

func TestParkedStream(t *testing.T) {
	rec := &recorder{}
	s := NewServer(Implementation{Name: "parked", Version: "1"}, &ServerOptions{KeepAlive: 30 * time.Millisecond, Observer: rec})
	addText := func(name string) {
		must(t, s.AddTool(&Tool{Name: name}, func(context.Context, *CallToolRequest) (*CallToolResult, error) { return TextResult(name), nil }))
	}
	addText("a")
	h := NewHTTPHandler(s, nil)
	counter := h.(*httpHandler).streams
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Middleware", "kept")
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")

	conn, r, head := rawListen(t, addr)
	for _, want := range []string{"HTTP/1.1 200 OK\r\n", "Content-Type: text/event-stream\r\n", "X-Middleware: kept\r\n", "Connection: close\r\n"} {
		if !strings.Contains(head, want) {
			t.Errorf("response head lacks %q:\n%s", want, head)
		}
	}
	if strings.Contains(head, "Transfer-Encoding") || strings.Contains(head, "Content-Length") {
		t.Errorf("a parked stream is delimited by the connection's close:\n%s", head)
	}
	next := func() string {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if line = strings.TrimSpace(line); line != "" {
				return line
			}
		}
	}
	// Keep-alives while idle, a change when one happens.
	if l := next(); l != ": keep-alive" {
		t.Errorf("idle stream wrote %q, want a keep-alive", l)
	}
	addText("b")
	for {
		l := next()
		if l == ": keep-alive" {
			continue
		}
		if l != `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}` {
			t.Errorf("got %q, want tools/list_changed", l)
		}
		break
	}

	// The client leaving ends the stream at once: its slot is free and its
	// observation ends.
	conn.Close()
	waitFor(t, func() bool {
		counter.mu.Lock()
		defer counter.mu.Unlock()
		return counter.total == 0
	}, "the stream's slot was not released when the client left")
	if seen := rec.waitFor(t, 1); seen[0].info.Method != "subscriptions/listen" {
		t.Errorf("observed %+v", seen)
	}

	// Closing the server ends a parked stream with the listen result.
	_, r2, _ := rawListen(t, addr)
	s.Close()
	var last string
	for {
		line, err := r2.ReadString('\n')
		if err != nil {
			break // the server closed the connection after the result
		}
		if strings.HasPrefix(line, "data: ") {
			last = line
		}
	}
	if !strings.Contains(last, `"id":"L","result":{"resultType":"complete"`) {
		t.Errorf("last event %q, want the listen result", last)
	}
}

// TestListenHTTP2 serves a listen stream over HTTP/2, where a connection
// cannot be hijacked: it stays on its request's goroutine and works alike.
func TestListenHTTP2(t *testing.T) {
	s := NewServer(Implementation{Name: "h2", Version: "1"}, nil)
	must(t, s.AddTool(&Tool{Name: "a"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) { return TextResult("a"), nil }))
	ts := httptest.NewUnstartedServer(NewHTTPHandler(s, &HTTPOptions{AllowedHosts: []string{"*"}}))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, strings.NewReader(listenBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderProtocolVersion, ProtocolVersion)
	req.Header.Set(HeaderMethod, "subscriptions/listen")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("not HTTP/2: %s", resp.Proto)
	}
	rd := bufio.NewReader(resp.Body)
	readData := func() string {
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if strings.HasPrefix(line, "data: ") {
				return line
			}
		}
	}
	if l := readData(); !strings.Contains(l, "acknowledged") {
		t.Fatalf("first event %q", l)
	}
	must(t, s.AddTool(&Tool{Name: "b"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) { return TextResult("b"), nil }))
	if l := readData(); !strings.Contains(l, "notifications/tools/list_changed") {
		t.Errorf("event %q", l)
	}
}

// TestResponseHeadKeepsLineBreaksOut: a header value with a line break
// (from middleware) cannot split a parked stream's response.
func TestResponseHeadKeepsLineBreaksOut(t *testing.T) {
	h := http.Header{}
	h.Set("X-Note", "a\r\nSet-Cookie: evil=1")
	h.Set("Content-Type", "text/plain")
	head := string(responseHead(h))
	if strings.Contains(head, "\r\nSet-Cookie") || strings.Contains(head, "text/plain") {
		t.Errorf("head:\n%s", head)
	}
	if !strings.HasPrefix(head, "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(head, "\r\n\r\n") || !strings.Contains(head, "X-Note: a  Set-Cookie: evil=1\r\n") {
		t.Errorf("head:\n%q", head)
	}
}
