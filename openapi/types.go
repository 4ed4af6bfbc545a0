// Package openapi turns an OpenAPI document (Swagger 2.0, OpenAPI 3.0.x or
// 3.1.x; JSON or YAML) into MCP tools: one [Tool] per API operation, each
// carrying the agent-facing part (name, title, description, inputSchema,
// outputSchema, annotations) and a [Route] that tells a proxy how to turn the
// tool's arguments back into the HTTP request.
//
// The package owns loading ([Load], [Parse]), generation ([Generate]), the
// committed drift artifact ([Manifest]) and its comparison ([Diff]).
//
// Invariants:
//   - Same document and options → byte-identical output ([EncodeToolsList],
//     [Manifest.Encode]). Tools are ordered by path (byte order) and then by
//     method in the order GET, PUT, POST, DELETE, OPTIONS, HEAD, PATCH, TRACE.
//   - Every operation that passes the filters gives exactly one tool; webhooks
//     and callbacks are never tools.
//   - Tool names are unique and match `^[A-Za-z0-9_-]{1,N}$`
//     (N = [GenerateOptions].MaxNameLength, 64 by default).
//   - Every inputSchema is a JSON Schema 2020-12 object whose root is
//     `{"type":"object",...}`; referenced schemas live in `$defs` (cycles are
//     kept as `$ref`s); argument (property) names are unique and match
//     `^[A-Za-z0-9_.-]{1,64}$`, and every one has exactly one [Argument] in the
//     route.
//   - Annotations are always complete (every hint set explicitly): from the
//     HTTP method, refined by the action verb of RPC-style APIs (AWS JSON,
//     JSON-RPC, Twirp) and, towards caution only, by text saying a POST
//     destroys data; x-mcp-annotations and overrides win (hints.go).
//   - A [Route] is self-contained: a proxy never needs the OpenAPI document.
//
// Loading: a JSON (or YAML, converted to JSON) OpenAPI 3.x document is
// decoded once into generic values, exactly the tree encoding/json gives
// with UseNumber but by a one-pass jsontext decoder, 1.6–1.9× faster
// (decode.go), and built into kin-openapi types (build.go); kin's own
// UnmarshalJSON methods re-decode every subtree once per nesting level,
// which made loading several times slower on big documents. A JSON file is
// decoded as it is read, never held whole. When no reference can point
// into the paths, the decoder leaves each path item raw and the builder
// decodes it when it builds it and drops it once built, so the tree is
// never whole (its nodes are then not memoized: refs.go). [GenerateOptions].Consume lets generation drop the document's
// path items as it goes, for a caller done with the document; with
// [LoadOptions].DeferPaths they are not even built at load but by another
// goroutine while generation makes the tools of those before them, each
// handed over whole (deferred.go), when none needs the whole document. Local $refs are resolved by the builder on the
// generic decode (refs.go): any JSON pointer resolves, wherever it points
// (a `definitions` map inside a component schema included), each target is
// built once and shared by every reference to it, so loading is linear in
// the document however references nest; a pointer to nothing is a
// [LoadError] naming the reference's place and the missing node. kin's
// Loader.ResolveRefsIn only runs for references to other files. Swagger
// 2.0 goes through kin's openapi2 types and openapi2conv. Relative
// file refs are followed below the document's directory, URL refs on its
// origin only; a missing whole-file ref becomes an empty schema and a
// warning. Validation findings are warnings, never errors; only an
// unusable document is an error ([LoadError], naming the source and place):
// one that is something else says what was found (an HTML page and its
// title, XML, an AsyncAPI document, a Postman collection, the keys of an
// object). Nothing panics: FuzzParseGenerate drives Parse and Generate, and
// a bug that still panics becomes a LoadError.
//
// Schemas: OpenAPI 3.0 quirks (nullable, example, boolean exclusive bounds,
// type: file) become 2020-12; discriminator, xml and extensions are dropped.
// Every pattern in a schema compiles, with the same meaning, as an ECMA-262
// unicode-mode RegExp (what Ajv and the TypeScript SDK use) and as Go RE2
// (the gateway's validation): patterns from other dialects (`\A`, `\z`,
// `\x{60}`, `\-`, `(?i)`, `/…/`) are translated (pattern.go); one with no
// such spelling (lookaround, backreferences) leaves the schema and is kept
// in its description, with a warning. Schemas over
// the configured byte bounds keep their root and turn the $defs farthest
// from it into `true`.
//
// Request bodies: an object body is flattened into one argument per
// top-level property (a non-object, non-flattenable or binary body is one
// "body" argument). When the body is optional but its schema requires
// fields, the inputSchema keeps that rule as "dependentRequired": any body
// argument given makes the body's required fields required, and each such
// field's description says so. The body is not nested under its own key
// instead: one argument shape for every body, the per-property encodings of
// form and multipart bodies (deepObject, part content types) kept, and the
// gateway's validation (and Ajv's) enforce the keyword, naming the missing
// field to an agent that skipped it.
//
// Output schemas are compact by default ([GenerateOptions].OutputSchema,
// compact.go); [Stats] measures what a tools/list costs an agent.
//
// Text: HTML in summaries and descriptions becomes Markdown; a tool's
// Description is the lead paragraph of its operation's text (what helps
// choose it), FullDescription the rest when there is more; operationIds
// that are path slugs ("GET--version-incidents--id---format-") become
// readable names; every tool's _meta carries its [OperationMeta] (text.go).
//
// Parameters: a credential is never an argument (the apiKey parameter of a
// security scheme, AWS SigV4 parameters, Google's OAuth token and API key
// when their description says so), and transport knobs (Google's alt,
// callback, prettyPrint, quotaUser, userIp, $.xgafv) are hidden unless
// [GenerateOptions].KeepParameters offers them; [Route].Hidden records
// each (plumbing.go states the rules).
//
// The package holds no mutable package-level state; everything it returns is
// owned by the caller.
package openapi

