// Package gateway is the composition root of the mcpgate product: it loads
// an OpenAPI document, generates one tool per operation, compiles each into
// a proxy endpoint, and serves them as an MCP server with sealed request
// state and durable tasks, over Streamable HTTP or stdio.
//
// Invariants:
//   - The tool set is fixed when the Gateway is built; every per-tool
//     derivation (schemas, routes, validators) happens then, never per call.
//   - The caller's credential reaches only the configured upstream origin
//     (package proxy enforces it) and is never logged. A task keeps it
//     sealed (AES-256-GCM under the state keys) with the task in the store,
//     and the store deletes it when the task ends; with
//     TaskOptions.MemoryOnlyCredentials it stays in this process's memory
//     only.
//   - The gateway keeps no per-client state: everything that must survive a
//     request is in the sealed requestState or the task store.
package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/demo"
	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/mrtr"
	"github.com/mcpgate/mcpgate/openapi"
	"github.com/mcpgate/mcpgate/postgres"
	"github.com/mcpgate/mcpgate/proxy"
	"github.com/mcpgate/mcpgate/sqlite"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/tasks"
)

// Version is the gateway's version, reported as serverInfo.
var Version = "0.1.0-dev"

// Gateway is a built gateway, ready to serve.
type Gateway struct {
	cfg     Config
	logger  *slog.Logger
	server  *mcp.Server
	proxy   *proxy.Proxy
	result  *openapi.Result
	oauth   *oauth // nil unless auth mode oauth
	metrics *metrics

	backend   *store.Backend
	runner    *tasks.Runner
	demoStop  func()
	taskCreds *credentialVault
	taskOpts  TaskOptions

	statusOnce sync.Once         // statusEndpoints
	statusEps  []*proxy.Endpoint // every tool compiled, to name the tool that reads an operation's status
}

// New builds a gateway from cfg: it loads and generates the tools, opens the
// task store and prepares the sealed-state codec. Close it when done.
func New(ctx context.Context, cfg Config, logger *slog.Logger, options ...Option) (g *Gateway, err error) {
	if logger == nil {
		logger = slog.Default()
	}
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	g = &Gateway{cfg: cfg, logger: logger, taskCreds: newCredentialVault(), metrics: newMetrics()}
	for _, o := range options {
		o(g)
	}
	defer func() {
		if err != nil {
			g.Close()
		}
	}()

	doc, err := g.loadDocument(ctx)
	if err != nil {
		return nil, err
	}
	res, err := openapi.Generate(doc, cfg.Tools.generateOptions())
	if err != nil {
		return nil, fmt.Errorf("generate tools from %s: %w", g.cfg.Spec, err)
	}
	g.result = res
	if n := len(res.Warnings); n > 0 {
		logger.Info("the OpenAPI document has problems that did not stop generation", "warnings", n, "first", res.Warnings[0])
	}

	base, err := url.Parse(g.cfg.Upstream)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %w", g.cfg.Upstream, err)
	}
	auth, err := g.authResolver(res)
	if err != nil {
		return nil, err
	}
	g.proxy, err = proxy.New(proxy.Config{
		BaseURL:          base,
		Timeout:          cfg.UpstreamTimeout,
		MaxResponseBytes: cfg.MaxResponseBytes,
		CheckOutput:      cfg.CheckOutput,
		Auth:             auth,
		Logger:           logger,
	})
	if err != nil {
		return nil, err
	}

	if err := g.openStore(ctx); err != nil {
		return nil, err
	}
	codec, err := g.stateCodec(ctx)
	if err != nil {
		return nil, err
	}
	if g.oauth, err = g.setupOAuth(ctx, res, base); err != nil {
		return nil, err
	}
	opts := &mcp.ServerOptions{
		Instructions: instructions(res, g.cfg.Upstream),
		StateCodec:   codec,
		Logger:       logger,
	}
	if o := g.oauth; o != nil {
		// A caller sees and may call only the tools its scopes allow.
		opts.ToolFilter = func(_ context.Context, p mcp.Principal, t *mcp.Tool) bool { return o.allows(p, t.Name) }
		opts.CacheScope = mcp.CachePrivate
	}
	g.server = mcp.NewServer(mcp.Implementation{Name: "mcpgate", Version: Version, Title: "mcpgate: " + res.Title}, opts)
	if err := g.server.EnableTasks(mcp.TaskConfig{Runner: g.runner, Manager: g.backend.Tasks, Publisher: g.backend.Publisher}); err != nil {
		return nil, err
	}
	if err := g.addTools(); err != nil {
		return nil, err
	}
	return g, nil
}

