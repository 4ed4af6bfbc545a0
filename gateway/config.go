package gateway

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/internal/settings"
	"github.com/mcpgate/mcpgate/openapi"
	"github.com/mcpgate/mcpgate/policy"
	"github.com/mcpgate/mcpgate/quota"
)

// Config is everything the gateway is told. It is also the one table of the
// product's settings (package internal/settings): each field's tags give its
// YAML key, its flag (the key with dashes, after its section's prefix), its
// MCPGATE_* environment variable, its default and its help, and `mcpgate
// serve --help` and docs/settings.md are made from them.
// Programs that build a Config themselves get the same defaults from New.
type Config struct {
	// Spec is the OpenAPI document.
	Spec string `yaml:"spec" name:"spec" placeholder:"FILE|URL" help:"OpenAPI document: a file, an http(s) URL, or - for stdin."`
	// Upstream is the base URL tool calls are sent to. Credentials are only
	// ever sent to its origin, and to those OperationServers names.
	Upstream string `yaml:"upstream" name:"upstream" placeholder:"URL" help:"Base URL of the API the tools call, e.g. https://api.example.com/v1 (include a Swagger 2.0 basePath). Credentials are only ever sent to its origin (and to those of operation_servers)."`
	// OperationServers are the origins, besides the upstream's, that the
	// document's per-operation servers may send calls (and credentials) to.
	OperationServers []string `yaml:"operation_servers" name:"operation-servers" placeholder:"ORIGINS" help:"Origins besides the upstream's that calls may go to when the document gives an operation servers of its own (GitHub's release uploads, https://uploads.github.com), comma-separated. Those calls carry the same credentials. An operation whose servers are on no allowed origin is called on the upstream."`
	// Demo serves the built-in demo API (Spec and Upstream are then set).
	Demo bool `yaml:"demo" name:"demo" help:"Serve the built-in demo API (no spec or upstream needed)."`
	// APIs are several APIs behind the one endpoint, instead of Spec,
	// Upstream, Credentials and Tools.
	APIs []APIConfig `yaml:"apis" name:"apis" type:"yaml" placeholder:"YAML" help:"Several APIs behind one endpoint, instead of spec and upstream: a list of {name, spec, upstream, operation_servers, credentials, tools, scopes}. Each API's tools are named <name>_<tool>; its credentials go to it alone."`

	Addr           string   `yaml:"addr" name:"addr" default:"127.0.0.1:8080" help:"Listen address (serve)."`
	Path           string   `yaml:"path" name:"path" default:"/mcp" help:"MCP endpoint path (serve)."`
	AllowedHosts   []string `yaml:"allowed_hosts" name:"allowed-hosts" help:"Host names accepted, comma-separated (the DNS-rebinding guard; default: loopback only; * for any). Set it when the gateway is reached by a public name."`
	AllowedOrigins []string `yaml:"allowed_origins" name:"allowed-origins" help:"Browser Origins accepted, comma-separated (default: loopback only)."`
	// DisableLegacy refuses initialize-based (2025-11-25 and older) clients.
	DisableLegacy bool `yaml:"disable_legacy" name:"disable-legacy" aliases:"no-legacy" env:"MCPGATE_DISABLE_LEGACY,MCPGATE_NO_LEGACY" help:"Refuse 2025-11-25 (initialize-based) clients; by default they are served on the same endpoint."`

	// Store keeps tasks and used requestState ids.
	Store string `yaml:"store" name:"store" placeholder:"URL" help:"Task and state store: sqlite:PATH (default: mcpgate.db under the user's state directory, ~/.local/state/mcpgate), postgres://... (replicas share it) or memory (development only: tasks are lost on restart)."`
	// StateKeys is the requestState key ring.
	StateKeys       string        `yaml:"state_keys" name:"state-keys" placeholder:"KID:BASE64,..." help:"Key ring that seals requestState, kid:BASE64KEY,... newest first; share it between replicas. Without it a random key is made and paused requests die with the process."`
	TaskConcurrency int           `yaml:"task_concurrency" name:"task-concurrency" default:"16" help:"Task handlers running at once in this process."`
	TaskLease       time.Duration `yaml:"task_lease" name:"task-lease" default:"30s" help:"How long a worker's claim on a task lasts without renewal; another replica takes a task over when it lapses."`
	// TaskShutdownGrace is how long a stopping gateway lets running tasks
	// finish before it stops them and releases their leases.
	// TaskCredentials says where a task keeps the credential its worker
	// forwards; TaskInlineWait how long a client without the Tasks
	// extension waits inside its call for an operation the API accepted.
	TaskCredentials   string        `yaml:"task_credentials" name:"task-credentials" default:"store" enum:"store,memory" help:"Where a task keeps the caller's credential (passthrough and exchange) for its worker: store (sealed with AES-256-GCM under the state keys, deleted when the task ends, so a replica that takes the task over after a crash finishes it as the caller) or memory (never stored: such a task then ends with a tool error asking to call again)."`
	TaskInlineWait    time.Duration `yaml:"task_inline_wait" name:"task-inline-wait" default:"45s" help:"For a client without the Tasks extension, how long a call waits for an operation the API accepted (202), polling it, before it answers that the operation is still running and which tool reads its status (a negative value: answer at once)."`
	TaskShutdownGrace time.Duration `yaml:"task_shutdown_grace" name:"task-shutdown-grace" default:"30s" help:"On SIGINT or SIGTERM (or the end of stdin), how long running tasks may finish before they are stopped and their leases released, so that another replica or the next start resumes them (a negative value: stop them at once)."`

	UpstreamTimeout  time.Duration `yaml:"upstream_timeout" name:"upstream-timeout" default:"30s" help:"Bound on one upstream call, redirects and body included."`
	MaxResponseBytes int64         `yaml:"max_response_bytes" name:"max-response-bytes" default:"1048576" help:"Cap on an upstream response body, in bytes."`
	// CheckOutput validates every upstream JSON response against the tool's
	// outputSchema; one that does not match becomes a tool error instead of
	// reaching the client (MCP requires structuredContent to match a
	// declared schema). Off by default: the outputSchema is the API's own
	// documented response, clients validate structured output themselves,
	// and the check costs about a sixth of the gateway's throughput.
	CheckOutput bool `yaml:"check_output" name:"check-output" help:"Validate every upstream JSON response against the tool's outputSchema; a mismatch becomes a tool error (costs ~10-15 µs per call)."`
	// Confirm says which calls the user confirms first; ConfirmFallback
	// what happens to them when the client cannot ask (no elicitation).
	Confirm         string `yaml:"confirm" name:"confirm" default:"destructive" enum:"destructive,writes,none" help:"Calls the user confirms before they are sent: destructive (DELETE, and PUT/PATCH not marked otherwise), writes (every mutating call) or none."`
	ConfirmFallback string `yaml:"confirm_fallback" name:"confirm-fallback" default:"allow" enum:"allow,deny" help:"For a client that cannot ask its user (it declared no elicitation), a call that needs confirmation is sent anyway (allow) or refused (deny)."`
	// GCHeadroom is how far the Go heap may grow past what is live before
	// the garbage collector runs (see package gctune).
	GCHeadroom int64 `yaml:"gc_headroom" name:"gc-headroom" default:"33554432" help:"Bytes the heap may grow past what is live before Go collects (-1: the runtime's default; ignored when GOGC is set)."`

	// Reload says which changes of the APIs' documents are applied live;
	// ReloadInterval how often documents given as URLs are polled.
	Reload         string        `yaml:"reload" name:"reload" default:"additive" enum:"auto,additive,manual" help:"Live reload of the APIs' documents (files are watched, URLs polled, SIGHUP reloads everything, the config file included): auto applies every change; additive refuses a breaking change (a tool removed or renamed, a required argument added, ...: logged and counted) and applies the others; manual applies changes only on SIGHUP."`
	ReloadInterval time.Duration `yaml:"reload_interval" name:"reload-interval" default:"1m" help:"How often documents given as http(s) URLs are polled for a change (conditional requests: If-None-Match, If-Modified-Since)."`
	// Replica names this process in audit records and traces (default: the
	// host name).
	Replica string `yaml:"replica" name:"replica" help:"Names this process in audit records and traces (default: the host name)."`
	// Tracing turns OpenTelemetry tracing on; the OTEL_* variables
	// configure it (and turn it on by themselves, see package telemetry).
	Tracing bool `yaml:"tracing" name:"tracing" help:"Export OpenTelemetry traces over OTLP/HTTP even without OTEL_EXPORTER_OTLP_ENDPOINT (which turns them on by itself); OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn them off."`
	// Policy and Quotas are rules over the caller, the tool and the
	// arguments (packages policy and quota).
	Policy          []policy.Rule `yaml:"policy" name:"policy" type:"yaml" placeholder:"YAML" help:"Rules [{when: CEL, effect: allow|deny|confirm}] over caller.subject, caller.scopes, caller.claims, tool.name, tool.api, tool.method, tool.path, tool.annotations and args; the first match decides, no match allows; a tool no rule can allow for a caller is hidden from it."`
	Quotas          []quota.Rule  `yaml:"quotas" name:"quotas" type:"yaml" placeholder:"YAML" help:"Token buckets [{when: CEL, per: caller|tool|global, limit: N, window: 1m}]; a call over a limit is a tool error saying when to retry. With PostgreSQL a quota holds across all replicas."`
	QuotaFailClosed bool          `yaml:"quota_fail_closed" name:"quota-fail-closed" help:"Refuse calls while the shared quota store (PostgreSQL) cannot be reached; by default they are let through and the error is logged."`
	Audit           AuditConfig   `yaml:"audit" embed:"" prefix:"audit-"`
	Connect         ConnectConfig `yaml:"connect" embed:"" prefix:"connect-"`
	Limits          LimitsConfig  `yaml:"limits" embed:"" prefix:"limits-"`
	Log             LogConfig     `yaml:"log" embed:"" prefix:"log-"`
	Auth            AuthConfig    `yaml:"auth" embed:"" prefix:"auth-"`
	Credentials     Credentials   `yaml:"credentials" embed:"" prefix:"credentials-"`
	Tools           ServedTools   `yaml:"tools" embed:"" prefix:"tools-"`
}

