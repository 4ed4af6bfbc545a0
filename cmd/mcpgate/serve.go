package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gctune"
)

// serveFlags are the flags of "serve" and "stdio". Only flags given on the
// command line override the config file and the environment.
type serveFlags struct {
	config string
	cfg    gateway.Config
	hosts  string
	origin string
	tasks  string
	scopes string
}

const serveEnvHelp = `Configuration, lowest precedence first: the YAML file given by --config,
MCPGATE_* environment variables, then flags. Environment variables:
  MCPGATE_SPEC, MCPGATE_UPSTREAM, MCPGATE_DEMO, MCPGATE_ADDR, MCPGATE_PATH,
  MCPGATE_STORE, MCPGATE_CREDENTIALS, MCPGATE_CONFIRM, MCPGATE_AUTH,
  MCPGATE_ISSUER, MCPGATE_RESOURCE, MCPGATE_UPSTREAM_TIMEOUT,
  MCPGATE_ALLOWED_HOSTS, MCPGATE_ALLOWED_ORIGINS (comma-separated),
  MCPGATE_LOG_LEVEL, MCPGATE_LOG_FORMAT, MCPGATE_GC_HEADROOM,
  MCPGATE_STATE_KEYS      requestState key ring "kid:BASE64KEY,..." (newest first;
                          share it between replicas; without it a random key is
                          made and paused requests die with the process)
  MCPGATE_SECRET_<SCHEME> secret of an OpenAPI security scheme (credentials static)
  MCPGATE_BEARER_TOKEN    the caller's token in stdio mode (credentials passthrough)

Credentials (--credentials):
  passthrough  forward the caller's "Authorization: Bearer" to the upstream origin
               only (never to another host, redirects included; never logged);
               with --auth oauth only when the token's audience covers the
               upstream (checked on every call)
  exchange     with --auth oauth: exchange the caller's token (RFC 8693) at the
               authorization server for one issued to the upstream (cached until
               shortly before it expires); configure credentials.exchange
  static       fill each operation's OpenAPI security scheme (apiKey in header,
               query or cookie; http basic "user:pass"; bearer) from config
               (credentials.static) or MCPGATE_SECRET_<SCHEME>
  none         send no credentials`

func (f *serveFlags) register(fs *flag.FlagSet, withHTTP bool) {
	fs.StringVar(&f.config, "config", "", "YAML config file (see README: every flag has a key)")
	fs.StringVar(&f.cfg.Spec, "spec", "", "OpenAPI document: a file, an http(s) URL, or - for stdin")
	fs.StringVar(&f.cfg.Upstream, "upstream", "", "base URL of the API the tools call, e.g. https://api.example.com/v1")
	fs.BoolVar(&f.cfg.Demo, "demo", false, "serve the built-in demo API (no --spec or --upstream needed)")
	fs.StringVar(&f.cfg.Store, "store", "", `task store: "sqlite:PATH" (default ~/.local/state/mcpgate/mcpgate.db), "postgres://…" (replicas share it) or "memory" (dev only)`)
	fs.StringVar(&f.cfg.Credentials.Mode, "credentials", "", "upstream credentials: passthrough (default), exchange (needs --auth oauth), static or none")
	fs.DurationVar(&f.cfg.UpstreamTimeout, "upstream-timeout", 0, "bound on one upstream call (default 30s)")
	fs.Int64Var(&f.cfg.MaxResponseBytes, "max-response-bytes", 0, "cap on an upstream response (default 1 MiB)")
	fs.IntVar(&f.cfg.TaskConcurrency, "task-concurrency", 0, "task handlers running at once in this process (default 16)")
	fs.DurationVar(&f.cfg.TaskLease, "task-lease", 0, "a worker's claim on a task without renewal; another replica takes over after it (default 30s)")
	fs.StringVar(&f.tasks, "task-operations", "", "operations (operationId or \"METHOD /path\", comma-separated) served as durable tasks")
	fs.StringVar(&f.cfg.Confirm, "confirm", "", "calls the user confirms first when the client supports elicitation: destructive (default), writes or none")
	fs.BoolVar(&f.cfg.CheckOutput, "check-output", false, "validate every upstream JSON response against the tool's outputSchema (a mismatch becomes a tool error; costs ~10-15 µs per call)")
	fs.StringVar(&f.cfg.Auth.Mode, "auth", "", `"oauth": validate every request's bearer JWT (or introspect it) as an OAuth resource server; default "none"`)
	fs.StringVar(&f.cfg.Auth.Issuer, "issuer", "", "with --auth oauth: the authorization server's issuer URL")
	fs.StringVar(&f.cfg.Auth.Resource, "resource", "", "with --auth oauth: this server's canonical URL (tokens must be issued for it), e.g. https://mcp.example.com/mcp")
	fs.StringVar(&f.cfg.Auth.JWKSURL, "jwks-url", "", "with --auth oauth: the JWK Set URL (default: from the issuer's metadata)")
	fs.StringVar(&f.scopes, "required-scopes", "", "with --auth oauth: scopes every request needs, comma-separated")
	fs.Int64Var(&f.cfg.GCHeadroom, "gc-headroom", 0, "bytes the heap may grow past what is live before Go collects (default 32 MiB; -1: the runtime's default; ignored when GOGC is set)")
	fs.StringVar(&f.cfg.Log.Level, "log-level", "", "debug, info (default), warn or error")
	fs.StringVar(&f.cfg.Log.Format, "log-format", "", "text (default) or json")
	if withHTTP {
		fs.StringVar(&f.cfg.Addr, "addr", "", "listen address (default 127.0.0.1:8080)")
		fs.StringVar(&f.cfg.Path, "path", "", "MCP endpoint path (default /mcp)")
		fs.StringVar(&f.hosts, "allowed-hosts", "", "Host names accepted, comma-separated (default: loopback only; * for any)")
		fs.StringVar(&f.origin, "allowed-origins", "", "browser Origins accepted, comma-separated (default: loopback only)")
		fs.BoolVar(&f.cfg.DisableLegacy, "no-legacy", false, "refuse 2025-11-25 (initialize-based) clients")
	}
}

