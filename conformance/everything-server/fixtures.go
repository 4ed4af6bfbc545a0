package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/mcp"
)

// A 1×1 red PNG and a tiny WAV, base64.
const (
	redPNG  = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	tinyWAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="
)

func newMux(srv *mcp.Server) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(srv, nil))
	return mux
}

// newServer builds the fixture server and its task runtime.
func newServer(logger *slog.Logger) (*mcp.Server, *taskRuntime, error) {
	codec, err := stateCodec(logger)
	if err != nil {
		return nil, nil, err
	}
	s := mcp.NewServer(mcp.Implementation{Name: "mcpgate-everything-server", Version: "0.1.0"}, &mcp.ServerOptions{
		Instructions: "Fixture server for the MCP conformance suite.",
		Logging:      true,
		StateCodec:   codec,
		Logger:       logger,
	})
	f := &fixtures{s: s}
	for _, add := range []func() error{f.tools, f.mrtrTools, f.legacyTools, f.resources, f.prompts} {
		if err := add(); err != nil {
			return nil, nil, err
		}
	}
	rt, err := f.taskTools(logger)
	if err != nil {
		return nil, nil, err
	}
	s.SetCompletionHandler(func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.Completion, error) {
		var values []string
		for _, v := range []string{"test", "testing", "tested", "python", "flask"} {
			if strings.HasPrefix(v, req.Argument.Value) {
				values = append(values, v)
			}
		}
		return &mcp.Completion{Values: values, Total: len(values)}, nil
	})
	return s, rt, nil
}

type fixtures struct {
	s       *mcp.Server
	changes atomic.Int64
}

func text(t string) *mcp.CallToolResult { return mcp.TextResult(t) }

func (f *fixtures) add(name, desc string, schema string, h mcp.ToolHandler) error {
	var raw json.RawMessage
	if schema != "" {
		raw = json.RawMessage(schema)
	}
	return f.s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: raw}, h)
}

func (f *fixtures) tools() error {
	embedded := mcp.ResourceContents{URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content."}
	list := []struct {
		name, desc, schema string
		h                  mcp.ToolHandler
	}{
		{"test_simple_text", "Returns a simple text response", "", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("This is a simple text response for testing."), nil
		}},
		{"test_image_content", "Returns an image", "", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.ImageContent(redPNG, "image/png")}}, nil
		}},
		{"test_audio_content", "Returns audio", "", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.AudioContent(tinyWAV, "audio/wav")}}, nil
		}},
		{"test_embedded_resource", "Returns an embedded resource", "", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.EmbeddedResource(embedded)}}, nil
		}},
		{"test_multiple_content_types", "Returns text, an image and a resource", "", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				mcp.TextContent("Multiple content types test:"),
				mcp.ImageContent(redPNG, "image/png"),
				mcp.EmbeddedResource(mcp.ResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}),
			}}, nil
		}},
		{"test_error_handling", "Always fails with a tool error", "", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.ToolError("This tool intentionally returns an error for testing"), nil
		}},
		{"test_tool_with_progress", "Reports progress three times", "", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i, p := range []float64{0, 50, 100} {
				if i > 0 {
					select {
					case <-time.After(50 * time.Millisecond):
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				if err := r.Progress(p, 100, fmt.Sprintf("step %d of 3", i+1)); err != nil {
					return nil, err
				}
			}
			return text("Progress complete"), nil
		}},
		{"test_tool_with_logging", "Logs three messages", "", f.logTool},
		{"test_logging_tool", "Logs when the request asked for logs", "", f.logTool},
		{"test_missing_capability", "Needs the client's sampling capability", "", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r.Capabilities.Sampling == nil {
				return nil, mcp.ErrMissingCapability("This tool needs the sampling capability", mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}})
			}
			return text("sampling is available"), nil
		}},
		{"test_streaming_elicitation", "Answers without server-to-client requests", "", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("No server-to-client requests are sent in this revision."), nil
		}},
		{"test_trigger_tool_change", "Adds a tool so that listeners see tools/list_changed", "", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := f.changes.Add(1)
			name := fmt.Sprintf("test_dynamic_tool_%d", n)
			if err := f.s.AddTool(&mcp.Tool{Name: name, Description: "A tool added at run time"}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return text("dynamic"), nil
			}); err != nil {
				return nil, err
			}
			f.s.RemoveTools(fmt.Sprintf("test_dynamic_tool_%d", n-1))
			return text("Tool list changed: added " + name), nil
		}},
		{"test_trigger_prompt_change", "Adds a prompt so that listeners see prompts/list_changed", "", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := f.changes.Add(1)
			name := fmt.Sprintf("test_dynamic_prompt_%d", n)
			if err := f.s.AddPrompt(&mcp.Prompt{Name: name, Description: "A prompt added at run time"}, func(ctx context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("dynamic")}}}, nil
			}); err != nil {
				return nil, err
			}
			f.s.RemovePrompts(fmt.Sprintf("test_dynamic_prompt_%d", n-1))
			return text("Prompt list changed: added " + name), nil
		}},
		{"json_schema_2020_12_tool", "A tool whose input schema uses JSON Schema 2020-12 keywords", jsonSchema202012, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("ok"), nil
		}},
		{"test_x_mcp_header", "Routes on a region mirrored into the Mcp-Param-Region header", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"level":{"type":"integer"}},"required":["region"]}`, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Region string `json:"region"`
			}
			_ = r.Bind(&in)
			return text("region " + in.Region), nil
		}},
	}
	for _, t := range list {
		if err := f.add(t.name, t.desc, t.schema, t.h); err != nil {
			return err
		}
	}
	return nil
}

const jsonSchema202012 = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {"address": {"$anchor": "addr", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}, "required": ["street", "city"]}},
  "properties": {
    "name": {"type": "string"},
    "address": {"$ref": "#/$defs/address"},
    "contact": {"anyOf": [{"type": "string", "format": "email"}, {"type": "string", "pattern": "^\\+?[0-9 ]+$"}]},
    "kind": {"type": "string", "enum": ["person", "company"]},
    "vat": {"type": "string"}
  },
  "allOf": [{"required": ["name"]}, {"anyOf": [{"required": ["address"]}, {"required": ["contact"]}]}],
  "if": {"properties": {"kind": {"const": "company"}}, "required": ["kind"]},
  "then": {"required": ["vat"]},
  "else": {"properties": {"vat": false}},
  "additionalProperties": false
}`