// AuditConfig configures the audit record of every tools/call and task
// change (package audit).
type AuditConfig struct {
	Sink             string        `yaml:"sink" name:"sink" aliases:"audit" env:"MCPGATE_AUDIT_SINK,MCPGATE_AUDIT" placeholder:"stdout|file:PATH|store" help:"Where audit records go: stdout or file:PATH (JSON lines), or store (a table of the task store, listed by mcpgate audit); empty: no audit."`
	IncludeArguments bool          `yaml:"include_arguments" name:"include-arguments" help:"Keep each call's arguments in its record (credential-like members redacted); by default only their SHA-256 digest."`
	Retention        time.Duration `yaml:"retention" name:"retention" default:"720h" help:"With the store sink, how long records are kept (a negative value: forever)."`
}

// LimitsConfig bounds what clients can hold open: 2025-11-25 sessions and
// subscriptions/listen streams, each in total, per client address and per
// caller, so that a flood from one address (even with a fresh bearer on
// every request) locks nobody else out.
type LimitsConfig struct {
	Sessions           int           `yaml:"sessions" name:"sessions" default:"10000" help:"Most 2025-11-25 sessions alive at once; when full, the oldest session that never sent a second request is closed to make room."`
	SessionsPerAddress int           `yaml:"sessions_per_address" name:"sessions-per-address" default:"1000" help:"Most sessions per client address (an IPv4 address or an IPv6 /64)."`
	SessionsPerCaller  int           `yaml:"sessions_per_caller" name:"sessions-per-caller" default:"100" help:"Most sessions per caller (bearer or validated subject)."`
	SessionIdle        time.Duration `yaml:"session_idle" name:"session-idle" default:"30m" help:"A session unused this long ends."`
	Streams            int           `yaml:"streams" name:"streams" default:"10000" help:"Most subscriptions/listen streams open at once."`
	StreamsPerAddress  int           `yaml:"streams_per_address" name:"streams-per-address" default:"256" help:"Most listen streams per client address."`
	StreamsPerCaller   int           `yaml:"streams_per_caller" name:"streams-per-caller" default:"32" help:"Most listen streams per caller."`
	TrustedProxies     []string      `yaml:"trusted_proxies" name:"trusted-proxies" help:"Proxies (addresses or CIDR prefixes, comma-separated) whose X-Forwarded-For names the client address for these limits; default none: the TCP peer is the client."`
	TasksPerCaller     int           `yaml:"tasks_per_caller" name:"tasks-per-caller" default:"100" help:"Most tasks in progress (working or waiting for input) one caller may have, counted in the store (so across replicas); past it a task tool answers a tool error asking to wait (a negative value: no bound)."`
}

