// Package gateway is the composition root of the mcpgate product: it loads
// one or several OpenAPI documents (the apis setting, or spec and upstream
// for one), generates one tool per operation, compiles each into an
// endpoint of its API's own proxy, and serves them as an MCP server with
// sealed request state and durable tasks, over Streamable HTTP or stdio.
//
// It owns the settings table (config.go: Config is the one source of the
// flags, MCPGATE_* variables and YAML keys), the catalog of served tools
// and its live reload (catalog.go, reload.go, watch.go), the way of every
// call (pipeline.go: policy, confirmation, quota, then the credential of
// credentials.go and the dispatch), the observer that counts, logs, audits
// and traces each call (observe.go), task tools (tasks.go), discovery mode
// and the users' own accounts (connect.go), and the HTTP surface with
// /healthz, /readyz and /metrics.
//
// Invariants:
//   - The tools in service are one catalog, built off the request path and
//     swapped in whole (at start, and on each reload); every per-tool
//     derivation (schemas, routes, validators, the search index) happens
//     then, never per call. A reload that fails or that the reload mode
//     refuses leaves the old catalog serving; a task runs with the
//     definition of the catalog it was created under while that catalog
//     is kept.
//   - Every kind of tool (ordinary, task, reached through discovery's
//     call) takes the same steps in the same order, and the credential an
//     API gets is decided in one place (credentials.go).
//   - A caller's credential reaches only the origin of the API it is for
//     (each API's proxy enforces it) and is never logged. Without auth mode
//     oauth at most one API may forward the caller's bearer. A task keeps
//     it sealed (AES-256-GCM under the state keys) with the task in the
//     store, and the store deletes it when the task ends; with
//     task_credentials memory it stays in this process's memory only.
//   - The gateway keeps no per-client state: everything that must survive a
//     request is in the sealed requestState or the store.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/discovery"
	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/mrtr"
	"github.com/mcpgate/mcpgate/openapi"
	"github.com/mcpgate/mcpgate/postgres"
	"github.com/mcpgate/mcpgate/sqlite"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/tasks"
)

// Gateway is a built gateway, ready to serve.
type Gateway struct {
	cfg     Config
	logger  *slog.Logger
	server  *mcp.Server
	oauth   *oauth // nil unless auth mode oauth
	metrics *metrics

	// cat is the catalog in service (catalog.go); catMu guards the
	// replaced ones kept for their tasks. opened lists the APIs that run
	// something in-process (the demo), for Close; once the gateway serves,
	// reloadMu guards it.
	cat      atomic.Pointer[catalog]
	catMu    sync.Mutex
	reloadMu sync.Mutex    // one reload at a time
	rewatch  chan struct{} // a reload changed the documents to watch
	oldCats  map[string]*catalog
	oldOrder []string
	opened   []*api
	embedder *discovery.Embedder // nil unless tools.embeddings.url

	backend *store.Backend
	runner  *tasks.Runner
	ring    *mrtr.KeyRing // the state keys: they seal requestState, task credentials and grants
	ops     ops
	conn    *connect.Connector // nil unless an API's credentials mode is oauth
	callers callerIDs
	ready   *readiness
	// rejected are the Host names refused so far (each is logged once).
	rejectedMu sync.Mutex
	rejected   map[string]bool
	// trustedProxies are limits.trusted_proxies, parsed.
	trustedProxies []netip.Prefix
	taskCreds      *credentialVault
}

