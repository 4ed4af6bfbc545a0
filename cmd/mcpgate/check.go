package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mcpgate/mcpgate/openapi"
)

type checkCmd struct {
	genFlags
	Manifest string `name:"manifest" required:"" placeholder:"FILE" help:"The committed manifest (from 'mcpgate tools --format manifest')."`
	Strict   bool   `name:"strict" help:"Fail on any change, not only breaking ones."`
}

// Help explains what check reports and its exit codes.
func (checkCmd) Help() string {
	return `Regenerates the tools from the OpenAPI document and compares them with a committed
manifest. Each change is printed as BREAKING (tool removed or renamed, required argument
added, argument removed, type narrowed, annotation made less safe), additive (a tool or
an optional argument added, a type widened, ...) or cosmetic (a title or description).
Exit 0 when they agree or only compatible changes were found, 1 on a breaking change
(with --strict: on any change), 2 on a usage error. Pass the same generation settings
(or the same --config) as when the manifest was made.`
}

// Run compares the regenerated tools with the manifest.
func (c *checkCmd) Run(ctx context.Context, io streams) error {
	data, err := os.ReadFile(c.Manifest)
	if err != nil {
		return fmt.Errorf("reading manifest: %w", err)
	}
	old, err := openapi.DecodeManifest(data)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Manifest, err)
	}
	res, err := c.generate(ctx, io.stdin, io.stderr)
	if err != nil {
		return err
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