// LogConfig configures the structured log on stderr.
type LogConfig struct {
	Level  string `yaml:"level" name:"level" default:"info" enum:"debug,info,warn,error" help:"Log level: debug, info, warn or error."`
	Format string `yaml:"format" name:"format" default:"text" enum:"text,json" help:"Log format: text or json (every line is then one JSON object)."`
}

// AuthConfig configures OAuth resource-server mode.
type AuthConfig struct {
	// Mode "oauth" makes every request need a valid access token issued
	// for Resource.
	Mode   string `yaml:"mode" name:"mode" aliases:"auth" env:"MCPGATE_AUTH_MODE,MCPGATE_AUTH" default:"none" enum:"none,oauth" help:"none: the bearer is not validated here, the upstream decides; oauth: validate every request's bearer JWT (or introspect it) as an OAuth resource server."`
	Issuer string `yaml:"issuer" name:"issuer" aliases:"issuer" env:"MCPGATE_AUTH_ISSUER,MCPGATE_ISSUER" placeholder:"URL" help:"With auth mode oauth: the authorization server's issuer URL."`
	// Resource is this server's canonical URL (tokens must name it in aud).
	Resource  string   `yaml:"resource" name:"resource" aliases:"resource" env:"MCPGATE_AUTH_RESOURCE,MCPGATE_RESOURCE" placeholder:"URL" help:"With auth mode oauth: this server's canonical URL (tokens must be issued for it), e.g. https://mcp.example.com/mcp."`
	Audiences []string `yaml:"audiences" name:"audiences" help:"Further accepted aud values, comma-separated."`
	JWKSURL   string   `yaml:"jwks_url" name:"jwks-url" aliases:"jwks-url" placeholder:"URL" help:"The JWK Set URL (default: the issuer's jwks_uri)."`
	// RequiredScopes are needed for every request (403 insufficient_scope).
	RequiredScopes []string `yaml:"required_scopes" name:"required-scopes" aliases:"required-scopes" help:"Scopes every request needs, comma-separated."`
	TenantClaim    string   `yaml:"tenant_claim" name:"tenant-claim" help:"The claim that becomes the caller's tenant (e.g. tid)."`
	// StartupTimeout bounds how long an unreachable issuer is retried at
	// start (identity providers and gateways often start together).
	StartupTimeout time.Duration `yaml:"startup_timeout" name:"startup-timeout" default:"30s" help:"How long an unreachable issuer, JWKS or token endpoint is retried at start, with backoff, before the gateway gives up (a negative value: do not retry)."`
	// Introspection validates opaque tokens (RFC 7662).
	Introspection Introspection `yaml:"introspection" embed:"" prefix:"introspection-"`
	// ToolScopes overrides the scopes a tool needs (default: the oauth2 /
	// openIdConnect scopes of the operation's security requirements).
	ToolScopes map[string][]string `yaml:"tool_scopes" name:"tool-scopes" type:"yaml" placeholder:"YAML" help:"Scopes a tool needs, by tool name, overriding the document's security requirements; a caller sees and may call only the tools its scopes allow."`
}