func (f *fixtures) logTool(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	for i, lvl := range []mcp.LogLevel{mcp.LevelInfo, mcp.LevelWarning, mcp.LevelError} {
		if err := r.Log(lvl, "everything-server", fmt.Sprintf("log message %d", i+1)); err != nil {
			return nil, err
		}
	}
	return text("Logging complete"), nil
}

func (f *fixtures) resources() error {
	s := f.s
	static := func(rc mcp.ResourceContents) mcp.ResourceHandler {
		return func(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{rc}}, nil
		}
	}
	for _, r := range []struct {
		res mcp.Resource
		rc  mcp.ResourceContents
	}{
		{mcp.Resource{URI: "test://static-text", Name: "static-text", Description: "A static text resource", MIMEType: "text/plain"},
			mcp.ResourceContents{URI: "test://static-text", MIMEType: "text/plain", Text: "This is the content of the static text resource."}},
		{mcp.Resource{URI: "test://static-binary", Name: "static-binary", Description: "A static binary resource", MIMEType: "image/png"},
			mcp.ResourceContents{URI: "test://static-binary", MIMEType: "image/png", Blob: redPNG}},
		{mcp.Resource{URI: "test://watched-resource", Name: "watched-resource", Description: "A resource that can be watched", MIMEType: "text/plain"},
			mcp.ResourceContents{URI: "test://watched-resource", MIMEType: "text/plain", Text: "Watched resource content."}},
		{mcp.Resource{URI: "test://example-resource", Name: "example-resource", Description: "An example resource", MIMEType: "text/plain"},
			mcp.ResourceContents{URI: "test://example-resource", MIMEType: "text/plain", Text: "Example resource content."}},
	} {
		if err := s.AddResource(&r.res, static(r.rc)); err != nil {
			return err
		}
	}
	return s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template", Description: "A templated resource", MIMEType: "application/json"},
		func(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := r.Vars["id"]
			b, _ := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: r.URI, MIMEType: "application/json", Text: string(b)}}}, nil
		})
}

func (f *fixtures) prompts() error {
	s := f.s
	msg := func(role string, c mcp.Content) mcp.PromptMessage { return mcp.PromptMessage{Role: role, Content: c} }
	add := func(p mcp.Prompt, h mcp.PromptHandler) error { return s.AddPrompt(&p, h) }
	if err := add(mcp.Prompt{Name: "test_simple_prompt", Description: "A simple prompt without arguments"},
		func(ctx context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{msg("user", mcp.TextContent("This is a simple prompt for testing."))}}, nil
		}); err != nil {
		return err
	}
	if err := add(mcp.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with arguments",
		Arguments: []mcp.PromptArgument{{Name: "arg1", Description: "First argument", Required: true}, {Name: "arg2", Description: "Second argument", Required: true}}},
		func(ctx context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{msg("user", mcp.TextContent(
				fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", r.Arguments["arg1"], r.Arguments["arg2"])))}}, nil
		}); err != nil {
		return err
	}
	if err := add(mcp.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt with an embedded resource",
		Arguments: []mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(ctx context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			uri := r.Arguments["resourceUri"]
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				msg("user", mcp.EmbeddedResource(mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Text: "Embedded resource content for testing."})),
				msg("user", mcp.TextContent("Please process the embedded resource above.")),
			}}, nil
		}); err != nil {
		return err
	}
	return add(mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image"},
		func(ctx context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				msg("user", mcp.ImageContent(redPNG, "image/png")),
				msg("user", mcp.TextContent("Please analyze the image above.")),
			}}, nil
		})
}
