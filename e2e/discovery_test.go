package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/internal/npmtest"
)

// largeSpec is a document of 60 resources with five operations each (300
// tools, far past the default budget), every resource's tools behind its own
// scopes, and one administrator's operation.
func largeSpec(resources []string) string {
	var paths, scopes []string
	for _, r := range resources {
		scopes = append(scopes, fmt.Sprintf(`%q:"read",%q:"write"`, r+":read", r+":write"))
		sec := func(s string) string { return fmt.Sprintf(`"security":[{"oauth":[%q]}]`, r+":"+s) }
		id := `"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"integer"}}]`
		ok := `"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object"}}}}}`
		paths = append(paths,
			fmt.Sprintf(`"/%ss":{"get":{"operationId":"list_%ss","summary":"List %ss",%s,%s},"post":{"operationId":"create_%s","summary":"Create a %s",%s,%s}}`,
				r, r, r, sec("read"), ok, r, r, sec("write"), ok),
			fmt.Sprintf(`"/%ss/{id}":{"get":{"operationId":"get_%s","summary":"Get a %s",%s,%s,%s},"patch":{"operationId":"update_%s","summary":"Update a %s",%s,%s,%s},"delete":{"operationId":"delete_%s","summary":"Delete a %s","description":"Deletes the %s for good.",%s,%s,"responses":{"204":{"description":"deleted"}}}}`,
				r, r, r, sec("read"), id, ok, r, r, sec("write"), id, ok, r, r, r, sec("write"), id))
	}
	paths = append(paths, `"/admin/purge":{"post":{"operationId":"purge_everything","summary":"Purge every record of every resource","security":[{"oauth":["admin"]}],"responses":{"204":{"description":"purged"}}}}`)
	return `{"openapi":"3.1.0","info":{"title":"big inventory API","version":"1"},"components":{"securitySchemes":{"oauth":{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"https://as.example/token","scopes":{` +
		strings.Join(scopes, ",") + `,"admin":"everything"}}}}}},"paths":{` + strings.Join(paths, ",") + `}}`
}

// largeResources are 60 things an inventory API keeps.
func largeResources() []string {
	return strings.Fields(`widget gadget invoice customer warehouse shipment supplier coupon refund ticket
		pallet carrier route driver vehicle depot bin shelf barcode label batch lot recall inspection
		vendor contract quote receipt payment ledger budget forecast campaign discount bundle catalog
		category brand review rating wishlist cart checkout subscription plan license seat team member
		role permission webhook token device sensor alarm report dashboard memo archive`)
}

