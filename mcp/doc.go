// Package mcp is the protocol core of mcpgate: a fast server for the Model
// Context Protocol revision 2026-07-28, the stateless revision with no
// initialize handshake, no sessions and a _meta object on every request.
//
// It owns the JSON-RPC 2.0 codec, the wire types, the error codes, the
// per-request _meta checks, the Server with its method table and its tool,
// prompt and resource registries, the handler API, the Streamable HTTP
// transport (NewHTTPHandler) and the stdio transport (ServeStdio), and an
// in-memory Client for tests.
//
// A library user builds a Server, registers tools, prompts and resources, and
// mounts the HTTP handler:
//
//	s := mcp.NewServer(mcp.Implementation{Name: "weather", Version: "1.0.0"}, nil)
//	mcp.AddTool(s, &mcp.Tool{Name: "forecast", Description: "Forecast for a city"},
//		func(ctx context.Context, req *mcp.CallToolRequest, in struct{ City string `json:"city"` }) (*mcp.CallToolResult, error) {
//			return mcp.TextResult("Sunny in " + in.City), nil
//		})
//	http.Handle("/mcp", mcp.NewHTTPHandler(s, nil))
//
// The files, by concern: protocol.go and types.go (versions, error codes,
// wire types), jsonrpc.go (the envelope codec), decode.go (params and
// _meta), server.go (admission, the method table's dispatch), methods.go
// (discover, prompts, resources, completion), tools.go, toolset.go (tool
// sets swapped whole), toolwire.go (a tool's encoded form, once) and dispatch.go (a tool that hands its call to
// another), typed.go (typed tools and their schemas), state.go (multi
// round-trip requests), request.go (the handler API), encode.go (tools/call
// results), registry.go (registries and cached list pages), listen.go and
// park.go (subscriptions/listen), tasks.go (the Tasks extension),
// observe.go (the request observer), http.go, headers.go, limits.go and
// sessions.go (Streamable HTTP), stdio.go, legacy*.go (2025-11-25 sessions
// on both transports), client.go (the in-memory client), secret.go
// (credentials that print redacted).
//
// Invariants:
//
//   - Stateless: a request never depends on the server's memory of an earlier
//     request. Capabilities, version and identity are read from each request's
//     own _meta. What must survive between rounds of a multi round-trip request
//     travels in the sealed requestState (see package mrtr).
//   - Every result carries resultType; every cacheable complete result carries
//     ttlMs and cacheScope; every result carries the server's identity in
//     _meta["io.modelcontextprotocol/serverInfo"].
//   - Bad input gets a JSON-RPC error with the status the spec mandates
//     (400 for _meta and header problems, 404 for unknown methods) and never a
//     panic; a handler panic becomes -32603 and the server keeps serving.
//   - A message with a member name used twice in one object, anywhere in it,
//     is refused whole (-32700, HTTP 400) before any of it is used, on both
//     transports and in both eras.
//   - What a client can hold open on HTTP without proving anything (legacy
//     sessions, subscriptions/listen streams) is bounded in total, per
//     client address and per caller; a session that is in use is never
//     closed to make room.
//   - Lists are encoded once per registry change and reused byte for byte, so
//     tools/list on thousands of tools costs one copy. A tool is encoded
//     once, when it is registered, its 2025-11-25 form made from the same
//     bytes; a tool set keeps one copy of each distinct schema, and the
//     tools' schemas (as Tool.InputSchema, OutputSchema and ToolSet.Schemas
//     give them) are that copy, never modified.
//   - What the HTTP transport pools per request (the decoded message, the
//     buffer a tools/call answer is encoded into) is read only while that
//     request is served and goes back to its pool once the answer is
//     written and observed, cleared or re-sliced from zero: nothing a
//     handler or an observer can keep points into it, and no cached list
//     page is ever put in a pool.
//   - Notifications reach only the stream they belong to: progress and log
//     messages the response stream of their request, list changes only the
//     subscriptions/listen streams that asked for them, each tagged with the
//     subscription id.
package mcp
