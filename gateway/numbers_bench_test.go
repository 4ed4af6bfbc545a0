package gateway

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// BenchmarkHugeNumberToolCall is a full tools/call of getPet through the
// gateway's MCP HTTP handler whose petId is a number literal of 10⁶ digits,
// beside the same call with a string of the same size, alternated in one
// loop. Both are refused as invalid arguments before anything is sent
// upstream; the number/string metric is the ratio of their costs (issue
// 13: validation must cost time linear in the request, ≤ 3×).
func BenchmarkHugeNumberToolCall(b *testing.B) {
	g := newDemoB(b, false)
	h := g.Handler()
	const size = 1_000_000
	body := func(petID string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getPet","arguments":{"petId":` + petID +
			`},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	}
	number := body(strings.Repeat("7", size))
	str := body(`"` + strings.Repeat("7", size-2) + `"`)
	run := func(body []byte) time.Duration {
		req := toolCallRequest("getPet", body)
		w := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(w, req)
		d := time.Since(start)
		out, _ := io.ReadAll(w.Result().Body)
		if w.Code != http.StatusOK || !bytes.Contains(out, []byte(`"isError":true`)) {
			b.Fatalf("status %d: %.300s", w.Code, out)
		}
		return d
	}
	var tNumber, tString time.Duration
	b.ReportAllocs()
	for b.Loop() {
		tNumber += run(number)
		tString += run(str)
	}
	b.ReportMetric(float64(tNumber.Nanoseconds())/float64(b.N), "ns/number-call")
	b.ReportMetric(float64(tString.Nanoseconds())/float64(b.N), "ns/string-call")
	b.ReportMetric(float64(tNumber)/float64(tString), "number/string")
}
