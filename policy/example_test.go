package policy_test

import (
	"encoding/json"
	"fmt"

	"github.com/mcpgate/mcpgate/policy"
)

func Example() {
	p, err := policy.Compile([]policy.Rule{
		{When: `tool.name == "getPet" && args.petId == 2`, Effect: policy.Deny},
		{When: `tool.method == "DELETE" && !("admin" in caller.scopes)`, Effect: policy.Deny},
		{When: `tool.method == "DELETE"`, Effect: policy.Confirm},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Built once per tool and per request.
	getPet := &policy.Tool{Name: "getPet", API: "petstore", Method: "GET", Path: "/pets/{petId}"}
	deletePet := &policy.Tool{Name: "deletePet", API: "petstore", Method: "DELETE", Path: "/pets/{petId}"}
	user := &policy.Caller{Subject: "alice", Scopes: []string{"pets"}}
	admin := &policy.Caller{Subject: "root", Scopes: []string{"admin"}}

	fmt.Println(p.Decide(&policy.Input{Caller: user, Tool: getPet, Args: json.RawMessage(`{"petId":2}`)}).Effect)
	fmt.Println(p.Decide(&policy.Input{Caller: user, Tool: getPet, Args: json.RawMessage(`{"petId":1}`)}).Effect)
	fmt.Println(p.Decide(&policy.Input{Caller: admin, Tool: deletePet, Args: json.RawMessage(`{"petId":1}`)}).Effect)
	// Listing: getPet stays visible (its denial depends on the arguments),
	// deletePet is hidden from a non-admin.
	fmt.Println(p.Visible(user, getPet), p.Visible(user, deletePet), p.Visible(admin, deletePet))
	// Output:
	// deny
	// allow
	// confirm
	// true false true
}

func ExampleCompile_error() {
	_, err := policy.Compile([]policy.Rule{
		{When: `true`, Effect: policy.Allow},
		{When: `tool.nam == "x"`, Effect: policy.Deny},
	})
	fmt.Println(err != nil)
	// Output: true
}