// TestDiscoveryThroughBinary: a 301-operation document in discovery mode
// (auto, past the budget) through the real binary with the go-sdk client
// (2026-07-28) and the TypeScript SDK client (2025-11-25): tools/list is
// small, search finds the operation a user means, describe gives its
// definition, call runs it as a direct call would, a destructive one after
// the user confirmed; an operation the caller's scopes do not allow is
// neither found nor callable.
func TestDiscoveryThroughBinary(t *testing.T) {
	as, up := newAuthServer(t), newCredRecorder(t)
	resources := largeResources()
	dir := t.TempDir()
	spec := filepath.Join(dir, "big.json")
	if err := os.WriteFile(spec, []byte(largeSpec(resources)), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, nil, "--spec", spec, "--upstream", up.URL, "--store", "memory",
		"--auth-mode", "oauth", "--auth-issuer", as.URL, "--auth-resource", oauthResource)
	var scopes []string
	for _, r := range resources {
		scopes = append(scopes, r+":read", r+":write")
	}
	token := as.token(t, "alice", strings.Join(scopes, " "), oauthResource, up.URL)

	e := &elicitor{answer: &sdk.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}}
	w := newWire()
	cs := connectHTTP(t, g.URL, connectOptions{Bearer: token, Wire: w, Client: &sdk.ClientOptions{ElicitationHandler: e.handle}})
	names := toolNames(t, cs)
	slices.Sort(names)
	if !slices.Equal(names, []string{"call", "describe", "search"}) {
		t.Fatalf("tools/list: %v", names)
	}
	listed := ""
	for _, r := range w.responses() {
		if strings.Contains(r, `"name":"search"`) {
			listed = r
		}
	}
	if len(listed) > 8<<10 {
		t.Errorf("tools/list in discovery mode is %d bytes", len(listed))
	}
	res := call(t, cs, "search", map[string]any{"query": "remove the shipment for good", "limit": 5})
	wantOK(t, "search", res)
	if !strings.Contains(text(res), "delete_shipment") {
		t.Fatalf("search did not find delete_shipment: %s", text(res))
	}
	if hidden := call(t, cs, "search", map[string]any{"query": "purge every record"}); strings.Contains(text(hidden), "purge_everything") {
		t.Errorf("search shows a tool the caller's scopes hide: %s", text(hidden))
	}
	res = call(t, cs, "describe", map[string]any{"names": []string{"delete_shipment"}})
	if !strings.Contains(text(res), `"inputSchema"`) || !strings.Contains(text(res), `"destructiveHint":true`) {
		t.Errorf("describe: %s", text(res))
	}
	res = call(t, cs, "call", map[string]any{"name": "delete_shipment", "arguments": map[string]any{"id": 42}})
	wantOK(t, "call delete_shipment", res)
	if q := e.questions(); len(q) != 1 || !strings.Contains(q[0], "DELETE /shipments/42") {
		t.Errorf("call delete_shipment asked %q, want one question naming DELETE /shipments/42", q)
	}
	if got := up.last(); got != "DELETE /shipments/42 auth=Bearer "+token+" key=" {
		t.Errorf("the upstream saw %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "call", Arguments: map[string]any{"name": "purge_everything", "arguments": map[string]any{}}})
	_, unknown := cs.CallTool(ctx, &sdk.CallToolParams{Name: "call", Arguments: map[string]any{"name": "no_such_tool"}})
	if err == nil || unknown == nil || strings.ReplaceAll(err.Error(), "purge_everything", "X") != strings.ReplaceAll(unknown.Error(), "no_such_tool", "X") {
		t.Errorf("call of a scope-hidden tool: %v; of an unknown one: %v", err, unknown)
	}
	// A direct call of a real tool still works.
	wantOK(t, "get_widget", call(t, cs, "get_widget", map[string]any{"id": 1}))

	// The TypeScript SDK client (2025-11-25) does the same.
	const what = "the TypeScript SDK client test"
	node := npmtest.NeedTool(t, "node", what)
	tsdir := npmtest.Install(t, npmtest.NeedTool(t, "npm", what), "tsclient", "mcpgate-e2e-tsclient-", "@modelcontextprotocol/sdk/package.json")
	script, err := os.ReadFile(filepath.Join("tsclient", "discovery.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tsdir, "discovery.mjs"), script, 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(node, filepath.Join(tsdir, "discovery.mjs"), g.URL, token, "delete an invoice", "delete_invoice", `{"id":7}`)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("discovery.mjs: %v\n%s", err, stderr.String())
	}
	var out struct {
		Tools  []string `json:"tools"`
		Search struct {
			Results []struct{ Name string } `json:"results"`
		} `json:"search"`
		Describe     string   `json:"describe"`
		Call         tsResult `json:"call"`
		Elicitations []string `json:"elicitations"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("discovery.mjs printed %q: %v", stdout.String(), err)
	}
	slices.Sort(out.Tools)
	if !slices.Equal(out.Tools, []string{"call", "describe", "search"}) || len(out.Search.Results) == 0 || out.Search.Results[0].Name != "delete_invoice" {
		t.Errorf("TypeScript client: tools %v, search %+v", out.Tools, out.Search)
	}
	if out.Call.IsError || len(out.Elicitations) != 1 || !strings.Contains(out.Elicitations[0], "DELETE /invoices/7") || up.last() != "DELETE /invoices/7 auth=Bearer "+token+" key=" {
		t.Errorf("TypeScript client's call: %+v, questions %q, upstream %q", out.Call, out.Elicitations, up.last())
	}
}

// TestDiscoveryThesaurusThroughBinary: the operator's tools.thesaurus
// teaches the real binary's search a word of its users, SIGHUP applies an
// edit of the file, and a broken file is refused while the old index keeps
// serving.
func TestDiscoveryThesaurusThroughBinary(t *testing.T) {
	up := newCredRecorder(t)
	dir := t.TempDir()
	spec, words := filepath.Join(dir, "big.json"), filepath.Join(dir, "words.txt")
	for p, text := range map[string]string{spec: largeSpec(largeResources()), words: "# our users' words\ncontraption: gadget\n"} {
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g := startGateway(t, nil, "--spec", spec, "--upstream", up.URL, "--store", "memory", "--tools-thesaurus", words)
	first := func() string {
		t.Helper()
		res, rpcErr := rpc(t, g.URL, "tools/call", "search", map[string]any{"name": "search", "arguments": map[string]any{"query": "list the contraptions", "limit": 3}})
		if rpcErr != nil {
			t.Fatalf("search: %v", rpcErr)
		}
		results, _ := res["structuredContent"].(map[string]any)["results"].([]any)
		if len(results) == 0 {
			return ""
		}
		return results[0].(map[string]any)["name"].(string)
	}
	if got := first(); got != "list_gadgets" {
		t.Fatalf("search with the operator's word found %q first, want list_gadgets", got)
	}
	hup := func(text string) {
		t.Helper()
		if err := os.WriteFile(words, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := g.cmd.Process.Signal(sighup); err != nil {
			t.Fatal(err)
		}
	}
	hup("contraption: widget\n")
	deadline := time.Now().Add(5 * time.Second)
	for first() != "list_widgets" {
		if time.Now().After(deadline) {
			t.Fatalf("SIGHUP did not apply the edited thesaurus:\n%s", g.Log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	hup("contraption: widget\nthe: gadget\n")
	deadline = time.Now().Add(5 * time.Second)
	for !strings.Contains(g.Log.String(), `words.txt:2: \"the: gadget\": \"the\" is a stop word`) {
		if time.Now().After(deadline) {
			t.Fatalf("the broken thesaurus was not refused with its line:\n%s", g.Log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := first(); got != "list_widgets" {
		t.Errorf("after a refused reload search found %q first, want list_widgets still", got)
	}
}
