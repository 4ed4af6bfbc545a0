package gateway

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkToolCallHTTP is a full tools/call of getPet through the gateway:
// MCP client → gateway (HTTP) → demo upstream (HTTP) and back.
func BenchmarkToolCallHTTP(b *testing.B) {
	b.Run("unchecked", func(b *testing.B) { benchToolCall(b, newDemoB(b, false)) })
	b.Run("checked", func(b *testing.B) { benchToolCall(b, newDemoB(b, true)) })
}

// benchToolCall measures getPet's tools/call through g, over HTTP.
func benchToolCall(b *testing.B, g *Gateway) {
	ts := httptest.NewServer(g.Handler())
	defer ts.Close()
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getPet","arguments":{"petId":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	cpu := processCPU()
	b.ResetTimer()
	defer func() {
		if used := processCPU() - cpu; used > 0 {
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
	g, err := New(b.Context(), Config{Demo: true, Store: "memory", CheckOutput: checkOutput}, discardLogger())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	return g
}
