package mcp

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// idleStreamCost opens n subscriptions/listen streams over real HTTP
// (loopback TCP) and returns the heap and goroutine stack they hold, per
// stream, once each is acknowledged and idle. The clients are raw TCP
// connections that read nothing after the acknowledgement and hold no
// goroutine, so what is measured is the server's share (plus a socket
// per stream on the client side).
func idleStreamCost(t *testing.T, n int) (heap, stack float64) {
	s := NewServer(Implementation{Name: "idle", Version: "1"}, &ServerOptions{KeepAlive: time.Hour})
	must(t, s.AddTool(&Tool{Name: "t"}, noopTool))
	ts := httptest.NewServer(NewHTTPHandler(s, &HTTPOptions{ListenStreams: Limits{PerAddress: -1, PerCaller: -1, Total: -1}}))
	defer ts.Close()
	defer s.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	req := "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
		"Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(listenBody)) + listenBody

	measure := func() (uint64, uint64) {
		for range 3 {
			runtime.GC()
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc, m.StackInuse
	}
	if os.Getenv("MCPGATE_IDLE_HEAPPROFILE") != "" {
		runtime.MemProfileRate = 1
	}
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// Warm up one stream so that one-time allocations are not counted.
	open := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReaderSize(c, 512)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the acknowledgement: %v", err)
			}
			if strings.Contains(line, "notifications/subscriptions/acknowledged") {
				return c
			}
		}
	}
	conns = append(conns, open())
	h0, s0 := measure()
	for range n {
		conns = append(conns, open())
	}
	time.Sleep(50 * time.Millisecond) // let every handler settle into its wait
	h1, s1 := measure()
	if f := os.Getenv("MCPGATE_IDLE_HEAPPROFILE"); f != "" {
		out, _ := os.Create(f)
		_ = pprof.Lookup("heap").WriteTo(out, 0)
		out.Close()
	}
	return (float64(h1) - float64(h0)) / float64(n), (float64(s1) - float64(s0)) / float64(n)
}

func noopTool(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
	return TextResult(""), nil
}

// TestIdleStreamMemory measures what an idle listen stream holds over real
// HTTP, with 1,000 streams (issue 21: about 34 KB each before; the target
// is at most 8 KB). Set MCPGATE_IDLE_STREAMS=N to measure another count,
// MCPGATE_IDLE_HEAPPROFILE=FILE to write a heap profile of the streams.
func TestIdleStreamMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 1,000 connections")
	}
	n := 1000
	if v := os.Getenv("MCPGATE_IDLE_STREAMS"); v != "" {
		fmt.Sscan(v, &n)
	}
	heap, stack := idleStreamCost(t, n)
	t.Logf("%d idle listen streams: %.0f B heap + %.0f B goroutine stack = %.1f KB per stream", n, heap, stack, (heap+stack)/1024)
	if per := heap + stack; per > 8<<10 {
		t.Errorf("an idle listen stream holds %.1f KB, want at most 8 KB", per/1024)
	}
}