// Introspection is an RFC 7662 endpoint and this server's client
// credentials for it.
type Introspection struct {
	Endpoint     string `yaml:"endpoint" name:"endpoint" placeholder:"URL" help:"RFC 7662 introspection endpoint for opaque tokens."`
	ClientID     string `yaml:"client_id" name:"client-id" help:"This server's client id at the introspection endpoint."`
	ClientSecret string `yaml:"client_secret" name:"client-secret" help:"Its client secret, or env:NAME to read it from the variable NAME."`
}

// Credentials configure the upstream authentication.
type Credentials struct {
	Mode string `yaml:"mode" name:"mode" aliases:"credentials" env:"MCPGATE_CREDENTIALS_MODE,MCPGATE_CREDENTIALS" default:"passthrough" enum:"passthrough,exchange,static,oauth,none" help:"passthrough: forward the caller's bearer to the upstream origin only (with auth mode oauth only when its audience covers the upstream); exchange: trade it (RFC 8693) for one issued to the upstream; static: fill the document's security schemes from credentials.static or MCPGATE_SECRET_<SCHEME>; oauth: each user connects their own account at the API (credentials.oauth, connect.base_url); none."`
	// UpstreamAudiences count as the upstream for passthrough.
	UpstreamAudiences []string    `yaml:"upstream_audiences" name:"upstream-audiences" help:"aud values that count as the upstream for passthrough (besides its URL and origin), comma-separated."`
	Exchange          Exchange    `yaml:"exchange" embed:"" prefix:"exchange-"`
	OAuth             OAuthClient `yaml:"oauth" embed:"" prefix:"oauth-"`
	// Static maps a security scheme name to its secret.
	Static map[string]string `yaml:"static" name:"static" type:"yaml" placeholder:"YAML" help:"Secret per OpenAPI security scheme name for mode static; a value env:NAME is read from the variable NAME; basic auth takes user:password."`
}