// Server is the MCP server the gateway serves.
func (g *Gateway) Server() *mcp.Server { return g.server }

// Tools are the generated tools.
func (g *Gateway) Tools() []openapi.Tool { return g.result.Tools }

// Config is the effective configuration (defaults filled in).
func (g *Gateway) Config() Config { return g.cfg }

func (g *Gateway) loadDocument(ctx context.Context) (*openapi.Document, error) {
	if g.cfg.Demo {
		api := demo.New(demo.Options{})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("demo API: %w", err)
		}
		srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		g.demoStop = func() { _ = srv.Close() }
		g.cfg.Upstream = "http://" + ln.Addr().String()
		g.cfg.Spec = "demo"
		g.logger.Info("demo API started", "upstream", g.cfg.Upstream)
		return openapi.Parse(ctx, demo.OpenAPI(), "demo", openapi.LoadOptions{})
	}
	doc, err := openapi.Load(ctx, g.cfg.Spec, openapi.LoadOptions{})
	if err != nil {
		return nil, err
	}
	return doc, nil
}

func (g *Gateway) authResolver(res *openapi.Result) (proxy.AuthResolver, error) {
	switch g.cfg.Credentials.Mode {
	case "none":
		return proxy.None(), nil
	case "static":
		secrets := map[string]string{}
		for scheme, v := range g.cfg.Credentials.Static {
			if name, ok := strings.CutPrefix(v, "env:"); ok {
				ev, found := os.LookupEnv(name)
				if !found {
					return nil, fmt.Errorf("credentials: scheme %q: environment variable %s is not set", scheme, name)
				}
				v = ev
			}
			secrets[scheme] = v
		}
		fromEnv, err := proxy.StaticFromEnv(res.SecuritySchemes, EnvPrefix+"SECRET_", os.LookupEnv)
		if err != nil {
			return nil, fmt.Errorf("credentials: %w", err)
		}
		static, err := proxy.Static(res.SecuritySchemes, secrets)
		if err != nil {
			return nil, fmt.Errorf("credentials: %w", err)
		}
		return proxy.Chain(static, fromEnv), nil
	default:
		return proxy.Passthrough(), nil
	}
}

func (g *Gateway) stateCodec(ctx context.Context) (mcp.StateCodec, error) {
	var ring *mrtr.KeyRing
	var err error
	if g.cfg.StateKeys != "" {
		ring, err = mrtr.ParseKeyRing(g.cfg.StateKeys)
	} else {
		ring, err = mrtr.KeyRingFromEnv(g.logger)
	}
	if err != nil {
		return nil, fmt.Errorf("state keys: %w", err)
	}
	// Each requestState resumes once, as the store's replay cache decides:
	// across restarts with a file, across replicas with a shared database.
	codec, err := mrtr.NewCodec(ring, mrtr.Options{ReplayCache: g.backend.Replay})
	if err != nil {
		return nil, err
	}
	return mcp.SealedState(codec), nil
}

// storeBackends is the table of the store backends this binary links in,
// by the scheme of the --store location.
func storeBackends() store.Openers {
	return store.Openers{
		"sqlite":     sqlite.OpenStore,
		"postgres":   postgres.OpenStore,
		"postgresql": postgres.OpenStore,
		"memory":     store.OpenMemory,
	}
}

