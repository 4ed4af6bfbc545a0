package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/mcpgate/mcpgate/openapi"
)

// Config is everything the gateway is told: by a YAML file, by MCPGATE_*
// environment variables, and by flags, in rising order of precedence.
type Config struct {
	// Spec is the OpenAPI document: a file, an http(s) URL, or "-" for stdin.
	Spec string `yaml:"spec"`
	// Upstream is the base URL tool calls are sent to. Credentials are only
	// ever sent to its origin.
	Upstream string `yaml:"upstream"`
	// Demo serves the built-in demo API (Spec and Upstream are then set).
	Demo bool `yaml:"demo"`
	// Addr is the listen address (default 127.0.0.1:8080).
	Addr string `yaml:"addr"`
	// Path is the MCP endpoint path (default /mcp).
	Path string `yaml:"path"`
	// Store keeps tasks and used requestState ids: "sqlite:PATH" (default,
	// under the user's state directory), "postgres://…" (N replicas share
	// it) or "memory" (development only: all tasks are lost on restart).
	Store string `yaml:"store"`
	// TaskConcurrency bounds the task handlers running at once in this
	// process (default 16); TaskLease is how long a worker's claim on a task
	// lasts without renewal (default 30 s): another replica takes a task
	// over when its worker's lease lapses.
	TaskConcurrency int           `yaml:"task_concurrency"`
	TaskLease       time.Duration `yaml:"task_lease"`
	// StateKeys is the requestState key ring, "kid:BASE64KEY,…" (newest
	// first). Empty: MCPGATE_STATE_KEYS, else a random key (state then dies
	// with the process and cannot cross replicas).
	StateKeys string `yaml:"state_keys"`
	// Auth makes the gateway an OAuth resource server (mode "oauth"): every
	// request needs a valid access token issued for Auth.Resource.
	Auth AuthConfig `yaml:"auth"`
	// Credentials says how calls authenticate to the upstream.
	Credentials Credentials `yaml:"credentials"`
	// UpstreamTimeout bounds one upstream call (default 30 s).
	UpstreamTimeout time.Duration `yaml:"upstream_timeout"`
	// MaxResponseBytes caps an upstream response (default 1 MiB).
	MaxResponseBytes int64 `yaml:"max_response_bytes"`
	// AllowedHosts and AllowedOrigins are the DNS-rebinding guard (default:
	// loopback only). Set them when the gateway is reached by a public name.
	AllowedHosts   []string `yaml:"allowed_hosts"`
	AllowedOrigins []string `yaml:"allowed_origins"`
	// CheckOutput validates every upstream JSON response against the tool's
	// outputSchema; one that does not match becomes a tool error instead of
	// reaching the client (MCP requires structuredContent to match a
	// declared schema). Off by default: the outputSchema is the API's own
	// documented response, kept honest by redaction (seed 003), clients
	// validate structured output themselves, and the check costs about a
	// sixth of the gateway's throughput. Turn it on for APIs whose document
	// may drift from what they send.
	CheckOutput bool `yaml:"check_output"`
	// Confirm says which calls the user confirms first (when the client
	// supports elicitation): "destructive" (default), "writes" or "none".
	Confirm string `yaml:"confirm"`
	// DisableLegacy refuses initialize-based (2025-11-25 and older)
	// clients; by default they are served on the same endpoint.
	DisableLegacy bool `yaml:"disable_legacy"`
	// GCHeadroom is how far the Go heap may grow past what is live before
	// the garbage collector runs (default 32 MiB; negative: the runtime's
	// default, as when GOGC is set). A gateway keeps little alive, and the
	// runtime's 4 MiB minimum makes it collect every few milliseconds under
	// load; see package gctune. The process uses at most this much more
	// memory.
	GCHeadroom int64 `yaml:"gc_headroom"`
	// Log configures the structured log on stderr.
	Log LogConfig `yaml:"log"`
	// Tools selects and shapes the generated tools.
	Tools ToolsConfig `yaml:"tools"`
}

// AuthConfig configures OAuth resource-server mode.
type AuthConfig struct {
	// Mode is "none" (default: the bearer is not validated here, the
	// upstream decides) or "oauth".
	Mode string `yaml:"mode"`
	// Issuer is the authorization server; Resource this server's canonical
	// URL (tokens must name it in aud), e.g. https://mcp.example.com/mcp.
	Issuer   string `yaml:"issuer"`
	Resource string `yaml:"resource"`
	// Audiences are further accepted aud values.
	Audiences []string `yaml:"audiences"`
	// JWKSURL overrides the issuer's jwks_uri.
	JWKSURL string `yaml:"jwks_url"`
	// RequiredScopes are needed for every request (403 insufficient_scope).
	RequiredScopes []string `yaml:"required_scopes"`
	// TenantClaim names the claim that becomes the tenant (e.g. "tid").
	TenantClaim string `yaml:"tenant_claim"`
	// Introspection validates opaque tokens (RFC 7662).
	Introspection *Introspection `yaml:"introspection"`
	// ToolScopes overrides the scopes a tool needs (default: the oauth2 /
	// openIdConnect scopes of the operation's security requirements). A
	// caller sees and may call only the tools its scopes allow.
	ToolScopes map[string][]string `yaml:"tool_scopes"`
}