// New builds a gateway from cfg: it loads and generates the tools, opens the
// task store and prepares the sealed-state codec. Close it when done. On an
// error, what was already opened is closed again.
func New(ctx context.Context, cfg Config, logger *slog.Logger) (*Gateway, error) {
	if logger == nil {
		logger = slog.Default()
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	g := newGateway(cfg, logger)
	if err := g.build(ctx); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// newGateway is a Gateway not yet built, its settings already checked.
func newGateway(cfg Config, logger *slog.Logger) *Gateway {
	return &Gateway{cfg: cfg, logger: logger, taskCreds: newCredentialVault(), metrics: newMetrics(), oldCats: map[string]*catalog{}, rejected: map[string]bool{},
		rewatch: make(chan struct{}, 1)}
}

// build does New's work on a Gateway that Close can release at any point.
func (g *Gateway) build(ctx context.Context) error {
	var err error
	if g.trustedProxies, err = parsePrefixes(g.cfg.Limits.TrustedProxies); err != nil {
		return err
	}
	// The state keys seal requestState, task credentials and grants, and
	// key the caller ids.
	if g.ring, err = g.keyRing(); err != nil {
		return err
	}
	if g.callers, err = newCallerIDs(g.ring); err != nil {
		return err
	}
	if err := g.openStore(ctx); err != nil {
		return err
	}
	if err := g.setupOps(ctx); err != nil {
		return err
	}
	if g.embedder, err = g.newEmbedder(); err != nil {
		return err
	}
	apis, err := g.loadAPIs(ctx)
	if err != nil {
		return err
	}
	if err := g.newRunner(apis); err != nil {
		return err
	}
	codec, err := g.stateCodec(g.ring)
	if err != nil {
		return err
	}
	if g.oauth, err = g.setupOAuth(ctx, apis); err != nil {
		return err
	}
	g.server = mcp.NewServer(mcp.Implementation{Name: "mcpgate", Version: Version(), Title: "mcpgate: " + title(apis)},
		g.serverOptions(codec, apis))
	if err := g.server.EnableTasks(mcp.TaskConfig{Runner: g.runner}); err != nil {
		return err
	}
	g.ready = newReadiness(g)
	cat, ts, err := g.newCatalog(ctx, apis)
	if err != nil {
		return err
	}
	g.logMode(cat)
	g.logger.Info("confirmation", "confirm", g.cfg.Confirm, "confirm_fallback", g.cfg.ConfirmFallback)
	return g.install(cat, ts)
}

// loadAPIs loads every API's document and builds its tools and proxy.
func (g *Gateway) loadAPIs(ctx context.Context) ([]*api, error) {
	cfgs, err := g.cfg.apiConfigs()
	if err != nil {
		return nil, err
	}
	var apis []*api
	for _, c := range cfgs {
		a, err := g.loadAPI(ctx, c)
		if err != nil {
			return nil, err
		}
		apis = append(apis, a)
		g.track(a)
	}
	if err := checkCredentialSharing(g.cfg.Auth.Mode, apis); err != nil {
		return nil, err
	}
	if err := g.setupConnect(ctx, apis); err != nil {
		return nil, err
	}
	for _, a := range apis {
		if err := g.buildProxy(ctx, a); err != nil {
			return nil, err
		}
	}
	return apis, nil
}

// serverOptions are the MCP server's: the observer of every request, and
// with scopes or a policy the filter of what each caller sees.
func (g *Gateway) serverOptions(codec mcp.StateCodec, apis []*api) *mcp.ServerOptions {
	opts := &mcp.ServerOptions{
		Instructions: instructions(apis),
		StateCodec:   codec,
		Logger:       g.logger,
		Observer:     observer{g},
	}
	if g.oauth != nil || g.ops.policy != nil {
		opts.ToolFilter = g.visible
		opts.CacheScope = mcp.CachePrivate // what a list holds depends on the caller
	}
	return opts
}

// visible reports whether a caller may see (and so call) a tool: its
// scopes allow it and some policy rule could allow its calls.
func (g *Gateway) visible(ctx context.Context, p mcp.Principal, t *mcp.Tool) bool {
	cat := g.current()
	if g.oauth != nil && !auth.Allowed(p.Scopes, cat.scopes[t.Name]) {
		return false
	}
	if st := cat.served[t.Name]; st != nil && g.ops.policy != nil {
		return g.ops.policy.Visible(g.policyCaller(ctx, p), st.policy)
	}
	return true
}

// parsePrefixes reads addresses and CIDR prefixes ("10.0.0.1", "10.0.0.0/8").
func parsePrefixes(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("limits.trusted_proxies: %q is neither an address nor a CIDR prefix", s)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// checkCredentialSharing refuses a bearer that would reach several APIs
// unchecked: without auth mode oauth nothing tells which API a token was
// issued for, so passthrough is allowed for one API at most.
func checkCredentialSharing(authMode string, apis []*api) error {
	if authMode == "oauth" {
		return nil
	}
	var names []string
	for _, a := range apis {
		if a.cfg.Credentials.Mode == "passthrough" {
			names = append(names, a.cfg.Name)
		}
	}
	if len(names) > 1 {
		return fmt.Errorf("apis %s all use credentials mode passthrough: the caller's bearer would reach every one of them. "+
			"With auth mode oauth each token goes only to the APIs its audience covers; otherwise give all but one static, oauth or none credentials",
			strings.Join(names, ", "))
	}
	return nil
}

// Server is the MCP server the gateway serves.
func (g *Gateway) Server() *mcp.Server { return g.server }

// Tools are the generated tools of every API, named as served.
func (g *Gateway) Tools() []openapi.Tool { return g.current().tools }

// Config is the effective configuration (defaults filled in).
func (g *Gateway) Config() Config { return g.cfg }

// keyRing parses the state key ring: the keys that seal requestState, and
// from which the caller-id key (and the other at-rest keys) are derived.
func (g *Gateway) keyRing() (*mrtr.KeyRing, error) {
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
	return ring, nil
}

func (g *Gateway) stateCodec(ring *mrtr.KeyRing) (mcp.StateCodec, error) {
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

// openStore opens the configured store.
func (g *Gateway) openStore(ctx context.Context) error {
	b, err := storeBackends().Open(ctx, g.cfg.Store, store.Options{Logger: g.logger})
	if err != nil {
		return err
	}
	g.backend = b
	g.logger.Info("store opened", "store", b.Location, "shared", b.Shared)
	return nil
}

// dbSystem is the OpenTelemetry db.system.name of a store location; ""
// for one that is no database (memory).
func dbSystem(location string) string {
	switch scheme, _, _ := strings.Cut(location, ":"); scheme {
	case "sqlite":
		return "sqlite"
	case "postgres", "postgresql":
		return "postgresql"
	}
	return ""
}

// newRunner builds the task runner on the store.
func (g *Gateway) newRunner(apis []*api) error {
	b := g.backend
	rc := tasks.RunnerConfig{Manager: traceTasks(b.Tasks, g.ops.tracer, dbSystem(g.cfg.Store)), Publisher: b.Publisher, Logger: g.logger,
		Concurrency: g.cfg.TaskConcurrency, Lease: g.cfg.TaskLease, ShutdownGrace: g.cfg.TaskShutdownGrace,
		MaxActivePerOwner: max(g.cfg.Limits.TasksPerCaller, 0),
		Checkpointing:     true} // taskRun records its stage before anything irreversible
	if rc.Lease > 0 {
		rc.Scan = min(10*time.Second, rc.Lease) // look for lapsed leases about as often as they lapse
	}
	var err error
	if rc.Secrets, err = g.taskSecrets(g.ring, apis); err != nil {
		return err
	}
	if rc.Secrets != nil {
		g.logger.Info("tasks keep their caller's credential sealed in the store until they end", "store", b.Location)
	}
	g.runner, err = tasks.NewRunner(rc)
	return err
}

func mcpTool(t *openapi.Tool) mcp.Tool {
	a := t.Annotations
	return mcp.Tool{
		Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Meta: t.Meta,
		Annotations: &mcp.ToolAnnotations{
			Title: a.Title, ReadOnlyHint: &a.ReadOnlyHint, DestructiveHint: &a.DestructiveHint,
			IdempotentHint: &a.IdempotentHint, OpenWorldHint: &a.OpenWorldHint,
		},
	}
}

// title names what the gateway serves: the API's title, or the APIs'.
func title(apis []*api) string {
	var titles []string
	for _, a := range apis {
		t := a.result.Title
		if t == "" {
			t = "an HTTP API"
		}
		if a.cfg.Name != "" {
			t = a.cfg.Name + ": " + t
		}
		titles = append(titles, t)
	}
	return strings.Join(titles, "; ")
}

// instructions tell the agent what the tools are. They never name an
// upstream's address: the agent can neither reach nor authenticate to it.
func instructions(apis []*api) string {
	s := "Each tool is one operation of " + title(apis) + ", called with your own credentials. " +
		"Read-only tools never change anything; tools marked destructive do."
	if len(apis) > 1 {
		s += " Tool names start with the name of their API and an underscore."
	}
	return s
}

// Handler is the gateway's HTTP surface: the MCP endpoint at the configured
// path, GET /healthz (the process serves), GET /readyz (the store and every
// upstream answer) and GET /metrics (Prometheus).
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	l := g.cfg.Limits
	// The tracer continues a trace context of the HTTP headers (a request
	// whose _meta names none is then its child); off, it adds nothing.
	// Without OAuth the bearer token is the principal (see bearer); the
	// instrument puts it in the request it derives anyway.
	var principal func(*http.Request) (mcp.Principal, bool)
	if g.oauth == nil {
		principal = g.bearer
	}
	mcpHandler := g.ops.tracer.Handler(g.metrics.instrument(mcp.NewHTTPHandler(g.server, &mcp.HTTPOptions{
		AllowedHosts: g.cfg.AllowedHosts, AllowedOrigins: g.cfg.AllowedOrigins,
		Legacy: mcp.LegacyOptions{Disable: g.cfg.DisableLegacy, IdleTimeout: l.SessionIdle,
			Sessions: mcp.Limits{Total: l.Sessions, PerAddress: l.SessionsPerAddress, PerCaller: l.SessionsPerCaller}},
		ListenStreams:  mcp.Limits{Total: l.Streams, PerAddress: l.StreamsPerAddress, PerCaller: l.StreamsPerCaller},
		HostRejected:   g.hostRejected,
		TrustedProxies: g.trustedProxies,
	}), g.knownMethod, principal))
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
		mux.Handle(g.cfg.Path, mcpHandler)
	}
	if g.conn != nil {
		// The connect pages are opened by a browser, which carries no
		// bearer: they are outside the MCP endpoint's authentication.
		mux.Handle("/connect/", g.conn.Handler())
	}
	mux.Handle("GET /metrics", g.metrics.handler())
	mux.Handle("GET /readyz", g.ready)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"ok","tools":%d}`, len(g.current().tools))
	})
	return mux
}

// hostRejected logs, once per Host, a request the DNS-rebinding guard
// refused, with the setting that lets it in.
func (g *Gateway) hostRejected(host string) {
	if len(host) > 256 {
		host = host[:256]
	}
	g.rejectedMu.Lock()
	seen := g.rejected[host] || len(g.rejected) >= 1000
	if !seen {
		g.rejected[host] = true
	}
	g.rejectedMu.Unlock()
	if !seen {
		g.logger.Warn("refused a request for a Host that is not allowed (logged once per host): if clients reach the gateway by this name, add it to allowed_hosts (--allowed-hosts)", "host", host)
	}
}

// knownMethod reports whether the server answers method (in either
// protocol era): only such a method becomes a metric label.
func (g *Gateway) knownMethod(method string) bool {
	return method == "initialize" || g.server.HasMethod(method)
}

// Serve serves HTTP on ln until ctx ends, with the task workers running.
// When ctx ends, the HTTP server and the task workers shut down side by
// side: requests in flight finish, running tasks get their grace period
// (task_shutdown_grace), and Serve returns when both are done.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	stop := g.startRunner(ctx)
	defer stop()
	go g.watch(ctx)
	go g.ops.sweepQuotas(ctx, g.logger)
	g.logListening(ln.Addr())
	err := mcp.RunHTTP(ctx, ln, g.Handler(), g.server, 10*time.Second)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	g.logger.Info("shut down", "cause", context.Cause(ctx), "err", err)
	return err
}

// logListening logs the one line that says the gateway is serving (its
// URL, its tools and the Host names it accepts), and warns when it listens
// beyond loopback but accepts only loopback Host names: every remote client
// would then be refused.
func (g *Gateway) logListening(addr net.Addr) {
	hosts := g.cfg.AllowedHosts
	if len(hosts) == 0 {
		hosts = []string{"loopback only"}
	}
	g.logger.Info("serving MCP", "tools", len(g.current().tools), "url", "http://"+addr.String()+g.cfg.Path, "allowed_hosts", strings.Join(hosts, ","))
	if ta, ok := addr.(*net.TCPAddr); ok && !ta.IP.IsLoopback() && len(g.cfg.AllowedHosts) == 0 {
		g.logger.Warn("listening beyond loopback, but only loopback Host names are allowed: remote clients will be refused until allowed_hosts (--allowed-hosts) names the host they use", "addr", addr.String())
	}
}

// ServeStdio serves MCP over in/out until in ends. In passthrough mode the
// credential forwarded upstream is MCPGATE_BEARER_TOKEN.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	stop := g.startRunner(ctx)
	defer stop()
	watchCtx, endWatch := context.WithCancel(ctx)
	defer endWatch()
	go g.watch(watchCtx)
	if tok := os.Getenv(EnvPrefix + "BEARER_TOKEN"); tok != "" {
		ctx = mcp.WithPrincipal(ctx, g.callers.principal(tok))
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

// Close flushes the audit record and the last spans, gives back leased
// quota tokens, releases the store and stops the demo API.
func (g *Gateway) Close() error {
	var errs []error
	if g.server != nil {
		g.server.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	errs = append(errs, g.ops.close(ctx))
	if g.backend != nil {
		errs = append(errs, g.backend.Close())
	}
	g.reloadMu.Lock() // a reload in progress (SIGHUP, a watched file) adds to opened
	for _, a := range g.opened {
		a.close()
	}
	g.reloadMu.Unlock()
	return errors.Join(errs...)
}

// bearer makes the caller's bearer token the request's principal: the
// token is the credential forwarded upstream, and a hash of it is the
// subject that binds sealed state and tasks to this caller.
func (g *Gateway) bearer(r *http.Request) (mcp.Principal, bool) {
	tok, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return mcp.Principal{}, false
	}
	return g.callers.principal(tok), true
}

func bearerToken(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}
