package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/mcpgate/mcpgate/openapi"
)

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return checkCommand(ctx, args, os.Stdin, stdout, stderr)
}

func checkCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("check", "--spec FILE (--manifest FILE [--strict] | --budget TOKENS) [filters]",
		"Regenerate the tools from the OpenAPI document and compare them with a committed\n"+
			"manifest (from 'mcpgate tools --format manifest'). Each change is printed as\n"+
			"BREAKING (tool removed or renamed, required argument added, argument removed,\n"+
			"type narrowed, annotation made less safe) or compatible.\n"+
			"Exit 0 when they agree or only compatible changes were found, 1 on a breaking\n"+
			"change (with --strict: on any change), 2 on a usage error.\n"+
			"Pass the same filter flags as when the manifest was made.\n"+
			"--budget TOKENS exits 1 when the tools/list exceeds that many estimated\n"+
			"tokens (bytes/4) and names the largest tools.", stderr)
	var g genFlags
	g.register(fs)
	manifestPath := fs.String("manifest", "", "the committed manifest (required)")
	strict := fs.Bool("strict", false, "fail on any change, not only breaking ones")
	budget := fs.Int("budget", 0, "fail when the tools/list is over this many estimated tokens (0: no budget)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *budget < 0 {
		return usagef("--budget %d: must be positive", *budget)
	}
	if *manifestPath == "" && *budget == 0 {
		return usagef("--manifest or --budget is required")
	}
	if *manifestPath == "" {
		res, err := g.generate(ctx, stdin, stderr)
		if err != nil {
			return err
		}
		return checkBudget(stdout, g.spec, res.Tools, *budget)
	}
	data, err := os.ReadFile(*manifestPath)
	if err != nil {
		return fmt.Errorf("reading manifest: %w", err)
	}
	old, err := openapi.DecodeManifest(data)
	if err != nil {
		return fmt.Errorf("%s: %w", *manifestPath, err)
	}
	res, err := g.generate(ctx, stdin, stderr)
	if err != nil {
		return err
	}
	if *budget > 0 {
		if err := checkBudget(stdout, g.spec, res.Tools, *budget); err != nil {
			return err
		}
	}
	changes := openapi.Diff(old, openapi.NewManifest(res))
	breaking := 0
	for _, c := range changes {
		if c.Breaking {
			breaking++
		}
		fmt.Fprintln(stdout, c.String())
	}
	switch {
	case len(changes) == 0:
		fmt.Fprintf(stdout, "ok: %s agrees with %s (%d tools)\n", g.spec, *manifestPath, len(res.Tools))
		return nil
	case breaking > 0:
		fmt.Fprintf(stdout, "%d changes, %d breaking: update %s (mcpgate tools --format manifest) only if the break is intended\n", len(changes), breaking, *manifestPath)
		return &exitError{1}
	case *strict:
		fmt.Fprintf(stdout, "%d compatible changes (--strict): regenerate %s\n", len(changes), *manifestPath)
		return &exitError{1}
	default:
		fmt.Fprintf(stdout, "%d compatible changes\n", len(changes))
		return nil
	}
}

// checkBudget fails (exit 1) when the tools/list is over budget tokens,
// naming the largest tools.
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
