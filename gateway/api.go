package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/demo"
	"github.com/mcpgate/mcpgate/discovery"
	"github.com/mcpgate/mcpgate/internal/settings"
	"github.com/mcpgate/mcpgate/openapi"
	"github.com/mcpgate/mcpgate/proxy"
)

// APIConfig is one API behind the endpoint: its document, its upstream, how
// calls authenticate to it and how its tools are made. With several APIs,
// each tool's name is the API's name, "_" and the tool's own name.
type APIConfig struct {
	// Name is the API's short name, the prefix of its tools' names: letters,
	// digits and "-", at most 24 (empty only for the single API of the
	// top-level spec and upstream settings).
	Name string `yaml:"name"`
	// Spec is the OpenAPI document: a file, an http(s) URL, or - for stdin.
	Spec string `yaml:"spec"`
	// Upstream is the API's base URL: with OperationServers, the only
	// origins its calls, and their credentials, ever reach.
	Upstream string `yaml:"upstream"`
	// OperationServers are the other origins the document's per-operation
	// servers may send this API's calls, and their credentials, to.
	OperationServers []string `yaml:"operation_servers"`
	// Credentials say how calls authenticate to this API.
	Credentials Credentials `yaml:"credentials"`
	// Tools select and shape this API's tools.
	Tools ToolsConfig `yaml:"tools"`
	// Scopes, with auth mode oauth, are needed for every tool of this API,
	// besides what the document's security requirements ask.
	Scopes []string `yaml:"scopes"`
}

