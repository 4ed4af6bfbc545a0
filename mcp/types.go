package mcp

import (
	"encoding/json"
)

// Implementation names a client or server (clientInfo / serverInfo).
type Implementation struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	WebsiteURL  string `json:"websiteUrl,omitempty"`
	Icons       []Icon `json:"icons,omitempty"`
}

// Icon is an image a client may show next to a primitive.
type Icon struct {
	Src      string   `json:"src"`
	MIMEType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"`
}

// ClientCapabilities are declared by the client on every request.
type ClientCapabilities struct {
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
	Roots        *struct{}                  `json:"roots,omitempty"`
	Sampling     *SamplingCapability        `json:"sampling,omitempty"`
	Elicitation  *ElicitationCapability     `json:"elicitation,omitempty"`
	Extensions   map[string]json.RawMessage `json:"extensions,omitempty"`
}

// SamplingCapability is the client's sampling/createMessage support.
type SamplingCapability struct {
	Context *struct{} `json:"context,omitempty"`
	Tools   *struct{} `json:"tools,omitempty"`
}

// ElicitationCapability is the client's elicitation/create support. An empty
// object means form mode only.
type ElicitationCapability struct {
	Form *struct{} `json:"form,omitempty"`
	URL  *struct{} `json:"url,omitempty"`
}

// HasExtension reports whether the client declared the extension id.
func (c *ClientCapabilities) HasExtension(id string) bool {
	_, ok := c.Extensions[id]
	return ok
}

// ServerCapabilities are advertised in server/discover.
type ServerCapabilities struct {
	Tools        *ListCapability            `json:"tools,omitempty"`
	Resources    *ResourcesCapability       `json:"resources,omitempty"`
	Prompts      *ListCapability            `json:"prompts,omitempty"`
	Completions  *struct{}                  `json:"completions,omitempty"`
	Logging      *struct{}                  `json:"logging,omitempty"`
	Extensions   map[string]json.RawMessage `json:"extensions,omitempty"`
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
}

// ListCapability is the tools and prompts capability.
type ListCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// ResourcesCapability is the resources capability.
type ResourcesCapability struct {
	Subscribe   bool `json:"subscribe,omitempty"`
	ListChanged bool `json:"listChanged,omitempty"`
}

// CacheScope values of cacheable results.
const (
	CachePublic  = "public"
	CachePrivate = "private"
)

// Result types.
const (
	ResultComplete      = "complete"
	ResultInputRequired = "input_required"
	ResultTask          = "task"
)

// Tool describes a tool in tools/list.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	Icons        []Icon           `json:"icons,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	Meta         map[string]any   `json:"_meta,omitempty"`
}