// Exchange configures RFC 8693 token exchange.
type Exchange struct {
	TokenEndpoint string `yaml:"token_endpoint" name:"token-endpoint" placeholder:"URL" help:"Token endpoint for exchange (default: the issuer's)."`
	ClientID      string `yaml:"client_id" name:"client-id" help:"This server's client id for token exchange."`
	ClientSecret  string `yaml:"client_secret" name:"client-secret" help:"Its client secret, or env:NAME."`
	Audience      string `yaml:"audience" name:"audience" help:"Audience to ask for (default: the upstream URL)."`
	Scope         string `yaml:"scope" name:"scope" help:"Scope to ask for."`
}

// OAuthClient is the gateway's registration as an OAuth client of an
// API's authorization server (credentials mode oauth): each user grants
// the gateway access to their own account there once (package connect).
type OAuthClient struct {
	ClientID      string            `yaml:"client_id" name:"client-id" help:"With credentials mode oauth: the gateway's client id at the API's authorization server."`
	ClientSecret  string            `yaml:"client_secret" name:"client-secret" help:"Its client secret, or env:NAME (empty: a public client, PKCE only)."`
	Scheme        string            `yaml:"scheme" name:"scheme" help:"The document's oauth2 security scheme to use (default: its only one with an authorizationCode flow)."`
	AuthURL       string            `yaml:"auth_url" name:"auth-url" placeholder:"URL" help:"Authorization endpoint (default: the scheme's authorizationUrl)."`
	TokenURL      string            `yaml:"token_url" name:"token-url" placeholder:"URL" help:"Token endpoint (default: the scheme's tokenUrl)."`
	RevocationURL string            `yaml:"revocation_url" name:"revocation-url" placeholder:"URL" help:"RFC 7009 revocation endpoint, told when a user disconnects."`
	Issuer        string            `yaml:"issuer" name:"issuer" placeholder:"URL" help:"The authorization server's issuer: a callback naming another (RFC 9207 iss) is refused."`
	Scopes        []string          `yaml:"scopes" name:"scopes" help:"Scopes to ask for, comma-separated (default: those the document's operations require for the scheme)."`
	AuthParams    map[string]string `yaml:"auth_params" name:"auth-params" type:"yaml" placeholder:"YAML" help:"Extra parameters of the authorization request (e.g. {access_type: offline})."`
	Title         string            `yaml:"title" name:"title" help:"How pages and messages name the API (default: its name)."`
}

