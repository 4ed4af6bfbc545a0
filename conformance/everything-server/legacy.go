package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpgate/mcpgate/mcp"
)

// legacyTools are the fixtures of the 2025-11-25 scenarios. They are written
// against the multi round-trip API like every other tool: on a legacy
// session the server turns their input requests into real server-to-client
// requests.
func (f *fixtures) legacyTools() error {
	tools := []struct {
		name, desc, schema string
		ask                func(args map[string]any) mcp.InputRequest
		done               func(r *mcp.Request) (string, bool)
	}{
		{"test_sampling", "Asks the client's model to answer a prompt",
			`{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}`,
			func(args map[string]any) mcp.InputRequest {
				p, _ := args["prompt"].(string)
				return mcp.Sample(mcp.CreateMessageParams{MaxTokens: 100, Messages: []mcp.SamplingMessage{{Role: "user", Content: mcp.TextContent(p)}}})
			},
			func(r *mcp.Request) (string, bool) {
				t, ok := sampledText(r, "sample")
				return "LLM response: " + t, ok
			}},
		{"test_elicitation", "Asks the user for a username and an email",
			`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`,
			func(args map[string]any) mcp.InputRequest {
				m, _ := args["message"].(string)
				return mcp.ElicitForm(m, json.RawMessage(`{"type":"object","properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}`))
			}, elicited},
		{"test_elicitation_sep1034_defaults", "Elicits a form whose fields have default values", "",
			func(map[string]any) mcp.InputRequest {
				return mcp.ElicitForm("Please review your profile", json.RawMessage(`{"type":"object","properties":{
					"name":{"type":"string","default":"John Doe"},
					"age":{"type":"integer","default":30},
					"score":{"type":"number","default":95.5},
					"status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},
					"verified":{"type":"boolean","default":true}}}`))
			}, elicited},
		{"test_elicitation_sep1330_enums", "Elicits a form with every kind of enum", "",
			func(map[string]any) mcp.InputRequest {
				return mcp.ElicitForm("Please choose", json.RawMessage(`{"type":"object","properties":{
					"untitledSingle":{"type":"string","enum":["option1","option2","option3"]},
					"titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
					"legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
					"untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2","option3"]}},
					"titledMulti":{"type":"array","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`))
			}, elicited},
	}
	for _, t := range tools {
		t := t
		key := "sample"
		if t.ask(map[string]any{}).Method == mcp.MethodElicit {
			key = "form"
		}
		if err := f.add(t.name, t.desc, t.schema, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if text_, ok := t.done(r.Request); ok {
				return text(text_), nil
			}
			var args map[string]any
			_ = r.Bind(&args)
			return nil, mcp.RequireInput(map[string]mcp.InputRequest{key: t.ask(args)}, nil)
		}); err != nil {
			return err
		}
	}
	return nil
}

// elicited renders the answer to the "form" elicitation.
func elicited(r *mcp.Request) (string, bool) {
	res, ok := r.Elicitation("form")
	if !ok {
		return "", false
	}
	b, _ := json.Marshal(res.Content)
	return fmt.Sprintf("Elicitation completed: action=%s, content=%s", res.Action, b), true
}
