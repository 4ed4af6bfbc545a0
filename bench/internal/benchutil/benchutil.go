// Package benchutil holds what the comparison servers under bench/ share:
// the loopback-only listen rule, the upstream HTTP client tuned for the
// benchmark's concurrency, the one upstream call every hand-written get_pet
// tool makes, and the Go runtime metrics every server can expose, under the
// same names as mcpgate's own /metrics, for the harness's allocation counts.
//
// Invariants: servers (and their metrics listeners) only ever listen on
// loopback addresses; the upstream
// is only ever a loopback URL; the caller's Authorization header (if any) is
// forwarded to the configured upstream and nowhere else.
package benchutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// IdleConns is the idle-connection pool size per upstream host: above the
// largest client count the benchmark uses (64).
const IdleConns = 256

// Listen listens on addr, which must name a loopback host.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if !isLoopback(host) {
		return nil, fmt.Errorf("listen address %q is not loopback; the bench servers only listen on loopback", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ln, nil
}

// CheckUpstream parses an upstream base URL, which must be http(s) on a
// loopback host.
func CheckUpstream(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("upstream %q must be an http(s) URL on a loopback host", raw)
	}
	return u, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Transport returns an http.Transport that keeps IdleConns idle
// connections per host, so a proxy or tool never re-dials under load.
func Transport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        IdleConns,
		MaxIdleConnsPerHost: IdleConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

// Serve serves h on ln with the timeouts every bench server uses.
func Serve(ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// MetricsFlagHelp is the usage text of every bench server's -metrics flag.
const MetricsFlagHelp = "loopback address to serve this process's Go runtime metrics on, at /metrics (for bench/run.sh); empty: none"

// ServeMetrics serves the process's Go runtime metrics (the Prometheus
// client's Go collector, whose go_memstats_mallocs_total and
// go_gc_duration_seconds mcpgate's /metrics has too) at /metrics on a
// loopback addr, in the background, and returns the address it listens
// on. An empty addr serves nothing and returns nil.
func ServeMetrics(addr string) (net.Addr, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	go func() {
		if err := Serve(ln, mux); err != nil {
			log.Printf("metrics: %v", err)
		}
	}()
	return ln.Addr(), nil
}

// PetGetter does the get_pet tool's upstream call: GET {base}/pets/{id}.
type PetGetter struct {
	Base   string // upstream base URL, no trailing slash
	Client *http.Client
}

// NewPetGetter returns a PetGetter for a loopback upstream base URL.
func NewPetGetter(base string) (*PetGetter, error) {
	if _, err := CheckUpstream(base); err != nil {
		return nil, err
	}
	return &PetGetter{
		Base:   strings.TrimSuffix(base, "/"),
		Client: &http.Client{Transport: Transport(), Timeout: 30 * time.Second},
	}, nil
}

// MaxBody bounds the upstream body a tool returns.
const MaxBody = 4 << 20

// Get fetches pet id, forwarding authorization (if non-empty) as the
// Authorization header. It returns the status and body.
func (g *PetGetter) Get(ctx context.Context, id int64, authorization string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.Base+"/pets/"+strconv.FormatInt(id, 10), nil)
	if err != nil {
		return 0, nil, fmt.Errorf("build upstream request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	res, err := g.Client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("upstream GET: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, MaxBody))
	if err != nil {
		return 0, nil, fmt.Errorf("read upstream body: %w", err)
	}
	return res.StatusCode, body, nil
}
