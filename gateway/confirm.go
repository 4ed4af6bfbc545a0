package gateway

import (
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

// needsConfirm reports whether the settings have calls of t confirmed by
// the user first (a policy may ask for more).
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

var errDeclined = mcp.NewError(mcp.CodeInvalidParams, "The user did not allow this call; nothing was sent to the API.", nil)

// confirmCall has the user confirm the exact call before it is sent: it
// returns nil once the user agreed, errDeclined when the user did not, or
// the pause that asks (an MRTR round). The answer only counts when it comes
// back with the sealed requestState of this question (its continuation
// says so): the state binds it to this tool, these arguments and this
// caller, so an agent cannot skip the question with a made-up answer, nor
// pass off the answer to another pause as this one. A client that cannot
// ask (no elicitation) is not asked: the call goes on, or with
// confirm_fallback deny is refused with -32021 saying why.
func (g *Gateway) confirmCall(st *servedTool, req *mcp.CallToolRequest, c *toolCall) error {
	if req.Capabilities.Elicitation == nil {
		if g.cfg.ConfirmFallback == "deny" {
			return mcp.ErrMissingCapability(fmt.Sprintf("%s needs the user's confirmation (%s %s may change or delete data), and this client "+
				"declared no elicitation capability to ask its user: the gateway refuses such calls (confirm_fallback: deny). "+
				"Nothing was sent to the API.", st.tool.Name, st.tool.Route.Method, st.tool.Route.Path),
				mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}})
		}
		return nil
	}
	if step, err := mcp.ContinuationAs[string](req.Request); err == nil && step == confirmKey && req.Round >= 1 {
		if ans, ok := req.Elicitation(confirmKey); ok {
			c.asked, c.answer = true, ans.Action
			if yes, _ := ans.Content[confirmKey].(bool); ans.Action == "accept" && yes {
				return nil
			}
			return errDeclined
		}
	}
	what, err := st.ep.Proxy().Describe(st.ep, req.Arguments)
	if err != nil {
		// Arguments the proxy refuses: the call ends with that refusal
		// and sends nothing, so there is nothing to confirm.
		return nil
	}
	c.asked = true
	return mcp.RequireInput(map[string]mcp.InputRequest{confirmKey: mcp.ElicitForm(question(st, what), confirmSchema)}, confirmKey)
}

// question names the call the user is asked about: the tool and the exact
// request it will send ("Delete a pet: DELETE /pets/42?").
func question(st *servedTool, what string) string {
	title := st.tool.Title
	if title == "" {
		title = st.tool.Name
	}
	if len(what) > 300 {
		what = what[:297] + "..."
	}
	return fmt.Sprintf("%s: %s? Allow the agent to make this call; it may change or delete data.", title, what)
}