// resolve merges the config file, the environment and the flags set.
func (f *serveFlags) resolve(fs *flag.FlagSet) (gateway.Config, error) {
	var cfg gateway.Config
	if f.config != "" {
		c, err := gateway.LoadConfigFile(f.config)
		if err != nil {
			return cfg, err
		}
		cfg = c
	}
	if err := cfg.ApplyEnv(os.LookupEnv); err != nil {
		return cfg, err
	}
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "spec":
			cfg.Spec = f.cfg.Spec
		case "upstream":
			cfg.Upstream = f.cfg.Upstream
		case "demo":
			cfg.Demo = f.cfg.Demo
		case "store":
			cfg.Store = f.cfg.Store
		case "credentials":
			cfg.Credentials.Mode = f.cfg.Credentials.Mode
		case "upstream-timeout":
			cfg.UpstreamTimeout = f.cfg.UpstreamTimeout
		case "max-response-bytes":
			cfg.MaxResponseBytes = f.cfg.MaxResponseBytes
		case "task-concurrency":
			cfg.TaskConcurrency = f.cfg.TaskConcurrency
		case "task-lease":
			cfg.TaskLease = f.cfg.TaskLease
		case "task-operations":
			cfg.Tools.Tasks = splitList(f.tasks)
		case "auth":
			cfg.Auth.Mode = f.cfg.Auth.Mode
		case "issuer":
			cfg.Auth.Issuer = f.cfg.Auth.Issuer
		case "resource":
			cfg.Auth.Resource = f.cfg.Auth.Resource
		case "jwks-url":
			cfg.Auth.JWKSURL = f.cfg.Auth.JWKSURL
		case "required-scopes":
			cfg.Auth.RequiredScopes = splitList(f.scopes)
		case "confirm":
			cfg.Confirm = f.cfg.Confirm
		case "check-output":
			cfg.CheckOutput = f.cfg.CheckOutput
		case "gc-headroom":
			cfg.GCHeadroom = f.cfg.GCHeadroom
		case "log-level":
			cfg.Log.Level = f.cfg.Log.Level
		case "log-format":
			cfg.Log.Format = f.cfg.Log.Format
		case "addr":
			cfg.Addr = f.cfg.Addr
		case "path":
			cfg.Path = f.cfg.Path
		case "allowed-hosts":
			cfg.AllowedHosts = splitList(f.hosts)
		case "allowed-origins":
			cfg.AllowedOrigins = splitList(f.origin)
		case "no-legacy":
			cfg.DisableLegacy = f.cfg.DisableLegacy
		}
	})
	return cfg, nil
}

func newLogger(c gateway.LogConfig, w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	switch strings.ToLower(c.Level) {
	case "", "info":
		lvl = slog.LevelInfo
	case "debug":
		lvl = slog.LevelDebug
	case "warn", "warning":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	default:
		return nil, usagef("log level %q: use debug, info, warn or error", c.Level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(c.Format) {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usagef("log format %q: use text or json", c.Format)
}

// buildGateway parses the flags of serve or stdio, merges them with the
// config file and the environment, and builds the gateway.
func buildGateway(ctx context.Context, name, description string, withHTTP bool, args []string, stderr io.Writer) (*gateway.Gateway, error) {
	fs := newFlagSet(name, "(--spec FILE|URL --upstream URL | --demo) [flags]", description+"\n\n"+serveEnvHelp, stderr)
	var f serveFlags
	f.register(fs, withHTTP)
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	cfg, err := f.resolve(fs)
	if err != nil {
		return nil, err
	}
	logger, err := newLogger(cfg.Log, stderr)
	if err != nil {
		return nil, err
	}
	return gateway.New(ctx, cfg, logger)
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	g, err := buildGateway(ctx, "serve", "Serve an HTTP API described by OpenAPI as MCP (2026-07-28, and 2025-11-25 clients)\nover Streamable HTTP, one tool per operation, at http://ADDR/PATH.", true, args, stderr)
	if err != nil {
		return err
	}
	defer g.Close()
	startGCTuner(ctx, g.Config())
	addr := g.Config().Addr
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	fmt.Fprintf(stderr, "mcpgate: serving %d tools at http://%s%s\n", len(g.Tools()), ln.Addr(), g.Config().Path)
	return g.Serve(ctx, ln)
}

func runStdio(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	g, err := buildGateway(ctx, "stdio", "Serve an HTTP API described by OpenAPI as MCP over stdio (for desktop clients that\nstart the server as a subprocess). Logs go to stderr; stdout carries only MCP.", false, args, stderr)
	if err != nil {
		return err
	}
	defer g.Close()
	startGCTuner(ctx, g.Config())
	return g.ServeStdio(ctx, os.Stdin, stdout)
}

// startGCTuner gives the heap the configured headroom (package gctune)
// until ctx ends.
func startGCTuner(ctx context.Context, cfg gateway.Config) {
	if cfg.GCHeadroom > 0 {
		go gctune.Run(ctx, uint64(cfg.GCHeadroom), time.Second)
	}
}
