package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgate/mcpgate/policy"
)

// Policy through the real binary with --auth oauth: rules over the
// arguments, the subject and the token's claims, in the YAML settings file.

// policyConfig denies deleteItem of item 13, has carol confirm her reads,
// hides getProfile from callers outside the staff group and slowRead from
// bob.
const policyConfig = `credentials: {mode: passthrough}
policy:
  - {when: 'tool.name == "deleteItem" && args.n == 13', effect: deny}
  - {when: 'tool.name == "listItems" && caller.subject == "carol"', effect: confirm}
  - {when: 'tool.name == "getProfile" && !(has(caller.claims.groups) && "staff" in caller.claims.groups)', effect: deny}
  - {when: 'tool.name == "slowRead" && caller.subject == "bob"', effect: deny}
`

// tokenWith signs a token for sub with extra claims, valid for the gateway
// and the upstream, with both scopes.
func (as *authServer) tokenWith(t *testing.T, sub string, aud []string, extra map[string]any) string {
	t.Helper()
	claims := jwt.MapClaims{"iss": as.URL, "sub": sub, "aud": aud, "scope": "items:read items:write",
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	for k, v := range extra {
		claims[k] = v
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(as.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (rec *credRecorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.seen)
}

// TestPolicyThroughBinary: tools/list per caller follows the rules (a
// rule over the arguments never hides a tool); a denial is a tool error
// naming no rule, and nothing reaches the upstream; a confirm rule asks
// even before a read; a hidden tool's call is refused as an unknown tool's.
func TestPolicyThroughBinary(t *testing.T) {
	as, up := newAuthServer(t), newCredRecorder(t)
	g := startOAuthGateway(t, as, up, policyConfig)
	aud := []string{oauthResource, up.URL}
	staff := map[string]any{"groups": []string{"staff", "ops"}}
	alice := as.tokenWith(t, "alice", aud, staff)
	bob := as.tokenWith(t, "bob", aud, map[string]any{"groups": []string{"ops"}})
	carol := as.tokenWith(t, "carol", aud, staff)
	dave := as.tokenWith(t, "dave", aud, nil) // no groups claim at all

	for _, c := range []struct {
		who, token string
		want       []string
	}{
		{"alice", alice, []string{"deleteItem", "getProfile", "listItems", "slowRead"}},
		{"bob", bob, []string{"deleteItem", "listItems"}},
		{"carol", carol, []string{"deleteItem", "getProfile", "listItems", "slowRead"}},
		{"dave", dave, []string{"deleteItem", "listItems", "slowRead"}},
	} {
		if got := toolSet(t, g.URL, c.token); !slices.Equal(got, c.want) {
			t.Errorf("%s sees %v, want %v", c.who, got, c.want)
		}
	}

	// Denied by argument: a tool error that names no rule; nothing sent.
	before := up.count()
	res := callAs(t, g.URL, alice, "deleteItem", map[string]any{"n": 13}, nil)
	msg := resultText(res)
	if res["isError"] != true || msg != policy.DeniedMessage {
		t.Fatalf("deleteItem 13: %v", res)
	}
	for _, leak := range []string{"rule", "args", "13", "deleteItem ==", "when"} {
		if strings.Contains(msg, leak) {
			t.Errorf("the denial says %q: %s", leak, msg)
		}
	}
	if up.count() != before {
		t.Fatalf("a denied call reached the upstream: %s", up.last())
	}
	// The same tool with other arguments passes (after the user confirms
	// the destructive call).
	ask := callAs(t, g.URL, alice, "deleteItem", map[string]any{"n": 1}, nil)
	done := callAs(t, g.URL, alice, "deleteItem", map[string]any{"n": 1}, map[string]any{"requestState": ask["requestState"], "inputResponses": confirmAnswer})
	if done["resultType"] != "complete" || done["isError"] == true || up.last() != "DELETE /items/1 auth=Bearer "+alice+" key=" {
		t.Fatalf("deleteItem 1: %v; the upstream saw %q", done, up.last())
	}

	// Confirm on a read: carol is asked before listItems, alice is not.
	before = up.count()
	ask = callAs(t, g.URL, carol, "listItems", map[string]any{}, nil)
	if ask["resultType"] != "input_required" || up.count() != before {
		t.Fatalf("carol's listItems should ask first, sending nothing: %v (upstream %d → %d)", ask, before, up.count())
	}
	done = callAs(t, g.URL, carol, "listItems", map[string]any{}, map[string]any{"requestState": ask["requestState"], "inputResponses": confirmAnswer})
	if done["resultType"] != "complete" || done["isError"] == true || up.count() != before+1 {
		t.Fatalf("carol's confirmed listItems: %v", done)
	}
	if res := callAs(t, g.URL, alice, "listItems", map[string]any{}, nil); res["resultType"] != "complete" {
		t.Fatalf("alice's listItems asked: %v", res)
	}

	// Hidden: bob's call of getProfile is refused exactly as an unknown
	// tool's, and sends nothing.
	before = up.count()
	_, hidden := rpcAs(t, g.URL, bob, clusterCaps, "tools/call", "getProfile", map[string]any{"name": "getProfile", "arguments": map[string]any{}})
	_, unknown := rpcAs(t, g.URL, bob, clusterCaps, "tools/call", "noSuchTool", map[string]any{"name": "noSuchTool", "arguments": map[string]any{}})
	if hidden == nil || unknown == nil || fmt.Sprint(hidden["code"]) != fmt.Sprint(unknown["code"]) {
		t.Errorf("bob's call of a hidden tool: %v; of an unknown tool: %v", hidden, unknown)
	}
	if up.count() != before {
		t.Errorf("a hidden tool's call reached the upstream: %s", up.last())
	}
	// The operator's log names the rule; the caller never saw it.
	if !strings.Contains(g.Log.String(), "a policy refused a call") {
		t.Errorf("no log line for the refusal:\n%s", g.Log.String())
	}
}
