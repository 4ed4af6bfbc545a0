// Command revproxy is the benchmark's baseline for one extra HTTP hop: a bare
// httputil.ReverseProxy to -upstream on a loopback address, with an idle
// pool sized for the benchmark's concurrency and nothing else. It listens on
// loopback only and proxies only to a loopback upstream.
package main

import (
	"flag"
	"log"
	"net/http/httputil"

	"github.com/mcpgate/mcpgate/bench/internal/benchutil"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18082", "loopback listen address")
	upstream := flag.String("upstream", "http://127.0.0.1:18081", "upstream base URL (loopback)")
	metrics := flag.String("metrics", "", benchutil.MetricsFlagHelp)
	flag.Parse()
	if _, err := benchutil.ServeMetrics(*metrics); err != nil {
		log.Fatalf("revproxy: %v", err)
	}
	target, err := benchutil.CheckUpstream(*upstream)
	if err != nil {
		log.Fatalf("revproxy: %v", err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: benchutil.Transport(),
	}
	ln, err := benchutil.Listen(*addr)
	if err != nil {
		log.Fatalf("revproxy: %v", err)
	}
	log.Printf("revproxy: http://%s -> %s", ln.Addr(), target)
	if err := benchutil.Serve(ln, rp); err != nil {
		log.Fatalf("revproxy: %v", err)
	}
}
