package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcpgate/mcpgate/openapi"
)

// genFlags are the generation flags shared by "tools" and "check", so a
// check regenerates exactly as the manifest was made.
type genFlags struct {
	spec                               string
	includeMethods, excludeTags        string
	includePaths, excludePaths         string
	includeOps, excludeOps             string
	overrides                          string
	maxName, maxDescription, maxOutput int
	maxInput                           int
	validate, verbose                  bool
}

func (g *genFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.spec, "spec", "", "OpenAPI document: a file, an http(s) URL, or - for stdin (required)")
	fs.StringVar(&g.includeMethods, "include-methods", "", "only these HTTP methods, comma-separated (e.g. GET,HEAD)")
	fs.StringVar(&g.excludeTags, "exclude-tags", "", "drop operations with any of these tags, comma-separated")
	fs.StringVar(&g.includePaths, "include-paths", "", "only paths matching these globs, comma-separated (* within a segment, ** across)")
	fs.StringVar(&g.excludePaths, "exclude-paths", "", "drop paths matching these globs, comma-separated")
	fs.StringVar(&g.includeOps, "include-operations", "", "only these operationIds, comma-separated")
	fs.StringVar(&g.excludeOps, "exclude-operations", "", "drop these operationIds, comma-separated")
	fs.StringVar(&g.overrides, "overrides", "", "overrides file (JSON or YAML) keyed by operationId or \"METHOD /path\"")
	fs.IntVar(&g.maxName, "max-name-length", 64, "maximum tool name length (16..128)")
	fs.IntVar(&g.maxDescription, "max-description-length", 1024, "maximum tool description length in bytes (-1: unbounded)")
	fs.IntVar(&g.maxOutput, "max-output-schema-bytes", 64<<10, "bound outputSchemas: past it, the $defs farthest from the root become true (-1: unbounded)")
	fs.IntVar(&g.maxInput, "max-input-schema-bytes", 0, "bound inputSchemas the same way (0: 64 KiB; -1: unbounded)")
	fs.BoolVar(&g.validate, "validate", false, "also run kin-openapi validation and report its findings as warnings")
	fs.BoolVar(&g.verbose, "v", false, "print every warning (default: the first 10 and a count)")
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// generate loads the document and generates the tools, printing warnings
// to stderr.
func (g *genFlags) generate(ctx context.Context, stdin io.Reader, stderr io.Writer) (*openapi.Result, error) {
	if g.spec == "" {
		return nil, usagef("--spec is required")
	}
	opts := openapi.GenerateOptions{
		IncludeMethods: splitList(g.includeMethods), ExcludeTags: splitList(g.excludeTags),
		IncludePaths: splitList(g.includePaths), ExcludePaths: splitList(g.excludePaths),
		IncludeOperations: splitList(g.includeOps), ExcludeOperations: splitList(g.excludeOps),
		MaxNameLength: g.maxName, MaxDescriptionLength: g.maxDescription, MaxOutputSchemaBytes: g.maxOutput,
		MaxInputSchemaBytes: g.maxInput,
	}
	if g.maxName < 16 || g.maxName > 128 {
		return nil, usagef("--max-name-length %d: must be between 16 and 128", g.maxName)
	}
	if g.overrides != "" {
		data, err := os.ReadFile(g.overrides)
		if err != nil {
			return nil, fmt.Errorf("overrides: %w", err)
		}
		ov, err := openapi.ParseOverrides(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", g.overrides, err)
		}
		opts.Overrides = ov
	}
	doc, err := openapi.Load(ctx, g.spec, openapi.LoadOptions{Stdin: stdin, Validate: g.validate})
	if err != nil {
		return nil, err
	}
	res, err := openapi.Generate(doc, opts)
	if err != nil {
		return nil, err
	}
	for i, w := range res.Warnings {
		if i == 10 && !g.verbose {
			fmt.Fprintf(stderr, "warning: %s: %d more warnings (-v shows all)\n", g.spec, len(res.Warnings)-10)
			break
		}
		fmt.Fprintf(stderr, "warning: %s: %s\n", g.spec, w)
	}
	return res, nil
}

func runTools(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return toolsCommand(ctx, args, os.Stdin, stdout, stderr)
}

func toolsCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("tools", "--spec FILE|URL|- [--format mcp|manifest] [--out FILE] [filters]",
		"Generate one MCP tool per OpenAPI operation.\n"+
			"--format mcp prints exactly a tools/list result ({\"tools\":[...]});\n"+
			"--format manifest adds the routing, security schemes, version and source:\n"+
			"commit it and gate changes with 'mcpgate check'.", stderr)
	var g genFlags
	g.register(fs)
	format := fs.String("format", "mcp", "output format: mcp or manifest")
	out := fs.String("out", "", "write to this file instead of stdout")
	stats := fs.Bool("stats", false, "print the tools/list's counts, sizes and estimated tokens (bytes/4) instead of the tools")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *format != "mcp" && *format != "manifest" {
		return usagef("--format %q: want mcp or manifest", *format)
	}
	res, err := g.generate(ctx, stdin, stderr)
	if err != nil {
		return err
	}
	if *stats {
		st, err := openapi.Stats(res.Tools, 10)
		if err != nil {
			return err
		}
		printStats(stdout, g.spec, st)
		return nil
	}
	if *format == "mcp" {
		// Streamed: a big document's list is never held whole.
		if *out == "" {
			return openapi.WriteToolsList(stdout, res.Tools)
		}
		if err := writeFileWith(*out, func(w io.Writer) error { return openapi.WriteToolsList(w, res.Tools) }); err != nil {
			return fmt.Errorf("writing %s: %w", *out, err)
		}
		fmt.Fprintf(stderr, "%s: %d tools written to %s\n", g.spec, len(res.Tools), *out)
		return nil
	}
	data, err := openapi.NewManifest(res).Encode()
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = stdout.Write(data)
		return err
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", *out, err)
	}
	fmt.Fprintf(stderr, "%s: %d tools written to %s\n", g.spec, len(res.Tools), *out)
	return nil
}

// printStats writes what loading the tools/list costs an agent.
func printStats(w io.Writer, spec string, st *openapi.ToolStats) {
	fmt.Fprintf(w, "%s: %d tools (%d with an outputSchema), tools/list %d bytes, ~%d tokens\n",
		spec, st.Tools, st.WithOutputSchema, st.Bytes, st.Tokens)
	fmt.Fprintf(w, "per tool: p50 %d bytes, p95 %d bytes, max %d bytes\n", st.P50Bytes, st.P95Bytes, st.MaxBytes)
	if len(st.Largest) > 0 {
		fmt.Fprintln(w, "largest tools (bytes, ~tokens, inputSchema, outputSchema):")
	}
	for _, t := range st.Largest {
		fmt.Fprintf(w, "  %-50s %8d %7d %8d %8d\n", t.Name, t.Bytes, t.Tokens, t.InputSchemaBytes, t.OutputSchemaBytes)
	}
}

// writeFileWith creates (or truncates) path and writes it with write.
func writeFileWith(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
