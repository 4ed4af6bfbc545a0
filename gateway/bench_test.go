package gateway

import (
	"bytes"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpgate/mcpgate/internal/cputime"
	"github.com/mcpgate/mcpgate/mrtr"
)

// BenchmarkToolCallHTTP is a full tools/call of getPet through the gateway:
// MCP client → gateway (HTTP) → demo upstream (HTTP) and back, all in this
// process (the allocations counted are the client's, the gateway's and the
// upstream's). unchecked and checked (--check-output) log every call at
// info; quiet is unchecked with the log at warn, as bench/run.sh runs it.
func BenchmarkToolCallHTTP(b *testing.B) {
	b.Run("unchecked", func(b *testing.B) { benchToolCall(b, newDemoB(b, false)) })
	b.Run("checked", func(b *testing.B) { benchToolCall(b, newDemoB(b, true)) })
	b.Run("quiet", func(b *testing.B) {
		quiet := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
		benchToolCall(b, newDemoLoggerB(b, false, quiet))
	})
}

// benchToolCall measures getPet's tools/call through g, over HTTP.
func benchToolCall(b *testing.B, g *Gateway) {
	ts := httptest.NewServer(g.Handler())
	defer ts.Close()
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getPet","arguments":{"petId":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	cpu := cputime.Process()
	b.ResetTimer()
	defer func() {
		if used := cputime.Process() - cpu; used > 0 {
			b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("MCP-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "getPet")
			req.Header.Set("Authorization", "Bearer demo-token")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
}

func newDemoB(b *testing.B, checkOutput bool) *Gateway {
	return newDemoLoggerB(b, checkOutput, discardLogger())
}

func newDemoLoggerB(b *testing.B, checkOutput bool, logger *slog.Logger) *Gateway {
	g, err := New(b.Context(), Config{Demo: true, Store: "memory", CheckOutput: checkOutput}, logger)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	return g
}

// BenchmarkCallerIDs is the per-call work on a bearer token: its subject
// (every request that carries one) and its log name (every logged call).
func BenchmarkCallerIDs(b *testing.B) {
	r, err := mrtr.ParseKeyRing("k1:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("a"), 32)))
	if err != nil {
		b.Fatal(err)
	}
	c, err := newCallerIDs(r)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c.logName(c.principal("demo-token").Subject)
	}
}
