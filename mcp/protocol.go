package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Protocol versions.
const (
	// ProtocolVersion is the revision this package serves.
	ProtocolVersion = "2026-07-28"
	// LatestLegacyVersion is the newest initialize-based revision.
	LatestLegacyVersion = "2025-11-25"
)

// Reserved _meta keys.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	MetaProgressToken      = "progressToken"
	// The keys OpenTelemetry reserves in any _meta (W3C Trace Context and
	// Baggage).
	MetaTraceParent = "traceparent"
	MetaTraceState  = "tracestate"
	MetaBaggage     = "baggage"
)

// ExtensionTasks is the identifier of the Tasks extension.
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// HTTP header names of the Streamable HTTP transport, in Go's canonical form
// (the spec writes "MCP-Protocol-Version"; header names are case-insensitive,
// and a canonical key is looked up without allocating).
const (
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
	HeaderParamPrefix     = "Mcp-Param-"
)

// JSON-RPC and MCP error codes.
const (
	CodeParseError                      = -32700
	CodeInvalidRequest                  = -32600
	CodeMethodNotFound                  = -32601
	CodeInvalidParams                   = -32602
	CodeInternalError                   = -32603
	CodeHeaderMismatch                  = -32020
	CodeMissingRequiredClientCapability = -32021
	CodeUnsupportedProtocolVersion      = -32022
)

// Error is a JSON-RPC error object. Handlers return one (or wrap one) to
// answer with a protocol error instead of a result.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`

	// status is the HTTP status the Streamable HTTP transport answers with;
	// zero means 200.
	status int
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// HTTPStatus is the status the Streamable HTTP transport uses for e.
func (e *Error) HTTPStatus() int {
	if e.status != 0 {
		return e.status
	}
	return http.StatusOK
}

// NewError builds a JSON-RPC error; data, when not nil, is marshalled.
// Protocol-mandated HTTP statuses are applied by code: -32601 answers 404 and
// -32020, -32021, -32022 answer 400. Invalid params (-32602) answers 200
// unless it concerns _meta (see errInvalidMeta): a 400 with an ordinary
// application error could make a dual-era client fall back to the legacy
// handshake.
func NewError(code int, message string, data any) *Error {
	e := &Error{Code: code, Message: message}
	if data != nil {
		if raw, ok := data.(json.RawMessage); ok {
			e.Data = raw
		} else if b, err := json.Marshal(data); err == nil {
			e.Data = b
		}
	}
	switch code {
	case CodeMethodNotFound:
		e.status = http.StatusNotFound
	case CodeHeaderMismatch, CodeMissingRequiredClientCapability, CodeUnsupportedProtocolVersion:
		e.status = http.StatusBadRequest
	}
	return e
}

// withStatus returns e answering with the given HTTP status.
func (e *Error) withStatus(status int) *Error { e.status = status; return e }

// ErrInvalidParams is a convenience for CodeInvalidParams errors.
func ErrInvalidParams(format string, args ...any) *Error {
	return NewError(CodeInvalidParams, fmt.Sprintf(format, args...), nil)
}

// ErrMissingCapability answers -32021: the request cannot be served without
// the client capabilities in required (a ClientCapabilities-shaped object).
func ErrMissingCapability(message string, required ClientCapabilities) *Error {
	return NewError(CodeMissingRequiredClientCapability, message,
		map[string]any{"requiredCapabilities": required})
}

func errInvalidMeta(format string, args ...any) *Error {
	return ErrInvalidParams(format, args...).withStatus(http.StatusBadRequest)
}

func errHeaderMismatch(format string, args ...any) *Error {
	return NewError(CodeHeaderMismatch, "Header mismatch: "+fmt.Sprintf(format, args...), nil)
}

func errMethodNotFound(method string) *Error {
	return NewError(CodeMethodNotFound, "Method not found: "+method, nil)
}

func errInternal() *Error { return NewError(CodeInternalError, "Internal error", nil) }