// ToolAnnotations are behaviour hints for clients.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Content is one content block: text, image, audio, resource_link or
// resource. Use the constructors (TextContent, ImageContent, …).
type Content struct {
	Type     string            `json:"type"`
	Text     string            `json:"text,omitempty"`
	Data     string            `json:"data,omitempty"`
	MIMEType string            `json:"mimeType,omitempty"`
	Resource *ResourceContents `json:"resource,omitempty"`
	// resource_link fields
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`

	Annotations *Annotations   `json:"annotations,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// Annotations on content blocks and resources.
type Annotations struct {
	Audience     []string `json:"audience,omitempty"`
	Priority     *float64 `json:"priority,omitempty"`
	LastModified string   `json:"lastModified,omitempty"`
}

// TextContent is a text block.
func TextContent(text string) Content { return Content{Type: "text", Text: text} }

// ImageContent is an image block; data is base64.
func ImageContent(base64Data, mimeType string) Content {
	return Content{Type: "image", Data: base64Data, MIMEType: mimeType}
}

// AudioContent is an audio block; data is base64.
func AudioContent(base64Data, mimeType string) Content {
	return Content{Type: "audio", Data: base64Data, MIMEType: mimeType}
}

// EmbeddedResource is a resource block.
func EmbeddedResource(rc ResourceContents) Content { return Content{Type: "resource", Resource: &rc} }

// ResourceLink is a resource_link block.
func ResourceLink(uri, name, mimeType string) Content {
	return Content{Type: "resource_link", URI: uri, Name: name, MIMEType: mimeType}
}

// CallToolResult is the complete result of tools/call.
type CallToolResult struct {
	Content           []Content      `json:"content"`
	StructuredContent any            `json:"structuredContent,omitempty"`
	IsError           bool           `json:"isError,omitempty"`
	Meta              map[string]any `json:"_meta,omitempty"`
}

// TextResult is a CallToolResult holding one text block.
func TextResult(text string) *CallToolResult {
	return &CallToolResult{Content: []Content{TextContent(text)}}
}

// ToolError is a tool execution error (isError: true) with a message the
// model can read and act on.
func ToolError(text string) *CallToolResult {
	return &CallToolResult{Content: []Content{TextContent(text)}, IsError: true}
}

// Resource describes a resource in resources/list.
type Resource struct {
	URI         string         `json:"uri"`
	Name        string         `json:"name"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description,omitempty"`
	MIMEType    string         `json:"mimeType,omitempty"`
	Size        int64          `json:"size,omitempty"`
	Annotations *Annotations   `json:"annotations,omitempty"`
	Icons       []Icon         `json:"icons,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// ResourceTemplate describes a parameterised resource (RFC 6570 template).
type ResourceTemplate struct {
	URITemplate string         `json:"uriTemplate"`
	Name        string         `json:"name"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description,omitempty"`
	MIMEType    string         `json:"mimeType,omitempty"`
	Annotations *Annotations   `json:"annotations,omitempty"`
	Icons       []Icon         `json:"icons,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// ResourceContents is text or blob contents of a resource.
type ResourceContents struct {
	URI      string         `json:"uri"`
	MIMEType string         `json:"mimeType,omitempty"`
	Text     string         `json:"text,omitempty"`
	Blob     string         `json:"blob,omitempty"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// ReadResourceResult is the complete result of resources/read. TTL and Scope
// default to the server's resource cache hints when zero.
type ReadResourceResult struct {
	Contents []ResourceContents `json:"contents"`
	TTLMs    *int64             `json:"ttlMs,omitempty"`
	Scope    string             `json:"cacheScope,omitempty"`
	Meta     map[string]any     `json:"_meta,omitempty"`
}

// Prompt describes a prompt in prompts/list.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Icons       []Icon           `json:"icons,omitempty"`
	Meta        map[string]any   `json:"_meta,omitempty"`
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// GetPromptResult is the complete result of prompts/get.
type GetPromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	Meta        map[string]any  `json:"_meta,omitempty"`
}

// CompletionReference is the ref of completion/complete.
type CompletionReference struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// CompleteRequest is a completion/complete request.
type CompleteRequest struct {
	*Request
	Ref      CompletionReference
	Argument struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	Context map[string]string
}

// Completion is the completion of a CompleteResult.
type Completion struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

// LogLevel is a logging level (RFC 5424 order).
type LogLevel string

// Log levels, lowest first.
const (
	LevelDebug     LogLevel = "debug"
	LevelInfo      LogLevel = "info"
	LevelNotice    LogLevel = "notice"
	LevelWarning   LogLevel = "warning"
	LevelError     LogLevel = "error"
	LevelCritical  LogLevel = "critical"
	LevelAlert     LogLevel = "alert"
	LevelEmergency LogLevel = "emergency"
)

// severity is the rank of l, or -1 when l is not a level.
func (l LogLevel) severity() int {
	switch l {
	case LevelDebug:
		return 0
	case LevelInfo:
		return 1
	case LevelNotice:
		return 2
	case LevelWarning:
		return 3
	case LevelError:
		return 4
	case LevelCritical:
		return 5
	case LevelAlert:
		return 6
	case LevelEmergency:
		return 7
	}
	return -1
}

// InputRequest is one embedded request of an InputRequiredResult:
// elicitation/create, sampling/createMessage or roots/list.
type InputRequest struct {
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// Input request methods.
const (
	MethodElicit        = "elicitation/create"
	MethodCreateMessage = "sampling/createMessage"
	MethodListRoots     = "roots/list"
)

// ElicitParams are the params of a form- or URL-mode elicitation.
type ElicitParams struct {
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
}

// ElicitForm asks the user to fill a flat form described by schema.
func ElicitForm(message string, schema json.RawMessage) InputRequest {
	return InputRequest{Method: MethodElicit, Params: ElicitParams{Mode: "form", Message: message, RequestedSchema: schema}}
}

// ElicitURL asks the user to open url (out-of-band interaction).
func ElicitURL(message, url string) InputRequest {
	return InputRequest{Method: MethodElicit, Params: ElicitParams{Mode: "url", Message: message, URL: url}}
}

// SamplingMessage is one message of a sampling request.
type SamplingMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// CreateMessageParams are the params of sampling/createMessage.
type CreateMessageParams struct {
	Messages     []SamplingMessage `json:"messages"`
	MaxTokens    int               `json:"maxTokens"`
	SystemPrompt string            `json:"systemPrompt,omitempty"`
	Temperature  *float64          `json:"temperature,omitempty"`
}

// Sample asks the client's model to answer messages.
func Sample(p CreateMessageParams) InputRequest {
	return InputRequest{Method: MethodCreateMessage, Params: p}
}

// ListRoots asks the client for its roots.
func ListRoots() InputRequest { return InputRequest{Method: MethodListRoots} }

// ElicitResult is a client's answer to an elicitation.
type ElicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// CreateMessageResult is a client's answer to a sampling request.
type CreateMessageResult struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Model      string          `json:"model"`
	StopReason string          `json:"stopReason,omitempty"`
}

// Root is one client root.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// ListRootsResult is a client's answer to roots/list.
type ListRootsResult struct {
	Roots []Root `json:"roots"`
}
