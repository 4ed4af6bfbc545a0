//go:build pprof

// A profiling build (go build -tags pprof, as bench/run.sh PROFILE=dir does)
// serves net/http/pprof on the loopback address named by PPROF_ADDR, so that
// the real binary can be profiled under load. Ordinary builds contain none
// of this: it is no setting of mcpgate's.
package main

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof/ on http.DefaultServeMux
	"os"
)

func init() {
	addr := os.Getenv("PPROF_ADDR")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(os.Stderr, "mcpgate: PPROF_ADDR %q is not a loopback IP address and port; not serving pprof\n", addr)
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpgate: pprof: %v\n", err)
		return
	}
	go func() { _ = http.Serve(ln, http.DefaultServeMux) }()
}
