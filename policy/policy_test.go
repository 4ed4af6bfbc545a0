package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

var (
	alice = &Caller{Subject: "alice", Scopes: []string{"pets:read", "pets:write"}, Claims: map[string]any{"role": "admin", "tenant": "acme"}}
	bob   = &Caller{Subject: "bob", Scopes: []string{"pets:read"}, Claims: map[string]any{"tenant": "globex"}}
	anon  = &Caller{}

	getPet    = &Tool{Name: "getPet", API: "petstore", Method: "GET", Path: "/pets/{petId}", Annotations: Annotations{ReadOnlyHint: true}}
	deletePet = &Tool{Name: "deletePet", API: "petstore", Method: "DELETE", Path: "/pets/{petId}", Annotations: Annotations{DestructiveHint: true}}
	createPet = &Tool{Name: "createPet", API: "petstore", Method: "POST", Path: "/pets"}
)

// TestPolicyTable runs rule sets against callers and calls: the call
// decision (Decide) and the listing decision (Visible) of each.
func TestPolicyTable(t *testing.T) {
	type call struct {
		caller  *Caller
		tool    *Tool
		args    string
		want    Effect
		rule    int  // index of the deciding rule, -1 for the default
		visible bool // Visible(caller, tool)
	}
	tests := []struct {
		name  string
		rules []Rule
		calls []call
	}{
		{
			name:  "no rules allow everything",
			rules: nil,
			calls: []call{
				{anon, deletePet, `{"petId":1}`, Allow, -1, true},
			},
		},
		{
			name: "argument rule: deny one pet, the tool stays listed",
			rules: []Rule{
				{When: `tool.name == "getPet" && args.petId == 2`, Effect: Deny},
			},
			calls: []call{
				{alice, getPet, `{"petId":2}`, Deny, 0, true},
				{alice, getPet, `{"petId":2.0}`, Deny, 0, true},
				{alice, getPet, `{"petId":3}`, Allow, -1, true},
				{alice, createPet, `{"name":"x"}`, Allow, -1, true},
			},
		},
		{
			name: "scopes and annotations: writes need the write scope",
			rules: []Rule{
				{When: `!tool.annotations.readOnlyHint && !("pets:write" in caller.scopes)`, Effect: Deny},
			},
			calls: []call{
				{bob, getPet, `{"petId":1}`, Allow, -1, true},
				{bob, createPet, `{}`, Deny, 0, false},
				{alice, createPet, `{}`, Allow, -1, true},
			},
		},
		{
			name: "claims: admins confirm deletes, others may not delete, default deny",
			rules: []Rule{
				{When: `tool.method == "DELETE" && has(caller.claims.role) && caller.claims.role == "admin"`, Effect: Confirm},
				{When: `tool.method == "DELETE"`, Effect: Deny},
				{When: `tool.annotations.readOnlyHint`, Effect: Allow},
				{When: `true`, Effect: Deny},
			},
			calls: []call{
				{alice, deletePet, `{"petId":1}`, Confirm, 0, true},
				{bob, deletePet, `{"petId":1}`, Deny, 1, false},
				{bob, getPet, `{"petId":1}`, Allow, 2, true},
				{bob, createPet, `{}`, Deny, 3, false},
				{anon, getPet, `null`, Allow, 2, true},
			},
		},
		{
			name: "an allow that depends on arguments keeps a default-denied tool listed",
			rules: []Rule{
				{When: `tool.name == "createPet" && args.name.startsWith("test-")`, Effect: Allow},
				{When: `caller.subject != "alice"`, Effect: Deny},
			},
			calls: []call{
				{bob, createPet, `{"name":"test-rex"}`, Allow, 0, true},
				{bob, createPet, `{"name":"rex"}`, Deny, 1, true},
				{bob, getPet, `{"petId":1}`, Deny, 1, false},
				{alice, getPet, `{"petId":1}`, Allow, -1, true},
			},
		},
		{
			name: "an argument deny before a caller deny cannot save the tool",
			rules: []Rule{
				{When: `args.petId > 100`, Effect: Deny},
				{When: `caller.claims.tenant == "globex"`, Effect: Deny},
			},
			calls: []call{
				{bob, getPet, `{"petId":1}`, Deny, 1, false},
				{alice, getPet, `{"petId":101}`, Deny, 0, true},
				{alice, getPet, `{"petId":5}`, Allow, -1, true},
			},
		},
		{
			name: "fail closed: a missing claim or argument denies",
			rules: []Rule{
				{When: `caller.claims.role == "admin"`, Effect: Allow},
				{When: `args.petId == 1`, Effect: Deny},
			},
			calls: []call{
				{alice, getPet, `{"petId":1}`, Allow, 0, true},
				{bob, getPet, `{"petId":1}`, Deny, 0, false}, // bob has no role claim
				{anon, getPet, `{}`, Deny, 0, false},
			},
		},
		{
			name: "arguments that are not an object deny a rule that reads them",
			rules: []Rule{
				{When: `has(args.x)`, Effect: Deny},
			},
			calls: []call{
				{alice, getPet, `[1,2]`, Deny, 0, true},
				{alice, getPet, `{"x":1}`, Deny, 0, true},
				{alice, getPet, `{"y":{"z":[1,"a",null,true]}}`, Allow, -1, true},
			},
		},
		{
			name: "subject, api and path",
			rules: []Rule{
				{When: `tool.api == "petstore" && tool.path.startsWith("/pets/") && caller.subject == "bob"`, Effect: Confirm},
			},
			calls: []call{
				{bob, getPet, `{"petId":1}`, Confirm, 0, true},
				{bob, createPet, `{}`, Allow, -1, true},
				{alice, getPet, `{"petId":1}`, Allow, -1, true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile(tt.rules)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tt.calls {
				in := &Input{Caller: c.caller, Tool: c.tool, Args: json.RawMessage(c.args)}
				d := p.Decide(in)
				if d.Effect != c.want || d.Rule != c.rule {
					t.Errorf("%s calls %s(%s): got %s by rule %d (err %v), want %s by rule %d",
						c.caller.Subject, c.tool.Name, c.args, d.Effect, d.Rule, d.Err, c.want, c.rule)
				}
				if got := p.Visible(c.caller, c.tool); got != c.visible {
					t.Errorf("%s lists %s: visible %v, want %v", c.caller.Subject, c.tool.Name, got, c.visible)
				}
			}
		})
	}
}

func TestCompileErrorsNameTheRule(t *testing.T) {
	tests := []struct {
		rules []Rule
		want  []string
	}{
		{[]Rule{{When: "true", Effect: Allow}, {When: "tool.nme == 1", Effect: Deny}}, []string{"policy rule 1", "undeclared reference"}},
		{[]Rule{{When: `tool.name == "x" &&`, Effect: Deny}}, []string{"policy rule 0", "Syntax error"}},
		{[]Rule{{When: `tool.name`, Effect: Deny}}, []string{"policy rule 0", "want a bool"}},
		{[]Rule{{When: `true`, Effect: "maybe"}}, []string{"policy rule 0", `"maybe"`, "allow, deny or confirm"}},
		{[]Rule{{When: ``, Effect: Allow}}, []string{"policy rule 0"}},
	}
	for _, tt := range tests {
		_, err := Compile(tt.rules)
		if err == nil {
			t.Errorf("%v: compiled", tt.rules)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q lacks %q", tt.rules, err, w)
			}
		}
	}
}

