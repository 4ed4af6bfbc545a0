// Command mcpgate-bench is mcpgate's load harness. It drives one endpoint
// with C concurrent keep-alive clients and prints requests, errors, requests
// per second and the latency distribution (p50, p90, p99, max).
//
// In mcp mode every request is a JSON-RPC tools/call POSTed over the MCP
// Streamable HTTP transport: with -proto 2026-07-28 (the default) a
// stateless request with the MCP-Protocol-Version, Mcp-Method and Mcp-Name
// headers and the protocol version and client capabilities in params._meta;
// with -proto 2025-11-25 (or another legacy version) each client first does
// initialize + notifications/initialized and then carries its Mcp-Session-Id.
// Replies may be application/json or text/event-stream; a request succeeds
// only if the reply is HTTP 200 with a JSON-RPC result for its own id. In
// http mode every request is a plain HTTP request and succeeds on a 2xx.
//
// Invariants: only loopback targets are driven unless -allow-remote is
// given; every run is bounded (by -n, -d, or both, and by -timeout per
// request); all clients share one http.Transport whose idle pool holds at
// least C connections, so connections are reused, never re-dialled per
// request.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpgate-bench:", err)
		os.Exit(1)
	}
}

// config is the parsed command line.
type config struct {
	url         string
	mode        string
	proto       string
	c           int
	d           time.Duration
	dSet        bool
	n           int64
	tool        string
	args        json.RawMessage
	method      string
	body        string
	headers     headerFlags
	pids        pidFlags
	metrics     metricsFlags
	label       string
	round       int
	warmup      time.Duration
	timeout     time.Duration
	jsonOut     bool
	allowRemote bool
}

// headerFlags collects repeated -header K:V flags.
type headerFlags [][2]string

func (h *headerFlags) String() string {
	var parts []string
	for _, kv := range *h {
		parts = append(parts, kv[0]+": "+kv[1])
	}
	return strings.Join(parts, ", ")
}

func (h *headerFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, ":")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return fmt.Errorf("header %q is not K:V", s)
	}
	*h = append(*h, [2]string{k, strings.TrimSpace(v)})
	return nil
}

const usageText = `mcpgate-bench drives an MCP endpoint or a plain HTTP URL with C concurrent
keep-alive clients and prints requests, errors, rps and p50/p90/p99/max latency.

It is meant for loopback targets only (127.0.0.1, ::1, localhost): it refuses
any other host unless -allow-remote is given. Never point it at a service you
do not own.

Examples:
  mcpgate-bench -url http://127.0.0.1:8080/mcp -tool getPet -args '{"petId":1}' -c 16 -d 5s
  mcpgate-bench -url http://127.0.0.1:8082/mcp -proto 2025-11-25 -tool get_pet -args '{"id":1}' -n 10000
  mcpgate-bench -mode http -url http://127.0.0.1:8081/pets/1 -header 'Authorization: Bearer demo-token'
  mcpgate-bench -url http://127.0.0.1:8080/mcp -tool getPet -args '{"petId":1}' -pid gateway=4242 -pid upstream=4243
  mcpgate-bench -url http://127.0.0.1:8080/mcp -tool getPet -args '{"petId":1}' -metrics gateway=http://127.0.0.1:8080/metrics
  mcpgate-bench report [-base revproxy] results.jsonl   (medians and per-round ratios of -json -label -round runs)
  mcpgate-bench startup -addr 127.0.0.1:18480 -- mcpgate serve --addr 127.0.0.1:18480 ...   (time to accept, CPU, peak RSS)

On two shared cores the load generator and the servers compete: compare
targets side by side in one run, and prefer -pid CPU time per request over
raw rps when the machine is busy.

Flags:
`