// ConnectConfig configures the pages where users connect their accounts
// (credentials mode oauth).
type ConnectConfig struct {
	BaseURL       string        `yaml:"base_url" name:"base-url" placeholder:"URL" help:"The gateway's public URL (https, or http on loopback): users connect their accounts at BASE/connect/<api>, and each API's redirect URI is BASE/connect/<api>/callback."`
	LinkTTL       time.Duration `yaml:"link_ttl" name:"link-ttl" default:"10m" help:"How long a connect link and a started authorization stay usable."`
	RefreshMargin time.Duration `yaml:"refresh_margin" name:"refresh-margin" default:"1m" help:"An access token expiring within this is refreshed before use."`
	RefreshLease  time.Duration `yaml:"refresh_lease" name:"refresh-lease" default:"30s" help:"How long one replica may hold the right to refresh a grant before another may try."`
	Login         ConnectLogin  `yaml:"login" embed:"" prefix:"login-"`
}

// ConnectLogin makes the connect page sign the browser in at the identity
// provider of auth mode oauth and check it is the caller the link is for.
type ConnectLogin struct {
	ClientID     string `yaml:"client_id" name:"client-id" help:"With auth mode oauth: the gateway's login client at the issuer; the connect page then signs the browser in and goes on only for the caller the link was made for (recommended). Its redirect URI is BASE/connect/.login."`
	ClientSecret string `yaml:"client_secret" name:"client-secret" help:"Its client secret, or env:NAME."`
	AuthURL      string `yaml:"auth_url" name:"auth-url" placeholder:"URL" help:"The issuer's authorization endpoint (default: from its metadata)."`
	TokenURL     string `yaml:"token_url" name:"token-url" placeholder:"URL" help:"The issuer's token endpoint (default: from its metadata)."`
}

// ServedTools is the top-level tools section: the single API's tool
// settings, and how the endpoint serves its tools (for every API).
type ServedTools struct {
	ToolsConfig `yaml:",inline" embed:""`
	// Mode says how tools/list is served: every tool, or the discovery
	// tools (search, describe, call) and the pinned ones.
	Mode   string `yaml:"mode" name:"mode" default:"auto" enum:"all,discovery,auto" help:"How tools/list is served: all (every operation a tool), discovery (the tools search, describe and call, plus the pinned ones; every tool stays callable by name) or auto (discovery when the full list would exceed tools.budget)."`
	Budget int    `yaml:"budget" name:"budget" default:"20000" help:"With tools.mode auto, the most tokens (estimated as bytes/4) the full tools/list may take before discovery is served instead."`
	// Thesaurus names a file of the operator's own words for the
	// operations, added to discovery's domain thesaurus.
	Thesaurus  string           `yaml:"thesaurus" name:"thesaurus" placeholder:"FILE" help:"A file of your users' words for your API's operations, added to the domain thesaurus of discovery's search: lines \"phrase = words\" (the phrase is read as the words; nothing after = leaves it out) and \"word: words\" (the words may stand for the word). Read at start and at every reload."`
	Embeddings EmbeddingsConfig `yaml:"embeddings" embed:"" prefix:"embeddings-"`
}

