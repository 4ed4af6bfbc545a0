// Package proxy is the dispatch half of the gateway: it turns an MCP tool
// call (a generated [openapi.Tool] plus the call's JSON arguments) into one
// real HTTP request to the configured upstream, and the upstream's HTTP
// response into an [mcp.CallToolResult].
//
// The package owns argument validation against the tool's inputSchema,
// parameter serialization (path, query, header and cookie parameters with
// their OpenAPI styles; JSON, form, multipart, binary and text bodies),
// credentials ([AuthResolver]: [Passthrough], [Static], [Chain], [None]),
// the redirect policy, response limits, redaction and the rendering of
// responses as content blocks.
//
// Build a [Proxy] once from a [Config], compile one [Endpoint] per tool with
// [Proxy.Endpoint] (or [Proxy.Endpoints]) whenever the tool set changes, and
// call [Proxy.Dispatch] (or [Proxy.Do], which also reports a 202 Accepted
// for later polling) for each tools/call. [Proxy.Handler] adapts an endpoint
// to an [mcp.ToolHandler].
//
// [Proxy.Poll] fetches the status location of an accepted (202) operation
// for a Tasks integration. With [Config.CheckOutput], a 2xx result is
// checked against the tool's outputSchema.
//
// Results: a 2xx JSON body becomes structuredContent (a compact
// json.RawMessage, never decoded unless redaction needs it) plus the same
// JSON as a text block; text stays text; image/* and audio/* become
// image/audio blocks; other binaries an embedded resource (base64 blob with
// its MIME type); 204 or an empty body a short text. 4xx/5xx are tool
// errors with the status and a body excerpt (401 says authentication
// failed, 403 permission denied, 429 rate limited). A 202 Accepted with
// Location or Operation-Location is reported in [DispatchResult.Accepted]
// and rendered as a complete result saying that the operation goes on and
// where its status is, as a path of the API. Bodies
// are read up to [Config.MaxResponseBytes]: a larger text or JSON body is
// shown cut with a truncation note, a larger binary (or a JSON body that
// must be redacted) is a tool error. Tool.RedactResponse paths are removed
// from every JSON body, success or error, before anything leaves.
//
// Invariants:
//   - A credential is only ever sent to the configured upstream origin
//     (scheme, host and port of [Config.BaseURL]). Same-origin redirects are
//     followed by the proxy itself (redirect.go: at most
//     [Config.MaxRedirects], credentials re-applied, net/http's method and
//     body rules); a redirect to any other origin is never followed, so
//     its target never sees a request at all, and the 3xx is reported as
//     a tool error.
//     Credentials never appear in logs or in tool results, and a static
//     credential replaces any same-named argument.
//   - Parameters are encoded, never spliced: a path argument stays inside its
//     path segment ("/", "?", "#", "%" are percent-encoded; a value of "." or
//     ".." is sent as %2E / %2E%2E), no argument can change the scheme, host
//     or port, header values with CR, LF, NUL or other control bytes are
//     rejected, and no argument can set a hop-by-hop or credential header.
//   - No tool result names the upstream's address (its base URL is often
//     internal and an agent could neither reach nor authenticate to it):
//     the proxy's messages speak of paths of the API ("GET /pets/1"), never
//     of URLs on other origins, and absolute URLs on the upstream origin in
//     what the upstream sent (bodies, WWW-Authenticate, Location) are
//     rewritten to those paths (address.go). The Go values
//     ([Accepted.Location], [DispatchResult.Header]) keep them.
//   - Every number argument is forwarded in the one canonical form of
//     package jsonx, the form the MRTR arguments hash is computed over, so
//     the request a user confirmed is the request sent; number literals
//     beyond jsonx's limits are refused before any validation, so
//     validating costs time linear in the arguments.
//   - Everything the caller or the upstream did wrong (invalid arguments,
//     4xx/5xx, 401/403, timeouts, unreachable upstream, oversized or
//     malformed responses, cross-origin redirects) is a tool error result
//     (isError: true) with a readable message. [Proxy.Dispatch] returns a Go
//     error only for programming faults (nil endpoint, an endpoint of
//     another Proxy).
//   - Per-tool work (path template split, argument tables, header rules,
//     redaction paths, the compiled inputSchema) is done once per
//     [Endpoint], never per call. The package has no mutable package-level
//     state.
//
// The default transport ([NewTransport]) sends http URLs through package
// h1 (HTTP/1.1 on the calling goroutine) and https URLs through net/http's
// Transport (HTTP/2 when offered).
package proxy