// openStore opens the configured store and builds the task runner on it.
func (g *Gateway) openStore(ctx context.Context) error {
	b, err := storeBackends().Open(ctx, g.cfg.Store, store.Options{Logger: g.logger})
	if err != nil {
		return err
	}
	g.backend = b
	g.logger.Info("store opened", "store", b.Location, "shared", b.Shared)
	rc := tasks.RunnerConfig{Manager: b.Tasks, Publisher: b.Publisher, Logger: g.logger,
		Concurrency: g.cfg.TaskConcurrency, Lease: g.cfg.TaskLease, ShutdownGrace: g.taskOpts.ShutdownGrace,
		Checkpointing: true} // taskRun records its stage before anything irreversible
	if rc.Concurrency <= 0 {
		rc.Concurrency = 16
	}
	if rc.Lease > 0 {
		rc.Scan = min(10*time.Second, rc.Lease) // look for lapsed leases about as often as they lapse
	}
	if rc.Secrets, err = g.taskSecrets(); err != nil {
		return err
	}
	if rc.Secrets != nil {
		g.logger.Info("tasks keep their caller's credential sealed in the store until they end", "credentials", g.cfg.Credentials.Mode)
	}
	runner, err := tasks.NewRunner(rc)
	if err != nil {
		return err
	}
	g.runner = runner
	return nil
}

// addTools registers one MCP tool per generated tool.
func (g *Gateway) addTools() error {
	for i := range g.result.Tools {
		t := &g.result.Tools[i]
		ep, err := g.proxy.Endpoint(t)
		if err != nil {
			return fmt.Errorf("tool %s: %w", t.Name, err)
		}
		for _, w := range ep.Warnings() {
			g.logger.Debug("tool warning", "tool", t.Name, "warning", w)
		}
		mt := mcpTool(t)
		if g.isTaskTool(t) {
			tt := &mcp.TaskTool{Tool: mt, Support: mcp.TaskOptional, Idempotent: !t.Route.Mutating, Run: g.taskRun(ep)}
			var confirm func(context.Context, *mcp.CallToolRequest) error
			if g.needsConfirm(t) {
				confirm = confirmCheck(t)
			}
			tt.Prepare = g.prepareTask(confirm)
			err = g.server.AddTaskTool(tt)
		} else {
			h := g.oauth.bind(g.proxy.Handler(ep))
			if g.needsConfirm(t) {
				h = confirmFirst(t, h)
			}
			h = g.metrics.tool(t.Name, h)
			err = g.server.AddTool(&mt, h)
		}
		if err != nil {
			return fmt.Errorf("tool %s: %w", t.Name, err)
		}
	}
	g.logger.Info("tools ready", "tools", len(g.result.Tools), "spec", g.cfg.Spec, "upstream", g.cfg.Upstream)
	return nil
}

func (g *Gateway) isTaskTool(t *openapi.Tool) bool {
	return t.Task || slices.Contains(g.cfg.Tools.Tasks, t.Route.OperationID) ||
		slices.Contains(g.cfg.Tools.Tasks, t.Route.Method+" "+t.Route.DocPath) ||
		slices.Contains(g.cfg.Tools.Tasks, t.Name)
}

func mcpTool(t *openapi.Tool) mcp.Tool {
	a := t.Annotations
	return mcp.Tool{
		Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
		Annotations: &mcp.ToolAnnotations{
			Title: a.Title, ReadOnlyHint: &a.ReadOnlyHint, DestructiveHint: &a.DestructiveHint,
			IdempotentHint: &a.IdempotentHint, OpenWorldHint: &a.OpenWorldHint,
		},
	}
}

