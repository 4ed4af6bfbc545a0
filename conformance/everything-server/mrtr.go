package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/mrtr"
)

// stateCodec seals requestState with keys from MCPGATE_STATE_KEYS (or a
// generated key) and a replay cache, so each token resumes once.
func stateCodec(logger *slog.Logger) (mcp.StateCodec, error) {
	ring, err := mrtr.KeyRingFromEnv(logger)
	if err != nil {
		return nil, err
	}
	c, err := mrtr.NewCodec(ring, mrtr.Options{ReplayCache: mrtr.NewMemoryReplayCache(mrtr.DefaultReplayCacheSize, nil)})
	if err != nil {
		return nil, err
	}
	return mcp.SealedState(c), nil
}

func formSchema(prop, typ, desc string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%q:{"type":%q,"description":%q}},"required":[%q]}`, prop, typ, desc, prop))
}

var (
	askName    = mcp.ElicitForm("What is your name?", formSchema("name", "string", "Your name"))
	askConfirm = mcp.ElicitForm("Please confirm to continue.", formSchema("ok", "boolean", "Confirm"))
	askColor   = mcp.ElicitForm("What is your favorite colour?", formSchema("color", "string", "Your favorite colour"))
	askContext = mcp.ElicitForm("What context should the prompt use?", formSchema("context", "string", "Context"))
	askCapital = mcp.Sample(mcp.CreateMessageParams{MaxTokens: 100, Messages: []mcp.SamplingMessage{{Role: "user", Content: mcp.TextContent("What is the capital of France?")}}})
	askGreet   = mcp.Sample(mcp.CreateMessageParams{MaxTokens: 50, Messages: []mcp.SamplingMessage{{Role: "user", Content: mcp.TextContent("Write a one-line greeting.")}}})
)

// field returns the accepted string (or bool) content field of an
// elicitation answer.
func field(r *mcp.Request, key, name string) (string, bool) {
	res, ok := r.Elicitation(key)
	if !ok || res.Action != "accept" {
		return "", false
	}
	switch v := res.Content[name].(type) {
	case string:
		return v, v != ""
	case bool:
		return fmt.Sprint(v), true
	}
	return "", false
}

func sampledText(r *mcp.Request, key string) (string, bool) {
	res, ok := r.Sampling(key)
	if !ok {
		return "", false
	}
	var c mcp.Content
	if json.Unmarshal(res.Content, &c) == nil && c.Text != "" {
		return c.Text, true
	}
	return string(res.Content), true
}

type flow struct {
	Step string `json:"step"`
	Name string `json:"name,omitempty"`
}

func (f *fixtures) mrtrTools() error {
	tools := []struct {
		name, desc string
		h          mcp.ToolHandler
	}{
		{"test_input_required_result_elicitation", "Asks the user's name, then greets them", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if name, ok := field(r.Request, "user_name", "name"); ok {
				return text("Hello, " + name + "!"), nil
			}
			return nil, mcp.RequireInput(map[string]mcp.InputRequest{"user_name": askName}, nil)
		}},
		{"test_input_required_result_sampling", "Asks the client's model a question", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if answer, ok := sampledText(r.Request, "capital_question"); ok {
				return text("The model answered: " + answer), nil
			}
			return nil, mcp.RequireInput(map[string]mcp.InputRequest{"capital_question": askCapital}, nil)
		}},
		{"test_input_required_result_list_roots", "Asks the client for its roots", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if roots, ok := r.Roots("client_roots"); ok {
				uris := make([]string, len(roots.Roots))
				for i, rt := range roots.Roots {
					uris[i] = rt.URI
				}
				return text(fmt.Sprintf("The client has %d roots: %s", len(uris), strings.Join(uris, ", "))), nil
			}
			return nil, mcp.RequireInput(map[string]mcp.InputRequest{"client_roots": mcp.ListRoots()}, nil)
		}},
		{"test_input_required_result_request_state", "Confirms, carrying state across the round", f.confirmWithState},
		{"test_input_required_result_tampered_state", "Confirms, carrying integrity-protected state", f.confirmWithState},
		{"test_input_required_result_multiple_inputs", "Asks for three inputs at once", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name, okName := field(r.Request, "user_name", "name")
			greeting, okGreet := sampledText(r.Request, "greeting")
			roots, okRoots := r.Roots("client_roots")
			if okName && okGreet && okRoots {
				return text(fmt.Sprintf("Name: %s; greeting: %s; roots: %d", name, greeting, len(roots.Roots))), nil
			}
			ask := map[string]mcp.InputRequest{}
			if !okName {
				ask["user_name"] = askName
			}
			if !okGreet {
				ask["greeting"] = askGreet
			}
			if !okRoots {
				ask["client_roots"] = mcp.ListRoots()
			}
			return nil, mcp.RequireInput(ask, flow{Step: "multiple"})
		}},
		{"test_input_required_result_multi_round", "Asks for a name, then a colour, over two rounds", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			st, _ := mcp.ContinuationAs[flow](r.Request)
			switch st.Step {
			case "step2":
				if color, ok := field(r.Request, "step2", "color"); ok {
					return text(fmt.Sprintf("%s likes %s", st.Name, color)), nil
				}
				return nil, mcp.RequireInput(map[string]mcp.InputRequest{"step2": askColor}, st)
			default:
				if name, ok := field(r.Request, "step1", "name"); ok && st.Step == "step1" {
					return nil, mcp.RequireInput(map[string]mcp.InputRequest{"step2": askColor}, flow{Step: "step2", Name: name})
				}
				return nil, mcp.RequireInput(map[string]mcp.InputRequest{"step1": askName}, flow{Step: "step1"})
			}
		}},
		{"test_input_required_result_capabilities", "Asks only for what the client declared", func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if name, ok := field(r.Request, "user_name", "name"); ok {
				return text("Hello, " + name + "!"), nil
			}
			if answer, ok := sampledText(r.Request, "capital_question"); ok {
				return text("The model answered: " + answer), nil
			}
			switch {
			case r.Capabilities.Elicitation != nil:
				return nil, mcp.RequireInput(map[string]mcp.InputRequest{"user_name": askName}, nil)
			case r.Capabilities.Sampling != nil:
				return nil, mcp.RequireInput(map[string]mcp.InputRequest{"capital_question": askCapital}, nil)
			}
			return nil, mcp.ErrMissingCapability("This tool needs elicitation or sampling",
				mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}})
		}},
	}
	for _, t := range tools {
		if err := f.add(t.name, t.desc, "", t.h); err != nil {
			return err
		}
	}
	return f.s.AddPrompt(&mcp.Prompt{Name: "test_input_required_result_prompt", Description: "A prompt that asks the user for context first"},
		func(ctx context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if c, ok := field(r.Request, "user_context", "context"); ok {
				return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("Context: " + c)}}}, nil
			}
			return nil, mcp.RequireInput(map[string]mcp.InputRequest{"user_context": askContext}, nil)
		})
}

// confirmWithState pauses with a sealed continuation and, on the retry,
// proves it came back intact.
func (f *fixtures) confirmWithState(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	st, err := mcp.ContinuationAs[flow](r.Request)
	if err == nil && st.Step == "confirm" {
		if ok, answered := field(r.Request, "confirm", "ok"); answered {
			return text("state-ok: confirmed=" + ok), nil
		}
	}
	return nil, mcp.RequireInput(map[string]mcp.InputRequest{"confirm": askConfirm}, flow{Step: "confirm"})
}

// contentOf reads a string field of an elicitation answer.
func contentOf(raw []byte, name string) string {
	var res mcp.ElicitResult
	if json.Unmarshal(raw, &res) != nil {
		return ""
	}
	s, _ := res.Content[name].(string)
	return s
}

// accepted reports whether an elicitation answer accepted with a true field.
func accepted(raw []byte, name string) bool {
	var res mcp.ElicitResult
	if json.Unmarshal(raw, &res) != nil || res.Action != "accept" {
		return false
	}
	b, _ := res.Content[name].(bool)
	return b
}
