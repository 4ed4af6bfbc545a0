package policy

import (
	"encoding/json"
	"fmt"
	"testing"
)

// tenRules is a realistic rule set: none of them matches the benchmarked
// call, so a decision evaluates all ten (the worst case of first-match).
var tenRules = []Rule{
	{When: `tool.name == "getPet" && args.petId == 2`, Effect: Deny},
	{When: `tool.method == "DELETE" && !("admin" in caller.scopes)`, Effect: Deny},
	{When: `tool.method == "DELETE"`, Effect: Confirm},
	{When: `has(caller.claims.banned) && caller.claims.banned == true`, Effect: Deny},
	{When: `caller.subject == "mallory"`, Effect: Deny},
	{When: `tool.api == "billing" && !("billing" in caller.scopes)`, Effect: Deny},
	{When: `tool.path.startsWith("/admin/")`, Effect: Deny},
	{When: `!tool.annotations.readOnlyHint && caller.claims.tenant == "trial"`, Effect: Deny},
	{When: `tool.name == "createPet" && has(args.tag) && args.tag == "forbidden"`, Effect: Deny},
	{When: `tool.annotations.destructiveHint && caller.claims.role != "admin"`, Effect: Confirm},
}

// BenchmarkDecideTenRules measures a call decision over ten rules that all
// have to be evaluated; the goal is at most 5 µs per call.
func BenchmarkDecideTenRules(b *testing.B) {
	p, err := Compile(tenRules)
	if err != nil {
		b.Fatal(err)
	}
	caller := &Caller{Subject: "alice", Scopes: []string{"pets:read", "pets:write"}, Claims: map[string]any{"tenant": "acme", "role": "user"}}
	tool := &Tool{Name: "getPet", API: "petstore", Method: "GET", Path: "/pets/{petId}", Annotations: Annotations{ReadOnlyHint: true}}
	args := json.RawMessage(`{"petId":7,"verbose":true}`)
	b.ReportAllocs()
	for b.Loop() {
		in := Input{Caller: caller, Tool: tool, Args: args}
		if d := p.Decide(&in); d.Effect != Allow {
			b.Fatal(d)
		}
	}
}

// BenchmarkVisibleTenRules measures the listing decision (partial
// evaluation, arguments unknown) of one tool over the same ten rules.
func BenchmarkVisibleTenRules(b *testing.B) {
	p, err := Compile(tenRules)
	if err != nil {
		b.Fatal(err)
	}
	caller := &Caller{Subject: "alice", Scopes: []string{"pets:read"}, Claims: map[string]any{"tenant": "acme", "role": "user"}}
	tools := make([]*Tool, 100)
	for i := range tools {
		tools[i] = &Tool{Name: fmt.Sprintf("op%d", i), API: "petstore", Method: "GET", Path: "/things", Annotations: Annotations{ReadOnlyHint: true}}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, t := range tools {
			if !p.Visible(caller, t) {
				b.Fatal(t.Name)
			}
		}
	}
}
