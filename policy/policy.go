// Package policy decides, per caller, which tools a caller may see and call:
// an ordered list of rules, each a CEL condition over the caller, the tool and
// the call's arguments with an effect (allow, deny or confirm). It also owns
// that condition language ([Env], [Condition]), which package quota reuses
// for its own rules.
//
// The variables a condition can use:
//
//	caller.subject     string             the authenticated subject ("" when anonymous)
//	caller.scopes      list(string)       the granted scopes
//	caller.claims      map(string, dyn)   the token's claims ({} without one)
//	tool.name          string             the MCP tool name
//	tool.api           string             the API (OpenAPI document) it belongs to
//	tool.method        string             the HTTP method, upper case
//	tool.path          string             the path template, e.g. /pets/{petId}
//	tool.annotations   map(string, dyn)   title, readOnlyHint, destructiveHint, idempotentHint, openWorldHint
//	args               map(string, dyn)   the call's arguments (integers are int, other numbers double)
//
// so `tool.name == "getPet" && args.petId == 2` is a rule.
//
// Invariants:
//
//   - Rules are compiled when the policy is built ([Compile]); a rule that
//     does not compile, is not a boolean expression or has an unknown effect
//     is an error naming the rule's index. Nothing is parsed per call.
//   - First match wins; when no rule matches, the call is allowed.
//   - Fail closed: a rule whose evaluation fails (a missing claim or
//     argument, a type mismatch, arguments that are not a JSON object) denies
//     the call. Write has(caller.claims.x) to test for a claim.
//   - Listing never depends on arguments: a tool is hidden only when, for
//     this caller, the first rule that matches regardless of the arguments is
//     a deny and no earlier rule that depends on the arguments could allow
//     it. A rule that depends on the arguments can never hide a tool.
//   - A denial tells the caller only that a policy refused it ([DeniedMessage]),
//     never which rule, nor why; [Decision] carries the rule and any
//     evaluation error for the operator's log.
//   - A Policy is immutable after Compile and safe for concurrent use. The
//     cost of a decision is linear in the number of rules and in the size of
//     the arguments (decoded at most once per [Input], and only when a rule
//     reads them).
package policy

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/google/cel-go/common/types/ref"
)

// Effect is what a matching rule decides.
type Effect string

// The effects. Confirm allows the call after the user confirmed it (the
// gateway asks, as for a destructive call, even when the tool is not
// destructive).
const (
	Allow   Effect = "allow"
	Deny    Effect = "deny"
	Confirm Effect = "confirm"
)

// DeniedMessage is the text a refused caller sees. It names no rule.
const DeniedMessage = "The gateway's access policy refused this call."

// Rule is one policy rule as configured: `{when: "<CEL>", effect: allow|deny|confirm}`.
type Rule struct {
	When   string `json:"when" yaml:"when"`
	Effect Effect `json:"effect" yaml:"effect"`
}

// Caller describes who calls. Build it once per request (from the MCP
// principal and, with OAuth, the token's claims) and pass it by pointer:
// its CEL view is computed once. Do not change it after first use.
type Caller struct {
	Subject string
	Scopes  []string
	Claims  map[string]any

	cel  *callerVals // the CEL view, built at first use
	once sync.Once
}

// Tool describes a tool. Build one per tool when the tool set is built and
// reuse it for every call: its CEL view is computed once. Do not change it
// after first use.
type Tool struct {
	Name   string
	API    string
	Method string
	Path   string

	Annotations Annotations

	cel  *toolVals // the CEL view, built at first use
	once sync.Once
}

// Annotations are the MCP behaviour hints of a tool.
type Annotations struct {
	Title           string
	ReadOnlyHint    bool
	DestructiveHint bool
	IdempotentHint  bool
	OpenWorldHint   bool
}

// Input is one call to decide on: who, which tool, with which arguments.
// Policy and quota decisions on the same Input share one decoding of the
// arguments. An Input is not safe for concurrent use.
type Input struct {
	Caller *Caller
	Tool   *Tool
	// Args are the call's raw JSON arguments (an object; nil or null stand
	// for {}).
	Args json.RawMessage

	args    map[string]any // decoded Args, once decoded
	argsErr error
	decoded bool
	argsCEL ref.Val
}

// Decision is the outcome of a policy check.
type Decision struct {
	Effect Effect
	// Rule is the index of the rule that decided, or -1 when none matched
	// (the default allow).
	Rule int
	// Err is the evaluation error that made the decision a denial, if any:
	// for the operator's log, never for the caller.
	Err error
}

// Allowed reports whether the call may proceed (possibly after a
// confirmation: see Effect).
func (d Decision) Allowed() bool { return d.Effect != Deny }

// Policy is a compiled rule list. The zero value and nil allow everything.
type Policy struct {
	rules []compiledRule
}

type compiledRule struct {
	effect Effect
	cond   *Condition
}

// Compile checks and compiles rules. An error names the first bad rule by
// its index (from 0) and says what is wrong with it.
func Compile(rules []Rule) (*Policy, error) {
	if len(rules) == 0 {
		return &Policy{}, nil
	}
	env, err := NewEnv()
	if err != nil {
		return nil, err
	}
	p := &Policy{rules: make([]compiledRule, len(rules))}
	for i, r := range rules {
		switch r.Effect {
		case Allow, Deny, Confirm:
		default:
			return nil, fmt.Errorf("policy rule %d: effect %q: want allow, deny or confirm", i, r.Effect)
		}
		cond, err := env.Compile(r.When)
		if err != nil {
			return nil, fmt.Errorf("policy rule %d: when: %w", i, err)
		}
		p.rules[i] = compiledRule{effect: r.Effect, cond: cond}
	}
	return p, nil
}

// Len is the number of rules.
func (p *Policy) Len() int {
	if p == nil {
		return 0
	}
	return len(p.rules)
}

// Decide decides a call (tools/call, discovery's call, task creation): the
// effect of the first rule whose condition holds for in, Allow when none
// does, Deny when a rule fails to evaluate.
func (p *Policy) Decide(in *Input) Decision {
	if p == nil {
		return Decision{Effect: Allow, Rule: -1}
	}
	for i := range p.rules {
		r := &p.rules[i]
		ok, err := r.cond.Eval(in)
		if err != nil {
			return Decision{Effect: Deny, Rule: i, Err: err}
		}
		if ok {
			return Decision{Effect: r.effect, Rule: i}
		}
	}
	return Decision{Effect: Allow, Rule: -1}
}

// Visible reports whether caller may see tool (tools/list, discovery's
// search and describe): whether some arguments could make Decide allow or
// confirm the call. The arguments are unknown here, so a rule that depends
// on them never hides a tool; see the package invariants.
func (p *Policy) Visible(caller *Caller, tool *Tool) bool {
	if p == nil {
		return true
	}
	in := Input{Caller: caller, Tool: tool}
	for i := range p.rules {
		r := &p.rules[i]
		switch r.cond.evalUnknownArgs(&in) {
		case matches:
			return r.effect != Deny
		case mayMatch:
			if r.effect != Deny {
				return true // some arguments reach an allowing rule
			}
			// Some arguments are denied here; others go on to the next rules.
		case fails:
			return false // Decide would deny every call that gets this far
		}
	}
	return true
}
