package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkReloadUnderLoad: 16 clients call a tool of GitHub's API (1,223
// operations) while the gateway reloads that document; the metric is the
// p99 latency of the calls in rounds with a reload over rounds without one,
// interleaved (p99-ratio; the target is at most 1.2). It needs the corpus
// (MCPGATE_CORPUS) and runs its own fixed rounds: use -benchtime 1x.
func BenchmarkReloadUnderLoad(b *testing.B) {
	src := filepath.Join(os.Getenv("MCPGATE_CORPUS"), "github", "api.github.com.json")
	doc, err := os.ReadFile(src)
	if err != nil {
		b.Skipf("the corpus's GitHub document: %v (set MCPGATE_CORPUS)", err)
	}
	spec := filepath.Join(b.TempDir(), "github.json")
	if err := os.WriteFile(spec, doc, 0o600); err != nil {
		b.Fatal(err)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"current_user_url":"x"}`))
	}))
	defer up.Close()
	g, err := New(b.Context(), Config{Store: "memory", Spec: spec, Upstream: up.URL, Reload: ReloadAuto}, discardLogger())
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ts := httptest.NewServer(g.Handler())
	defer ts.Close()
	const tool = "meta_root"
	if g.current().served[tool] == nil {
		b.Fatalf("no tool %s", tool)
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	call := func() time.Duration {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", tool)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(start)
	}
	edits := 0
	round := func(d time.Duration, reload bool) time.Duration {
		var mu sync.Mutex
		var lat []time.Duration
		stop := time.Now().Add(d)
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				var mine []time.Duration
				for time.Now().Before(stop) {
					mine = append(mine, call())
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
		}
		if reload {
			time.Sleep(d / 4)
			// A real edit: an operation's summary changes (cosmetic), and
			// the new tool set is swapped in.
			edits++
			edited := bytes.Replace(doc, []byte(`"summary": "GitHub API Root"`), fmt.Appendf(nil, `"summary": "GitHub API Root, edit %d"`, edits), 1)
			if err := os.WriteFile(spec, edited, 0o600); err != nil {
				b.Fatal(err)
			}
			before := g.current().version
			if err := g.reload(context.Background(), "bench", map[string]bool{spec: true}, true, nil); err != nil {
				b.Fatal(err)
			}
			if g.current().version == before {
				b.Fatal("the reload did not swap a new tool set in")
			}
		}
		wg.Wait()
		slices.Sort(lat)
		return lat[len(lat)*99/100]
	}
	round(time.Second, false) // warm up
	b.ResetTimer()
	var ratios []float64
	for range 3 {
		quiet, busy := round(3*time.Second, false), round(3*time.Second, true)
		ratios = append(ratios, float64(busy)/float64(quiet))
		b.Logf("p99 without a reload %s, with one %s", quiet, busy)
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "p99-ratio")
}