// EmbeddingsConfig turns on the semantic re-ranking of discovery's search
// through an embeddings endpoint the operator runs (off by default).
type EmbeddingsConfig struct {
	URL      string  `yaml:"url" name:"url" placeholder:"URL" help:"An OpenAI-compatible embeddings API base (e.g. http://127.0.0.1:11434/v1 for Ollama): discovery's search then re-ranks its best candidates by meaning. Empty: off."`
	Model    string  `yaml:"model" name:"model" help:"The embedding model's name (e.g. nomic-embed-text)."`
	Key      string  `yaml:"key" name:"key" help:"A bearer token for the endpoint, or env:NAME; never logged."`
	CacheDir string  `yaml:"cache_dir" name:"cache-dir" placeholder:"DIR" help:"Keep the tools' vectors on disk between runs (per document)."`
	Weight   float64 `yaml:"weight" name:"weight" default:"0.5" help:"The share of the semantic score in the ranking (0 to 1)."`
}

// ToolsConfig selects operations and overrides what is generated for them.
type ToolsConfig struct {
	GenerateSettings `yaml:",inline" embed:""`
	// Pin lists tools served beside the discovery tools.
	Pin []string `yaml:"pin" name:"pin" help:"In discovery mode, tools listed beside search, describe and call (tool name, operationId or \"METHOD /path\", comma-separated); operations may also say x-mcp-pin: true."`
	// Overrides per operation, keyed by operationId or "METHOD /path".
	Overrides map[string]openapi.Override `yaml:"overrides" name:"overrides" type:"yaml" placeholder:"YAML" help:"Changes to generated tools, keyed by operationId or \"METHOD /path\": name, title, description, hide, readOnlyHint, destructiveHint, idempotentHint, openWorldHint, redactResponse, task. On the command line: YAML or JSON text, or @FILE."`
	// Tasks lists operations exposed as task tools.
	Tasks []string `yaml:"tasks" name:"tasks" aliases:"task-operations" env:"MCPGATE_TOOLS_TASKS,MCPGATE_TASK_OPERATIONS" help:"Operations (operationId or \"METHOD /path\", comma-separated) served as durable tasks; an upstream 202 Accepted with Location is then polled to the end."`
}

// GenerateSettings choose the operations that become tools; "mcpgate
// tools" and "mcpgate check" take the same ones, so that a check
// regenerates exactly what is served.
type GenerateSettings struct {
	IncludeMethods    []string `yaml:"include_methods" name:"include-methods" help:"Only operations with these HTTP methods, comma-separated (e.g. GET,HEAD)."`
	ExcludeTags       []string `yaml:"exclude_tags" name:"exclude-tags" help:"Drop operations with any of these tags, comma-separated."`
	IncludePaths      []string `yaml:"include_paths" name:"include-paths" help:"Only paths matching these globs, comma-separated (* within a segment, ** across)."`
	ExcludePaths      []string `yaml:"exclude_paths" name:"exclude-paths" help:"Drop paths matching these globs, comma-separated."`
	IncludeOperations []string `yaml:"include_operations" name:"include-operations" help:"Only these operationIds, comma-separated."`
	ExcludeOperations []string `yaml:"exclude_operations" name:"exclude-operations" help:"Drop these operationIds, comma-separated."`
	MaxNameLength     int      `yaml:"max_name_length" name:"max-name-length" default:"64" help:"Maximum tool name length (16 to 128)."`
	// The bounds of what an agent reads.
	MaxDescriptionLength int `yaml:"max_description_length" name:"max-description-length" default:"1024" help:"Maximum tool description length in bytes (-1: unbounded)."`
	MaxOutputSchemaBytes int `yaml:"max_output_schema_bytes" name:"max-output-schema-bytes" default:"65536" help:"Bound on an encoded outputSchema: past it, the $defs farthest from the root become true (-1: unbounded)."`
	MaxInputSchemaBytes  int `yaml:"max_input_schema_bytes" name:"max-input-schema-bytes" default:"65536" help:"Bound on an encoded inputSchema, applied the same way (-1: unbounded)."`
	// OutputSchema says how much of each response schema a tool carries.
	OutputSchema string `yaml:"output_schema" name:"output-schema" default:"compact" enum:"full,compact,none" help:"Each tool's outputSchema: full (the documented response schema, bounded by max_output_schema_bytes), compact (its top-level shape to a bounded depth, without nested descriptions) or none."`
	// KeepParameters offers transport parameters that are hidden by default.
	KeepParameters []string `yaml:"keep_parameters" name:"keep-parameters" help:"Transport parameters hidden from agents by default (such as alt, prettyPrint, quotaUser, fields, callback) to offer anyway, comma-separated (* for all). Credential parameters are never offered."`
}

