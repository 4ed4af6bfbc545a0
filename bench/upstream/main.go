// Command upstream serves mcpgate's demo API (package demo) on a loopback
// address: the upstream every benchmark target calls. It listens on loopback
// only; -tokens makes it require a bearer token, as a protected API would.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/mcpgate/mcpgate/bench/internal/benchutil"
	"github.com/mcpgate/mcpgate/demo"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18081", "loopback listen address")
	tokens := flag.String("tokens", "", "comma-separated token=subject pairs; with it, a bearer token is required")
	metrics := flag.String("metrics", "", benchutil.MetricsFlagHelp)
	flag.Parse()
	if _, err := benchutil.ServeMetrics(*metrics); err != nil {
		log.Fatalf("upstream: %v", err)
	}
	opts := demo.Options{}
	if *tokens != "" {
		opts.RequireAuth = true
		opts.Tokens = map[string]string{}
		for _, kv := range strings.Split(*tokens, ",") {
			tok, sub, ok := strings.Cut(kv, "=")
			if !ok || tok == "" {
				fmt.Fprintf(os.Stderr, "upstream: -tokens entry %q is not token=subject\n", kv)
				os.Exit(2)
			}
			opts.Tokens[tok] = sub
		}
	}
	ln, err := benchutil.Listen(*addr)
	if err != nil {
		log.Fatalf("upstream: %v", err)
	}
	log.Printf("upstream: demo API on http://%s", ln.Addr())
	if err := benchutil.Serve(ln, demo.New(opts)); err != nil {
		log.Fatalf("upstream: %v", err)
	}
}