var apiName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,23}$`)

// apiConfigs are the APIs cfg describes: the apis list, or the single API
// of the top-level spec, upstream, credentials and tools settings.
func (c *Config) apiConfigs() ([]APIConfig, error) {
	if len(c.APIs) == 0 {
		return []APIConfig{{Spec: c.Spec, Upstream: c.Upstream, OperationServers: c.OperationServers,
			Credentials: c.Credentials, Tools: c.Tools.ToolsConfig}}, nil
	}
	if c.Spec != "" || c.Upstream != "" || c.Demo || len(c.OperationServers) > 0 {
		return nil, errors.New("give either spec and upstream (one API) or apis (several), not both")
	}
	seen := map[string]bool{}
	out := make([]APIConfig, len(c.APIs))
	for i, a := range c.APIs {
		if !apiName.MatchString(a.Name) {
			return nil, fmt.Errorf("apis[%d]: name %q: want 1 to 24 letters, digits or -, the prefix of its tools' names", i, a.Name)
		}
		if seen[strings.ToLower(a.Name)] {
			return nil, fmt.Errorf("apis[%d]: name %q is used twice", i, a.Name)
		}
		seen[strings.ToLower(a.Name)] = true
		if err := settings.ApplyDefaults(&a.Credentials); err != nil {
			return nil, err
		}
		if err := settings.ApplyDefaults(&a.Tools); err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

// check reports what cannot work in an API's settings.
func (a *APIConfig) check(authMode string) error {
	if a.Spec == "" {
		return errors.New("no OpenAPI document: give --spec FILE|URL (or --demo)")
	}
	if a.Upstream == "" {
		return errors.New("no upstream: give --upstream URL (the API's base URL)")
	}
	u, err := url.Parse(a.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("upstream %q: must be an absolute http(s) URL", a.Upstream)
	}
	for i, o := range a.OperationServers {
		if _, err := originSetting(o); err != nil {
			return fmt.Errorf("operation_servers[%d] %q: %w", i, o, err)
		}
	}
	if err := oneOf("credentials mode", a.Credentials.Mode, "passthrough", "exchange", "static", "oauth", "none"); err != nil {
		return err
	}
	if a.Credentials.Mode == "exchange" && authMode != "oauth" {
		return errors.New("credentials mode exchange needs auth mode oauth (a validated token to exchange)")
	}
	return a.Tools.Check()
}

// label names the API in messages and logs.
func (a *APIConfig) label() string {
	if a.Name == "" {
		return a.Spec
	}
	return a.Name + " (" + a.Spec + ")"
}

// An api is one upstream behind the endpoint, built: its generated tools
// (named as served), the proxy that is the only client ever to reach its
// origin, and what decides the credential its calls carry.
type api struct {
	cfg    APIConfig
	result *openapi.Result
	tools  []openapi.Tool // result.Tools with their served names (result.Tools itself without a prefix)
	base   *url.URL
	proxy  *proxy.Proxy
	// servers are the proxies of the operations whose own servers the
	// settings allow (operation_servers, or the upstream's origin with
	// another path), by served tool name; every other tool is the proxy's.
	servers map[string]*proxy.Proxy
	creds   *credentials
	stop    func() // stops the in-process demo API, if this is it

	// searchDocs are the API's entries in discovery's index and pinned the
	// tools listed beside search, describe and call; both made while the
	// document is at hand (it is not kept: big documents are big).
	searchDocs    []discovery.Doc
	pinned        []string
	unmatchedPins []string

	statusOnce sync.Once         // statusEps
	statusEps  []*proxy.Endpoint // every tool compiled, to name the tool that reads an operation's status
}

// loadAPI loads an API's document and generates its tools; buildProxy
// then builds what calls it (after the connector, which needs every API's
// document, when users connect their own accounts).
func (g *Gateway) loadAPI(ctx context.Context, cfg APIConfig) (*api, error) {
	a := &api{cfg: cfg}
	if err := g.generate(ctx, a); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

// track remembers a for Close when it runs something in-process. Only
// those: a reload loads every changed API again, and remembering each would
// keep every version of every document alive.
func (g *Gateway) track(a *api) {
	if a.stop != nil {
		g.opened = append(g.opened, a)
	}
}

// close stops what the API runs in-process (the demo).
func (a *api) close() {
	if a.stop != nil {
		a.stop()
	}
}

func (g *Gateway) generate(ctx context.Context, a *api) error {
	doc, err := g.loadDocument(ctx, a)
	if err != nil {
		return err
	}
	opts := a.cfg.Tools.GenerateOptions()
	if a.cfg.Name != "" {
		opts.MaxNameLength = max(16, min(opts.MaxNameLength, 64)-len(a.cfg.Name)-1)
	}
	// What search reads from the operations is read as generation walks
	// them: the path items are built meanwhile (DeferPaths) and dropped
	// once their tools are made, so that a large document is never held
	// whole beside its tools (Microsoft Graph's operations hold some 70 MB).
	ops := discovery.Operations{}
	opts.OnPathItem = ops.Read
	opts.Consume = true
	if a.result, err = openapi.GenerateContext(ctx, doc, opts); err != nil {
		if _, ok := errors.AsType[*openapi.LoadError](err); ok {
			return err // a problem of the document, found in a path item built late
		}
		return fmt.Errorf("generate tools from %s: %w", a.cfg.Spec, err)
	}
	if n := len(a.result.Warnings); n > 0 {
		g.logger.Info("the OpenAPI document has problems that did not stop generation", "api", a.cfg.Name, "spec", a.cfg.Spec, "warnings", n, "first", a.result.Warnings[0])
	}
	a.tools = a.result.Tools // served as generated: one API, no prefix (Graph's 11,422 tools are 4 MB)
	if a.cfg.Name != "" {
		a.tools = slices.Clone(a.result.Tools)
		for i := range a.tools {
			a.tools[i].Name = a.toolName(a.tools[i].Name)
		}
	}
	a.base, err = url.Parse(a.cfg.Upstream)
	if err != nil {
		return fmt.Errorf("upstream %q: %w", a.cfg.Upstream, err)
	}
	a.searchDocsOf(ops)
	return nil
}

// buildProxy builds the API's proxy, the only client that ever reaches its
// origin, and its credential decision.
func (g *Gateway) buildProxy(ctx context.Context, a *api) error {
	resolver, err := g.upstreamAuth(a)
	if err != nil {
		return err
	}
	var rt http.RoundTripper = statusRecorder{proxy.NewTransport()}
	if a.cfg.Credentials.Mode == "oauth" {
		rt = g.conn.Transport(rt) // an upstream 401 renews the user's grant or asks again
	}
	pc := proxy.Config{
		BaseURL:          a.base,
		Transport:        g.ops.tracer.Transport(rt),
		Timeout:          g.cfg.UpstreamTimeout,
		MaxResponseBytes: g.cfg.MaxResponseBytes,
		CheckOutput:      g.cfg.CheckOutput,
		Auth:             resolver,
		Logger:           g.logger,
	}
	if a.proxy, err = proxy.New(pc); err != nil {
		return err
	}
	if err := g.buildServerProxies(a, pc); err != nil {
		return err
	}
	a.creds, err = g.newCredentials(ctx, a)
	return err
}

// displayName names the API in reports: its name, or "api" for the single
// API.
func (a *api) displayName() string {
	if a.cfg.Name == "" {
		return "api"
	}
	return a.cfg.Name
}

// connectName names the API in the connect pages' paths and in its users'
// grants.
func (a *api) connectName() string { return a.displayName() }

// toolName is the served name of one of the API's tools.
func (a *api) toolName(name string) string {
	if a.cfg.Name == "" {
		return name
	}
	return a.cfg.Name + "_" + name
}

// loadDocument reads the API's document; for the demo it starts the demo
// API in-process and points the API's upstream at it.
func (g *Gateway) loadDocument(ctx context.Context, a *api) (*openapi.Document, error) {
	if !g.cfg.Demo {
		return openapi.Load(ctx, a.cfg.Spec, openapi.LoadOptions{DeferPaths: true})
	}
	// The demo API requires the token demo-token, as a real API would
	// require its own: what authorizes a call is the caller's credential.
	h := demo.New(demo.Options{RequireAuth: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo API: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	a.stop = func() { _ = srv.Close() }
	a.cfg.Upstream, a.cfg.Spec = "http://"+ln.Addr().String(), "demo"
	g.logger.Info("demo API started", "upstream", a.cfg.Upstream)
	return openapi.Parse(ctx, demo.OpenAPI(), "demo", openapi.LoadOptions{DeferPaths: true})
}

// upstreamAuth is what the proxy puts on each request by itself: the
// caller's credential (passthrough and exchange put it in the context),
// the user's own grant (oauth), the API's own secrets per security scheme
// (static), or nothing.
func (g *Gateway) upstreamAuth(a *api) (proxy.AuthResolver, error) {
	switch a.cfg.Credentials.Mode {
	case "none":
		return proxy.None(), nil
	case "oauth":
		return g.conn.AuthResolver(a.connectName()), nil
	case "static":
		secrets := map[string]string{}
		for scheme, v := range a.cfg.Credentials.Static {
			s, err := secretValue(v)
			if err != nil {
				return nil, fmt.Errorf("credentials of %s: scheme %q: %w", a.cfg.label(), scheme, err)
			}
			secrets[scheme] = s
		}
		// MCPGATE_SECRET_<SCHEME>, or with several APIs
		// MCPGATE_SECRET_<API>_<SCHEME>: each API's secrets are its own.
		prefix := EnvPrefix + "SECRET_"
		if a.cfg.Name != "" {
			prefix += strings.ToUpper(strings.ReplaceAll(a.cfg.Name, "-", "_")) + "_"
		}
		fromEnv, err := proxy.StaticFromEnv(a.result.SecuritySchemes, prefix, os.LookupEnv)
		if err != nil {
			return nil, fmt.Errorf("credentials of %s: %w", a.cfg.label(), err)
		}
		static, err := proxy.Static(a.result.SecuritySchemes, secrets)
		if err != nil {
			return nil, fmt.Errorf("credentials of %s: %w", a.cfg.label(), err)
		}
		return proxy.Chain(static, fromEnv), nil
	default:
		return proxy.Passthrough(), nil
	}
}

// isTaskTool reports whether one of the API's tools (t, as generated) is
// served as a task tool.
func (a *api) isTaskTool(t *openapi.Tool) bool {
	return t.Task || slices.ContainsFunc(a.cfg.Tools.Tasks, func(e string) bool { return namesTool(e, t) })
}

// unmatchedTasks are the entries of tools.tasks that name none of the
// API's tools: a misspelt or filtered-out operation, said at start
// rather than silently served as an ordinary tool.
func (a *api) unmatchedTasks() []string {
	var out []string
	for _, e := range a.cfg.Tools.Tasks {
		if !slices.ContainsFunc(a.result.Tools, func(t openapi.Tool) bool { return namesTool(e, &t) }) {
			out = append(out, e)
		}
	}
	return out
}

// namesTool reports whether a settings entry names the generated tool t:
// by its operationId, its name or "METHOD /path" (the path as the
// document writes it, the method in any case).
func namesTool(entry string, t *openapi.Tool) bool {
	entry = strings.TrimSpace(entry)
	if entry == t.Name || (t.Route.OperationID != "" && entry == t.Route.OperationID) {
		return true
	}
	method, path, ok := strings.Cut(entry, " ")
	return ok && strings.EqualFold(method, t.Route.Method) &&
		strings.TrimSpace(path) == cmp.Or(t.Route.DocPath, t.Route.Path)
}