// Options are the generator options these settings give.
func (s GenerateSettings) Options() openapi.GenerateOptions {
	return openapi.GenerateOptions{
		IncludeMethods: s.IncludeMethods, ExcludeTags: s.ExcludeTags,
		IncludePaths: s.IncludePaths, ExcludePaths: s.ExcludePaths,
		IncludeOperations: s.IncludeOperations, ExcludeOperations: s.ExcludeOperations,
		MaxNameLength: s.MaxNameLength, MaxDescriptionLength: s.MaxDescriptionLength,
		MaxOutputSchemaBytes: s.MaxOutputSchemaBytes, MaxInputSchemaBytes: s.MaxInputSchemaBytes,
		OutputSchema: s.OutputSchema, KeepParameters: s.KeepParameters,
	}
}

// Check reports settings outside their bounds.
func (s GenerateSettings) Check() error {
	if s.MaxNameLength != 0 && (s.MaxNameLength < 16 || s.MaxNameLength > 128) {
		return fmt.Errorf("tools.max_name_length %d: must be between 16 and 128", s.MaxNameLength)
	}
	return nil
}

// EnvPrefix prefixes every environment variable the gateway reads.
const EnvPrefix = "MCPGATE_"

// reflectConfig is Config's type, the table Settings walks.
var reflectConfig = reflect.TypeFor[Config]()

// Settings is the table of settings as the CLI and the README list them.
func Settings() ([]settings.Setting, error) {
	return settings.Walk(reflectConfig, strings.TrimSuffix(EnvPrefix, "_"))
}

// withDefaults fills what was not set and checks the result.
func (c Config) withDefaults() (Config, error) {
	if err := settings.ApplyDefaults(&c); err != nil {
		return c, err
	}
	if !strings.HasPrefix(c.Path, "/") {
		return c, fmt.Errorf("path %q must start with /", c.Path)
	}
	if c.Store == "" {
		c.Store = "sqlite:" + defaultStorePath()
	}
	if err := oneOf("auth mode", c.Auth.Mode, "none", "oauth"); err != nil {
		return c, err
	}
	if c.Auth.Mode == "oauth" && (c.Auth.Issuer == "" || c.Auth.Resource == "") {
		return c, errors.New("auth mode oauth needs an issuer (--auth-issuer) and this server's resource URL (--auth-resource)")
	}
	if err := oneOf("confirm", c.Confirm, ConfirmDestructive, ConfirmWrites, ConfirmNone); err != nil {
		return c, err
	}
	if err := oneOf("confirm_fallback", c.ConfirmFallback, "allow", "deny"); err != nil {
		return c, err
	}
	apis, err := c.apiConfigs()
	if err != nil {
		return c, err
	}
	for _, a := range apis {
		if c.Demo {
			break
		}
		if err := a.check(c.Auth.Mode); err != nil {
			if a.Name != "" {
				err = fmt.Errorf("api %s: %w", a.Name, err)
			}
			return c, err
		}
	}
	return c, nil
}

func oneOf(what, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("%s %q: must be %s", what, v, strings.Join(allowed, ", "))
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

// GenerateOptions turns the tools section into generator options.
func (t ToolsConfig) GenerateOptions() openapi.GenerateOptions {
	o := t.GenerateSettings.Options()
	o.Overrides = t.Overrides
	return o
}
