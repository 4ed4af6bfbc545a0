package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/mcpgate/mcpgate/openapi"
)

type checkCmd struct {
	genFlags
	Manifest string `name:"manifest" placeholder:"FILE" help:"The committed manifest (from 'mcpgate tools --format manifest')."`
	Strict   bool   `name:"strict" help:"Fail on any change, not only breaking ones."`
	Budget   int    `name:"budget" placeholder:"TOKENS" help:"Fail when the tools/list is over this many estimated tokens (bytes/4), naming the largest tools (0: no budget)."`
}

// Help explains what check reports and its exit codes.
func (checkCmd) Help() string {
	return `Regenerates the tools from the OpenAPI document and compares them with a committed
manifest. Each change is printed as BREAKING (tool removed or renamed, required argument
added, argument removed, type narrowed, annotation made less safe), additive (a tool or
an optional argument added, a type widened, ...) or cosmetic (a title or description).
Exit 0 when they agree or only compatible changes were found, 1 on a breaking change
(with --strict: on any change), 2 on a usage error. Pass the same generation settings
(or the same --config) as when the manifest was made. --budget TOKENS exits 1 when the
tools/list exceeds that many estimated tokens (bytes/4) and names the largest tools.`
}

// Run compares the regenerated tools with the manifest.
func (c *checkCmd) Run(ctx context.Context, io streams) error {
	if c.Budget < 0 {
		return usagef("--budget %d: must be positive", c.Budget)
	}
	if c.Manifest == "" && c.Budget == 0 {
		return usagef("--manifest or --budget is required")
	}
	if c.Manifest == "" {
		res, err := c.generate(ctx, io.stdin, io.stderr, nil)
		if err != nil {
			return err
		}
		return checkBudget(io.stdout, c.Spec, res.Tools, c.Budget)
	}
	data, err := os.ReadFile(c.Manifest)
	if err != nil {
		return fmt.Errorf("reading manifest: %w", err)
	}
	old, err := openapi.DecodeManifest(data)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Manifest, err)
	}
	res, err := c.generate(ctx, io.stdin, io.stderr, nil)
	if err != nil {
		return err
	}
	if c.Budget > 0 {
		if err := checkBudget(io.stdout, c.Spec, res.Tools, c.Budget); err != nil {
			return err
		}
	}
	changes := openapi.Diff(old, openapi.NewManifest(res))
	breaking := 0
	for _, ch := range changes {
		if ch.Breaking {
			breaking++
		}
		fmt.Fprintln(io.stdout, ch.String())
	}
	switch {
	case len(changes) == 0:
		fmt.Fprintf(io.stdout, "ok: %s agrees with %s (%d tools)\n", c.Spec, c.Manifest, len(res.Tools))
		return nil
	case breaking > 0:
		fmt.Fprintf(io.stdout, "%d changes, %d breaking: update %s (mcpgate tools --format manifest) only if the break is intended\n", len(changes), breaking, c.Manifest)
		return &exitError{1}
	case c.Strict:
		fmt.Fprintf(io.stdout, "%d compatible changes (--strict): regenerate %s\n", len(changes), c.Manifest)
		return &exitError{1}
	default:
		fmt.Fprintf(io.stdout, "%d compatible changes\n", len(changes))
		return nil
	}
}

// checkBudget fails (exit 1) when the tools/list is over budget tokens.
func checkBudget(w io.Writer, spec string, tools []openapi.Tool, budget int) error {
	st, err := openapi.Stats(tools, 10)
	if err != nil {
		return err
	}
	if st.Tokens <= budget {
		fmt.Fprintf(w, "ok: %s: tools/list is ~%d tokens, within the budget of %d\n", spec, st.Tokens, budget)
		return nil
	}
	fmt.Fprintf(w, "over budget: %s: tools/list is ~%d tokens (%d bytes, %d tools), budget %d\n", spec, st.Tokens, st.Bytes, st.Tools, budget)
	printStats(w, spec, st)
	return &exitError{1}
}