import (
	"encoding/json"

	"github.com/getkin/kin-openapi/openapi3"
)

// Tool is one generated MCP tool: the agent-facing definition plus the route
// a proxy needs to dispatch a call. It is also the unit of the drift
// [Manifest].
type Tool struct {
	// Name is unique among the generated tools and tool-name safe.
	Name string `json:"name"`
	// Title is a short human-readable label (summary, or the name).
	Title string `json:"title,omitempty"`
	// Description is what helps choose the tool: the lead paragraph of the
	// operation's description (HTML turned into Markdown), bounded by
	// [GenerateOptions].MaxDescriptionLength.
	Description string `json:"description,omitempty"`
	// InputSchema is a JSON Schema 2020-12 object schema (root type object).
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema is the documented 2xx JSON response schema, if any (any
	// JSON Schema 2020-12; the root need not be an object).
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations are always complete.
	Annotations Annotations `json:"annotations"`
	// Meta is the tool's _meta in tools/list: "io.mcpgate/operation" holds
	// the [OperationMeta] that ties the tool to its operation.
	Meta map[string]any `json:"_meta,omitempty"`

	// FullDescription is the whole description when Description is a cut
	// of it (for discovery's describe). Not part of tools/list.
	FullDescription string `json:"fullDescription,omitempty"`

	// Route is how a call becomes an HTTP request. Not part of tools/list.
	Route Route `json:"route"`
	// RedactResponse lists dotted response paths removed before the result
	// reaches the agent; a segment that lands on an array applies to every
	// element. Not part of tools/list.
	RedactResponse []string `json:"redactResponse,omitempty"`
	// Task marks a long-running operation to serve as a task tool
	// (x-mcp-task or an override). Not part of tools/list.
	Task bool `json:"task,omitempty"`
	// Tags are the operation's tags, in document order (for discovery's
	// search index and for filters). Not part of tools/list.
	Tags []string `json:"tags,omitempty"`
}

// OperationMetaKey is the _meta key of a tool's [OperationMeta].
const OperationMetaKey = "io.mcpgate/operation"

// OperationMeta names the document operation a tool calls: the method,
// the path key as the document writes it, and the operationId if any.
type OperationMeta struct {
	// The fields are in byte order, as a decoded manifest re-encodes them.
	Method      string `json:"method"`
	OperationID string `json:"operationId,omitempty"`
	Path        string `json:"path"`
}

// Annotations are the MCP tool behaviour hints. Every field is always set:
// a missing hint is treated as a review blocker (seed 003).
type Annotations struct {
	Title           string `json:"title"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint bool   `json:"destructiveHint"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   bool   `json:"openWorldHint"`
}

// Location says where an argument goes in the HTTP request.
type Location string

// The argument locations.
const (
	InPath         Location = "path"          // substituted into the path template, encoded
	InQuery        Location = "query"         // query string
	InHeader       Location = "header"        // request header
	InCookie       Location = "cookie"        // Cookie header
	InBodyProperty Location = "body-property" // one top-level property of an object body
	InWholeBody    Location = "whole-body"    // the entire request body
)

// Route is everything a proxy needs to build the HTTP request for a tool
// call, without the OpenAPI document.
type Route struct {
	// Method is the upper-case HTTP method.
	Method string `json:"method"`
	// Path is the path template to expand, e.g. "/repos/{owner}/{repo}".
	// A "#…" that HTTP never sends is removed: a suffix some documents use
	// to tell operations apart ("/{Bucket}#cors", "/#X-Amz-Target=S.Op"),
	// or a marker segment SDKs replace ("/send/#env/v1/{id}" becomes
	// "/send/v1/{id}"); literal text such as "?query={q}" stays. Every
	// {name} in Path has an InPath argument with Param == name, whose
	// schema refuses the empty string (minLength 1).
	Path string `json:"path"`
	// DocPath is the key of the operation's path item in the document
	// (equal to Path unless a fragment was removed).
	DocPath string `json:"docPath,omitempty"`
	// OperationID is the operationId from the document, if any.
	OperationID string `json:"operationId,omitempty"`
	// Arguments lists every inputSchema property, in schema order (sorted by
	// argument name).
	Arguments []Argument `json:"arguments"`
	// Body describes the request body, nil when the operation has none.
	Body *Body `json:"body,omitempty"`
	// Mutating is true for POST, PUT, PATCH and DELETE: a write.
	Mutating bool `json:"mutating"`
	// Security lists the alternative security requirements (any one
	// suffices): the operation's own, else the document's. An empty
	// requirement ({}) means anonymous access is allowed; an empty or nil
	// list means no security is required.
	Security []SecurityRequirement `json:"security,omitempty"`
	// Servers lists operation- or path-level server URLs that override the
	// document's, if any.
	Servers []string `json:"servers,omitempty"`
	// Hidden lists the document's parameters that are not arguments:
	// credentials (the gateway's credential mode supplies them, or nothing
	// does) and transport knobs (see [GenerateOptions].KeepParameters), so
	// a reviewer sees what the tool leaves out.
	Hidden []HiddenParameter `json:"hidden,omitempty"`
}

// HiddenParameter is a document parameter a tool does not offer.
type HiddenParameter struct {
	Name string `json:"name"`
	In   string `json:"in"`
	// Reason is "security-scheme" (the parameter is the apiKey of Scheme;
	// the static credential mode fills it), "credential" (a token, key or
	// signature parameter the credential mode replaces) or "transport" (a
	// knob of the API's wire format an agent has no use for).
	Reason   string `json:"reason"`
	Scheme   string `json:"scheme,omitempty"`
	Required bool   `json:"required,omitempty"`
}

// Argument maps one inputSchema property to its place in the HTTP request.
type Argument struct {
	// Name is the property name in inputSchema.
	Name string `json:"name"`
	// In is where the value goes.
	In Location `json:"in"`
	// Param is the original name: the parameter name for path, query,
	// header and cookie arguments; the body property name for InBodyProperty;
	// empty for InWholeBody.
	Param string `json:"param,omitempty"`
	// Required mirrors the inputSchema "required" list.
	Required bool `json:"required,omitempty"`
	// Style and Explode are the OpenAPI serialization (defaults filled in:
	// path/header "simple", query/cookie "form"; explode true for "form").
	// For form-urlencoded and multipart body properties they come from the
	// media type's encoding object.
	Style   string `json:"style,omitempty"`
	Explode bool   `json:"explode,omitempty"`
	// AllowReserved is the query parameter's allowReserved.
	AllowReserved bool `json:"allowReserved,omitempty"`
	// ContentType is set when the value is serialized as a media type rather
	// than by style: a parameter declared with "content" (e.g.
	// "application/json": the value is JSON-encoded), or a multipart part's
	// declared content type.
	ContentType string `json:"contentType,omitempty"`
	// File is true for a multipart file part: the argument is an object
	// {"content": base64 string, "filename": string, "contentType": string},
	// or an array of such objects (one part each) when the field holds
	// several files. A multipart body that is a single binary string is one
	// File argument with Param "file".
	File bool `json:"file,omitempty"`
	// Base64 is true when the argument is a base64 string whose decoded
	// bytes are the raw value (a binary whole body).
	Base64 bool `json:"base64,omitempty"`
}

// Body describes an operation's request body.
type Body struct {
	// ContentType is the media type to send, e.g. "application/json",
	// "application/x-www-form-urlencoded", "multipart/form-data",
	// "application/octet-stream".
	ContentType string `json:"contentType"`
	// Required is the requestBody's required flag.
	Required bool `json:"required,omitempty"`
	// Whole is true when the body is one InWholeBody argument (a non-object
	// or non-flattenable schema, or a binary/text payload); otherwise the
	// body is an object assembled from the InBodyProperty arguments.
	Whole bool `json:"whole,omitempty"`
}

// SecurityRequirement maps a security scheme name to the required scopes.
type SecurityRequirement map[string][]string

// SecurityScheme is a document security scheme, as an auth layer needs it.
type SecurityScheme struct {
	// Type is apiKey, http, oauth2, openIdConnect or mutualTLS.
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	// In and Name locate an apiKey (header, query or cookie).
	In   string `json:"in,omitempty"`
	Name string `json:"name,omitempty"`
	// Scheme is the http auth scheme (basic, bearer, ...), lower-cased.
	Scheme       string `json:"scheme,omitempty"`
	BearerFormat string `json:"bearerFormat,omitempty"`
	// Flows are the oauth2 flows by kind: implicit, password,
	// clientCredentials, authorizationCode.
	Flows            map[string]OAuthFlow `json:"flows,omitempty"`
	OpenIDConnectURL string               `json:"openIdConnectUrl,omitempty"`
}

// OAuthFlow is one oauth2 flow.
type OAuthFlow struct {
	AuthorizationURL string            `json:"authorizationUrl,omitempty"`
	TokenURL         string            `json:"tokenUrl,omitempty"`
	RefreshURL       string            `json:"refreshUrl,omitempty"`
	Scopes           map[string]string `json:"scopes,omitempty"`
}

// Result is what [Generate] produces from one document.
type Result struct {
	// Source is a label of where the document came from.
	Source string `json:"source"`
	// Title and Version are the document's info.title and info.version.
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
	// Servers are the document-level server URLs.
	Servers []string `json:"servers,omitempty"`
	// Tools in deterministic order (see the package invariants).
	Tools []Tool `json:"tools"`
	// SecuritySchemes of the document by name.
	SecuritySchemes map[string]SecurityScheme `json:"securitySchemes,omitempty"`
	// Warnings are problems that did not stop generation.
	Warnings []string `json:"-"`
}

// GenerateOptions control tool generation. The zero value generates every
// operation with the default bounds.
type GenerateOptions struct {
	// IncludeMethods keeps only operations with these methods
	// (case-insensitive); empty keeps all.
	IncludeMethods []string `json:"includeMethods,omitempty"`
	// ExcludeTags drops operations tagged with any of these.
	ExcludeTags []string `json:"excludeTags,omitempty"`
	// IncludePaths keeps only operations whose path matches one of these
	// globs ("*" matches within a segment, "**" across segments); empty
	// keeps all. ExcludePaths drops matches.
	IncludePaths []string `json:"includePaths,omitempty"`
	ExcludePaths []string `json:"excludePaths,omitempty"`
	// IncludeOperations keeps only these operationIds; empty keeps all.
	// ExcludeOperations drops these operationIds.
	IncludeOperations []string `json:"includeOperations,omitempty"`
	ExcludeOperations []string `json:"excludeOperations,omitempty"`
	// Filter, when set, is asked last: false drops the operation.
	Filter func(method, path string) bool `json:"-"`
	// Overrides per operation, keyed by operationId or by "METHOD /path".
	// They win over x-mcp-* extensions in the document.
	Overrides map[string]Override `json:"overrides,omitempty"`
	// MaxNameLength bounds tool names: 0 means 64; at most 128.
	MaxNameLength int `json:"maxNameLength,omitempty"`
	// MaxDescriptionLength bounds tool descriptions in bytes (cut at a rune
	// boundary, "…" appended): 0 means 1024; negative means unbounded.
	MaxDescriptionLength int `json:"maxDescriptionLength,omitempty"`
	// MaxOutputSchemaBytes bounds an encoded outputSchema: past it, the
	// $defs farthest (breadth-first) from the root become `true` (any
	// value), so the schema stays truthful but less detailed; a schema still
	// over the bound is left out. 0 means 64 KiB; negative means unbounded.
	MaxOutputSchemaBytes int `json:"maxOutputSchemaBytes,omitempty"`
	// MaxInputSchemaBytes bounds an encoded inputSchema the same way (the
	// root and its properties are always kept): 0 means 64 KiB, which only
	// the deepest bodies reach (134 of Microsoft Graph's 11,422 tools, up
	// to 540 KB each, 50 MB in all); negative means unbounded.
	MaxInputSchemaBytes int `json:"maxInputSchemaBytes,omitempty"`
	// OutputSchema is how much of each documented response schema a tool
	// carries: "compact" (the default: the shape down to a few levels,
	// references inlined, nested descriptions dropped; compact.go), "full"
	// (everything, with $defs, bounded by MaxOutputSchemaBytes) or "none".
	OutputSchema string `json:"outputSchema,omitempty"`
	// KeepParameters names transport parameters to offer as arguments
	// after all (case-insensitive; "*" keeps every one): Google's callback,
	// alt, prettyPrint, quotaUser, userIp and $.xgafv are hidden by
	// default. Credential parameters are never offered.
	KeepParameters []string `json:"keepParameters,omitempty"`
	// Consume tells Generate that the caller is done with the document:
	// each path item is removed from it once its tools are made, so that
	// the document shrinks as the tools grow (Microsoft Graph's peak RSS
	// in mcpgate tools: 318 → 287 MB). The tools are the same.
	Consume bool `json:"-"`
	// OnPathItem, when set, is called with each path item, in order of
	// their paths, before its tools are made: how a caller reads the
	// operations of a document loaded with LoadOptions.DeferPaths.
	OnPathItem func(path string, item *openapi3.PathItem) `json:"-"`
}

// Override changes one operation's tool. Zero fields change nothing. The
// same names are used in overrides files, in the gateway's YAML settings
// (tools.overrides) and, with an x-mcp- prefix, as document extensions.
// In a document the same fields may be given as operation extensions:
// x-mcp-name, x-mcp-title, x-mcp-description, x-mcp-hide,
// x-mcp-annotations (an object with the hint names),
// x-mcp-redact-response and x-mcp-task.
type Override struct {
	Name        string `json:"name,omitempty" yaml:"name,omitempty"`
	Title       string `json:"title,omitempty" yaml:"title,omitempty"`
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
	Hide        bool   `json:"hide,omitempty" yaml:"hide,omitempty"`
	// Annotations: nil pointers keep the generated hint.
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty" yaml:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty" yaml:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty" yaml:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty" yaml:"openWorldHint,omitempty"`
	// RedactResponse: dotted paths removed from responses.
	RedactResponse []string `json:"redactResponse,omitempty" yaml:"redactResponse,omitempty"`
	// Task serves the operation as a durable task tool (for long-running
	// operations, such as those answering 202 Accepted).
	Task bool `json:"task,omitempty" yaml:"task,omitempty"`
}