func TestDecisionErrIsKept(t *testing.T) {
	p, err := Compile([]Rule{{When: `caller.claims.role == "admin"`, Effect: Allow}})
	if err != nil {
		t.Fatal(err)
	}
	d := p.Decide(&Input{Caller: bob, Tool: getPet})
	if d.Allowed() || d.Err == nil || !strings.Contains(d.Err.Error(), "role") {
		t.Fatalf("decision %+v: want a denial carrying the evaluation error", d)
	}
	if strings.Contains(DeniedMessage, "rule") {
		t.Fatal("the denial message must not mention rules")
	}
}

func TestArgumentsDecodedOnce(t *testing.T) {
	p, err := Compile([]Rule{
		{When: `args.a == 1`, Effect: Deny},
		{When: `args.b == "x"`, Effect: Deny},
	})
	if err != nil {
		t.Fatal(err)
	}
	in := &Input{Caller: alice, Tool: getPet, Args: json.RawMessage(`{"a":2,"b":"y"}`)}
	if d := p.Decide(in); d.Effect != Allow {
		t.Fatalf("got %+v", d)
	}
	in.Args = json.RawMessage(`{"a":1}`) // decoded already: the first decoding is kept
	if d := p.Decide(in); d.Effect != Allow {
		t.Fatalf("arguments were decoded again: %+v", d)
	}
}

func TestNilPolicyAllows(t *testing.T) {
	var p *Policy
	if d := p.Decide(&Input{}); d.Effect != Allow || d.Rule != -1 {
		t.Fatalf("nil policy: %+v", d)
	}
	if !p.Visible(nil, nil) || p.Len() != 0 {
		t.Fatal("nil policy hides")
	}
}

func TestDecodeArgs(t *testing.T) {
	m, err := decodeArgs([]byte(` {"i":9007199254740993,"f":1.5,"e":1e3,"s":"\u00e9","l":[],"o":{}} `))
	if err != nil {
		t.Fatal(err)
	}
	if m["i"] != int64(9007199254740993) || m["f"] != 1.5 || m["e"] != 1000.0 || m["s"] != "é" {
		t.Fatalf("decoded %#v", m)
	}
	for _, bad := range []string{`{"a":`, `{} {}`, `"x"`, `{"a":1,}`} {
		if _, err := decodeArgs([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}