func instructions(res *openapi.Result, upstream string) string {
	name := res.Title
	if name == "" {
		name = "an HTTP API"
	}
	return fmt.Sprintf("Each tool is one operation of %s, called at %s with your own credentials. "+
		"Read-only tools never change anything; tools marked destructive do.", name, upstream)
}

// Handler is the gateway's HTTP surface: the MCP endpoint at the configured
// path, GET /healthz and GET /metrics (Prometheus).
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mcpHandler := g.metrics.instrument(mcp.NewHTTPHandler(g.server, &mcp.HTTPOptions{
		AllowedHosts: g.cfg.AllowedHosts, AllowedOrigins: g.cfg.AllowedOrigins,
		Legacy: mcp.LegacyOptions{Disable: g.cfg.DisableLegacy},
	}), g.server.HasMethod)
	if g.oauth != nil {
		h, err := g.oauth.wrap(mux, g.cfg.Path, mcpHandler)
		if err != nil {
			g.logger.Error("auth: cannot serve the protected resource metadata", "err", err)
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "misconfigured", http.StatusInternalServerError)
			})
		}
		mux.Handle(g.cfg.Path, h)
	} else {
		mux.Handle(g.cfg.Path, g.bearerPrincipal(mcpHandler))
	}
	mux.Handle("GET /metrics", g.metrics.handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"ok","tools":%d}`, len(g.result.Tools))
	})
	return mux
}

// Serve serves HTTP on ln until ctx ends, with the task workers running.
// When ctx ends, the HTTP server and the task workers shut down side by
// side: requests in flight finish, running tasks get their grace period
// (TaskOptions.ShutdownGrace), and Serve returns when both are done.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	stop := g.startRunner(ctx)
	defer stop()
	g.logger.Info("serving MCP", "url", "http://"+ln.Addr().String()+g.cfg.Path)
	err := mcp.RunHTTP(ctx, ln, g.Handler(), g.server, 10*time.Second)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// ServeStdio serves MCP over in/out until in ends. In passthrough mode the
// credential forwarded upstream is MCPGATE_BEARER_TOKEN.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	stop := g.startRunner(ctx)
	defer stop()
	if tok := os.Getenv(EnvPrefix + "BEARER_TOKEN"); tok != "" {
		ctx = mcp.WithPrincipal(ctx, principalFor(tok))
	}
	defer g.server.Close()
	return mcp.ServeStdio(ctx, g.server, in, out, nil)
}

// startRunner runs the task workers until ctx ends or the returned stop is
// called; stop then waits for the runner's shutdown (running tasks finish
// or are released). The runner takes over the tasks whose worker stopped
// renewing its lease (a crashed predecessor's, another replica's) by
// itself, after its workers started.
func (g *Gateway) startRunner(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx) // ends with the transport's ctx: both shut down at once
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := g.runner.Run(ctx); err != nil {
			g.logger.Error("task runner stopped", "err", err)
		}
	}()
	return func() { cancel(); <-done }
}

// Close releases the store and stops the demo API.
func (g *Gateway) Close() error {
	var errs []error
	if g.server != nil {
		g.server.Close()
	}
	if g.backend != nil {
		errs = append(errs, g.backend.Close())
	}
	if g.demoStop != nil {
		g.demoStop()
	}
	return errors.Join(errs...)
}

// bearerPrincipal makes the caller's bearer token the request's principal:
// the token is the credential forwarded upstream, and a hash of it is the
// subject that binds sealed state and tasks to this caller.
func (g *Gateway) bearerPrincipal(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := bearerToken(r.Header.Get("Authorization")); ok {
			r = r.WithContext(mcp.WithPrincipal(r.Context(), principalFor(tok)))
		}
		next.ServeHTTP(w, r)
	})
}

func bearerToken(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

func principalFor(token string) mcp.Principal {
	sum := sha256.Sum256([]byte(token))
	return mcp.Principal{Subject: "bearer:" + base64.RawURLEncoding.EncodeToString(sum[:16]), Credential: token}
}