// parseFlags parses args into a config.
func parseFlags(args []string, stderr io.Writer) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("mcpgate-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	var argsJSON string
	fs.StringVar(&cfg.url, "url", "", "target URL: the MCP endpoint (mcp mode) or the URL to request (http mode); loopback only")
	fs.StringVar(&cfg.mode, "mode", "mcp", "mcp: JSON-RPC tools/call over Streamable HTTP; http: plain HTTP requests")
	fs.StringVar(&cfg.proto, "proto", "2026-07-28", "MCP protocol version: 2026-07-28 (stateless) or a legacy version such as 2025-11-25 (initialize + Mcp-Session-Id)")
	fs.IntVar(&cfg.c, "c", 16, "number of concurrent keep-alive clients")
	fs.DurationVar(&cfg.d, "d", 10*time.Second, "measured duration (when -n is also given, the run stops at whichever comes first; with -n alone there is no duration limit)")
	fs.Int64Var(&cfg.n, "n", 0, "total measured requests (0: no count limit)")
	fs.StringVar(&cfg.tool, "tool", "", "mcp mode: tool name for tools/call")
	fs.StringVar(&argsJSON, "args", "{}", "mcp mode: tool arguments, a JSON object")
	fs.StringVar(&cfg.method, "method", "GET", "http mode: request method")
	fs.StringVar(&cfg.body, "body", "", "http mode: request body (@file reads a file); Content-Type defaults to application/json when a body is given")
	fs.Var(&cfg.headers, "header", "extra request header K:V (repeatable), e.g. 'Authorization: Bearer TOKEN'")
	fs.Var(&cfg.pids, "pid", "[NAME=]PID of a local server process (repeatable): report its CPU time per measured request (Linux /proc)")
	fs.Var(&cfg.metrics, "metrics", "NAME=URL of a Go process's Prometheus metrics (repeatable, loopback): report its allocations per measured request and collections per second")
	fs.StringVar(&cfg.label, "label", "", "a name for the target, copied into the summary (for 'mcpgate-bench report')")
	fs.IntVar(&cfg.round, "round", 0, "the round this run belongs to, copied into the summary (for 'mcpgate-bench report')")
	fs.DurationVar(&cfg.warmup, "warmup", 0, "run the same load this long before measuring (not counted)")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "per-request timeout")
	fs.BoolVar(&cfg.jsonOut, "json", false, "print the summary as one JSON line")
	fs.BoolVar(&cfg.allowRemote, "allow-remote", false, "allow a non-loopback target host")
	if err := fs.Parse(args); err != nil {
		return nil, err // flag.ErrHelp stays comparable; the flag package already printed why
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "d" {
			cfg.dSet = true
		}
	})
	if cfg.n > 0 && !cfg.dSet {
		cfg.d = 0 // -n alone: run until n requests are done
	}
	switch {
	case cfg.url == "":
		return nil, errors.New("-url is required")
	case cfg.c < 1:
		return nil, errors.New("-c must be at least 1")
	case cfg.n < 0:
		return nil, errors.New("-n must not be negative")
	case cfg.d < 0 || (cfg.dSet && cfg.d == 0):
		return nil, errors.New("-d must be positive")
	case cfg.timeout <= 0:
		return nil, errors.New("-timeout must be positive")
	case cfg.mode != "mcp" && cfg.mode != "http":
		return nil, fmt.Errorf("-mode %q: want mcp or http", cfg.mode)
	case cfg.round < 0:
		return nil, errors.New("-round must not be negative")
	}
	if err := checkTarget(cfg.url, cfg.allowRemote); err != nil {
		return nil, err
	}
	for _, m := range cfg.metrics {
		if err := checkTarget(m.url, cfg.allowRemote); err != nil {
			return nil, fmt.Errorf("-metrics %s: %w", m.name, err)
		}
	}
	if cfg.mode == "mcp" {
		if cfg.tool == "" {
			return nil, errors.New("mcp mode needs -tool")
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(argsJSON), &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("-args must be a JSON object: %q", argsJSON)
		}
		cfg.args = json.RawMessage(argsJSON)
		if !validProto(cfg.proto) {
			return nil, fmt.Errorf("-proto %q: want 2026-07-28, 2025-11-25, 2025-06-18 or 2025-03-26", cfg.proto)
		}
	}
	if _, err := cpuSnapshot(cfg.pids); err != nil {
		return nil, err
	}
	if strings.HasPrefix(cfg.body, "@") {
		b, err := os.ReadFile(cfg.body[1:])
		if err != nil {
			return nil, fmt.Errorf("read -body file: %w", err)
		}
		cfg.body = string(b)
	}
	return cfg, nil
}

func validProto(p string) bool {
	switch p {
	case "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26":
		return true
	}
	return false
}

// modernProto reports whether p is a stateless (2026-07-28 or later) revision.
func modernProto(p string) bool { return p >= "2026-07-28" }

// checkTarget refuses non-http(s) URLs and, unless allowed, hosts that are
// not loopback.
func checkTarget(raw string, allowRemote bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("-url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("-url %q: want an absolute http(s) URL", raw)
	}
	if allowRemote {
		return nil
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("-url host %q is not a loopback address; this harness only drives loopback targets (pass -allow-remote to override)", host)
}

// run is the whole command: parse, load, print; or, with "report" first,
// the report over earlier runs.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "report" {
		return runReport(args[1:], os.Stdin, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "startup" {
		return runStartup(ctx, args[1:], stdout, stderr)
	}
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	s, err := runLoad(ctx, cfg)
	if err != nil {
		return err
	}
	return s.print(stdout, cfg.jsonOut)
}