// Introspection is an RFC 7662 endpoint and this server's client
// credentials for it.
type Introspection struct {
	Endpoint     string `yaml:"endpoint"`
	ClientID     string `yaml:"client_id"`
	ClientSecret string `yaml:"client_secret"`
}

// Credentials configure the upstream authentication.
type Credentials struct {
	// Mode is "passthrough" (default: the caller's Authorization bearer is
	// forwarded, to the upstream origin only; with auth mode oauth only when
	// the token's audience covers the upstream), "exchange" (RFC 8693: the
	// caller's token is exchanged at the authorization server for one issued
	// to the upstream; needs auth mode oauth), "static" (secrets per OpenAPI
	// security scheme from Static or MCPGATE_SECRET_<SCHEME>) or "none".
	Mode string `yaml:"mode"`
	// UpstreamAudiences are aud values that count as the upstream for
	// passthrough (besides its URL and origin).
	UpstreamAudiences []string `yaml:"upstream_audiences"`
	// Exchange configures token exchange.
	Exchange Exchange `yaml:"exchange"`
	// Static maps a security scheme name to its secret; a value "env:NAME"
	// is read from the environment variable NAME. Basic auth takes
	// "user:password".
	Static map[string]string `yaml:"static"`
}

// Exchange configures RFC 8693 token exchange.
type Exchange struct {
	TokenEndpoint string `yaml:"token_endpoint"` // default: the issuer's
	ClientID      string `yaml:"client_id"`
	ClientSecret  string `yaml:"client_secret"` // or env:NAME
	Audience      string `yaml:"audience"`      // default: the upstream URL
	Scope         string `yaml:"scope"`
}

// LogConfig configures logging.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug, info (default), warn, error
	Format string `yaml:"format"` // text (default) or json
}

// ToolsConfig selects operations and overrides what is generated for them.
type ToolsConfig struct {
	IncludeMethods    []string `yaml:"include_methods"`
	ExcludeTags       []string `yaml:"exclude_tags"`
	IncludePaths      []string `yaml:"include_paths"`
	ExcludePaths      []string `yaml:"exclude_paths"`
	IncludeOperations []string `yaml:"include_operations"`
	ExcludeOperations []string `yaml:"exclude_operations"`
	MaxNameLength     int      `yaml:"max_name_length"`
	// Overrides per operation, keyed by operationId or "METHOD /path".
	Overrides map[string]Override `yaml:"overrides"`
	// Tasks lists operations (operationId or "METHOD /path") exposed as
	// task tools: a client that supports the Tasks extension gets a durable
	// task; an upstream 202 Accepted with Location is then polled to the end.
	Tasks []string `yaml:"tasks"`
}

// Override changes one generated tool.
type Override struct {
	Name            string   `yaml:"name"`
	Title           string   `yaml:"title"`
	Description     string   `yaml:"description"`
	Hide            bool     `yaml:"hide"`
	ReadOnlyHint    *bool    `yaml:"read_only"`
	DestructiveHint *bool    `yaml:"destructive"`
	IdempotentHint  *bool    `yaml:"idempotent"`
	OpenWorldHint   *bool    `yaml:"open_world"`
	RedactResponse  []string `yaml:"redact_response"`
	Task            bool     `yaml:"task"`
}

