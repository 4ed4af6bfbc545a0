package gateway

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
)

// Confirmation modes (Config.Confirm).
const (
	ConfirmDestructive = "destructive" // ask before tools whose destructiveHint is true (default)
	ConfirmWrites      = "writes"      // ask before every mutating tool
	ConfirmNone        = "none"        // never ask
)

const confirmKey = "confirm"

var confirmSchema = json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean","title":"Allow this call","description":"Check to let the agent make this call."}},"required":["confirm"]}`)

// needsConfirm reports whether calls of t are confirmed by the user first.
func (g *Gateway) needsConfirm(t *openapi.Tool) bool {
	switch g.cfg.Confirm {
	case ConfirmNone:
		return false
	case ConfirmWrites:
		return t.Route.Mutating
	default:
		return t.Annotations.DestructiveHint && !t.Annotations.ReadOnlyHint
	}
}

// confirmFirst wraps a tool handler so that, when the client can show a
// form (it declared elicitation), the user confirms the exact call before
// it reaches the upstream. The answer only counts when it comes back with
// the sealed requestState of the question (round ≥ 1): the state binds it
// to this tool, these arguments and this caller, so an agent cannot skip
// the question by sending a made-up answer. Clients without elicitation
// are not asked: the call goes on, or with confirm_fallback deny is refused.
func confirmFirst(t *openapi.Tool, deny bool, next mcp.ToolHandler) mcp.ToolHandler {
	check := confirmCheck(t, deny)
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := check(ctx, req); err != nil {
			if err == errDeclined {
				return mcp.ToolError("The user did not allow this call; nothing was sent to the API."), nil
			}
			return nil, err
		}
		return next(ctx, req)
	}
}

var errDeclined = mcp.NewError(mcp.CodeInvalidParams, "The user did not allow this call; nothing was sent to the API.", nil)

// confirmCheck returns nil when the call may proceed, errDeclined when the
// user said no, and the pause (RequireInput) when the question is still to
// be asked. It is also a task tool's Prepare, so a task is only created
// once the user agreed. A client that cannot ask (no elicitation) passes,
// unless deny: then it gets -32021 saying why.
func confirmCheck(t *openapi.Tool, deny bool) func(ctx context.Context, req *mcp.CallToolRequest) error {
	question := fmt.Sprintf("Allow the agent to call %q (%s %s)? It may change or delete data.", t.Title, t.Route.Method, t.Route.Path)
	refusal := mcp.ErrMissingCapability(fmt.Sprintf("%s needs the user's confirmation (%s %s may change or delete data), and this client "+
		"declared no elicitation capability to ask its user: the gateway refuses such calls (confirm_fallback: deny). "+
		"Nothing was sent to the API.", t.Name, t.Route.Method, t.Route.Path), mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}})
	return func(ctx context.Context, req *mcp.CallToolRequest) error {
		if req.Capabilities.Elicitation == nil {
			if deny {
				return refusal
			}
			return nil
		}
		if ans, ok := req.Elicitation(confirmKey); ok && req.Round >= 1 {
			if ok, _ := ans.Content[confirmKey].(bool); ans.Action == "accept" && ok {
				return nil
			}
			return errDeclined
		}
		return mcp.RequireInput(map[string]mcp.InputRequest{confirmKey: mcp.ElicitForm(question, confirmSchema)}, nil)
	}
}