// LoadConfigFile reads a YAML config file; unknown keys are an error that
// names the file and the line.
func LoadConfigFile(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) { // an empty file is no error
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// EnvPrefix prefixes every environment variable the gateway reads.
const EnvPrefix = "MCPGATE_"

// ApplyEnv overlays the MCPGATE_* variables found by lookup.
func (c *Config) ApplyEnv(lookup func(string) (string, bool)) error {
	str := func(name string, dst *string) {
		if v, ok := lookup(EnvPrefix + name); ok && v != "" {
			*dst = v
		}
	}
	str("SPEC", &c.Spec)
	str("UPSTREAM", &c.Upstream)
	str("ADDR", &c.Addr)
	str("PATH", &c.Path)
	str("STORE", &c.Store)
	str("STATE_KEYS", &c.StateKeys)
	str("CREDENTIALS", &c.Credentials.Mode)
	str("CONFIRM", &c.Confirm)
	str("AUTH", &c.Auth.Mode)
	str("ISSUER", &c.Auth.Issuer)
	str("RESOURCE", &c.Auth.Resource)
	str("LOG_LEVEL", &c.Log.Level)
	str("LOG_FORMAT", &c.Log.Format)
	if v, ok := lookup(EnvPrefix + "DEMO"); ok && v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%sDEMO=%q: not a boolean", EnvPrefix, v)
		}
		c.Demo = b
	}
	if v, ok := lookup(EnvPrefix + "UPSTREAM_TIMEOUT"); ok && v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%sUPSTREAM_TIMEOUT=%q: %w", EnvPrefix, v, err)
		}
		c.UpstreamTimeout = d
	}
	if v, ok := lookup(EnvPrefix + "GC_HEADROOM"); ok && v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%sGC_HEADROOM=%q: not a number of bytes", EnvPrefix, v)
		}
		c.GCHeadroom = n
	}
	if v, ok := lookup(EnvPrefix + "ALLOWED_HOSTS"); ok && v != "" {
		c.AllowedHosts = splitList(v)
	}
	if v, ok := lookup(EnvPrefix + "ALLOWED_ORIGINS"); ok && v != "" {
		c.AllowedOrigins = splitList(v)
	}
	return nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// withDefaults fills what was not set and checks the result.
func (c Config) withDefaults() (Config, error) {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.Path == "" {
		c.Path = "/mcp"
	}
	if !strings.HasPrefix(c.Path, "/") {
		return c, fmt.Errorf("path %q must start with /", c.Path)
	}
	if c.Store == "" {
		c.Store = "sqlite:" + defaultStorePath()
	}
	if c.Credentials.Mode == "" {
		c.Credentials.Mode = "passthrough"
	}
	switch c.Credentials.Mode {
	case "passthrough", "static", "none":
	case "exchange":
		if c.Auth.Mode != "oauth" {
			return c, errors.New("credentials mode exchange needs auth mode oauth (a validated token to exchange)")
		}
	default:
		return c, fmt.Errorf("credentials mode %q: must be passthrough, exchange, static or none", c.Credentials.Mode)
	}
	switch c.Auth.Mode {
	case "", "none":
		c.Auth.Mode = "none"
	case "oauth":
		if c.Auth.Issuer == "" || c.Auth.Resource == "" {
			return c, errors.New("auth mode oauth needs an issuer (--issuer) and this server's resource URL (--resource)")
		}
	default:
		return c, fmt.Errorf("auth mode %q: must be none or oauth", c.Auth.Mode)
	}
	switch c.Confirm {
	case "":
		c.Confirm = "destructive"
	case "destructive", "writes", "none":
	default:
		return c, fmt.Errorf("confirm %q: must be destructive, writes or none", c.Confirm)
	}
	if c.UpstreamTimeout == 0 {
		c.UpstreamTimeout = 30 * time.Second
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = 1 << 20
	}
	if c.GCHeadroom == 0 {
		c.GCHeadroom = 32 << 20
	}
	if !c.Demo {
		if c.Spec == "" {
			return c, errors.New("no OpenAPI document: give --spec FILE|URL (or --demo)")
		}
		if c.Upstream == "" {
			return c, errors.New("no upstream: give --upstream URL (the API's base URL)")
		}
		u, err := url.Parse(c.Upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, fmt.Errorf("upstream %q: must be an absolute http(s) URL", c.Upstream)
		}
	}
	return c, nil
}

func defaultStorePath() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		if home, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(home, ".local", "state")
		} else {
			dir = os.TempDir()
		}
	}
	return filepath.Join(dir, "mcpgate", "mcpgate.db")
}

// generateOptions turns the tools section into generator options.
func (t ToolsConfig) generateOptions() openapi.GenerateOptions {
	o := openapi.GenerateOptions{
		IncludeMethods: t.IncludeMethods, ExcludeTags: t.ExcludeTags,
		IncludePaths: t.IncludePaths, ExcludePaths: t.ExcludePaths,
		IncludeOperations: t.IncludeOperations, ExcludeOperations: t.ExcludeOperations,
		MaxNameLength: t.MaxNameLength,
	}
	if len(t.Overrides) > 0 {
		o.Overrides = make(map[string]openapi.Override, len(t.Overrides))
		for k, v := range t.Overrides {
			o.Overrides[k] = openapi.Override{
				Name: v.Name, Title: v.Title, Description: v.Description, Hide: v.Hide,
				ReadOnlyHint: v.ReadOnlyHint, DestructiveHint: v.DestructiveHint,
				IdempotentHint: v.IdempotentHint, OpenWorldHint: v.OpenWorldHint,
				RedactResponse: v.RedactResponse, Task: v.Task,
			}
		}
	}
	return o
}
