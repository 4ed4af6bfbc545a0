package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/mcpgate/mcpgate/discovery"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/internal/settings"
	"github.com/mcpgate/mcpgate/openapi"
)

// genFlags are the generation settings shared by "tools" and "check" (so a
// check regenerates exactly as the manifest was made). Their YAML keys are
// those of serve's settings file, which --config can read.
type genFlags struct {
	ConfigPath string   `name:"config" placeholder:"FILE" help:"YAML settings file (the one serve reads): its spec and tools keys apply."`
	Spec       string   `yaml:"spec" name:"spec" required:"" placeholder:"FILE|URL|-" help:"OpenAPI document: a file, an http(s) URL, or - for stdin."`
	Gen        genTools `yaml:"tools" embed:"" prefix:""` // serve's tools-* settings; their variables too (sameToolsEnvars)
	Validate   bool     `name:"validate" help:"Also run kin-openapi validation and report its findings as warnings."`
	Verbose    bool     `name:"verbose" short:"v" help:"Print every warning (default: the first 10 and a count)."`
}

// genTools is the tools section as the generator sees it.
type genTools struct {
	gateway.GenerateSettings `yaml:",inline" embed:""`
	Overrides                map[string]openapi.Override `yaml:"overrides" name:"overrides" type:"yaml" placeholder:"@FILE" help:"Changes to generated tools, keyed by operationId or \"METHOD /path\": YAML or JSON text, or @FILE."`
}

// toolsSettings are the rows of the settings table that tools and check
// read from a settings file.
func toolsSettings() []settings.Setting {
	list, err := settings.Walk(reflect.TypeFor[genFlags](), strings.TrimSuffix(gateway.EnvPrefix, "_"))
	if err != nil {
		panic(err) // genFlags breaks the table's rules: a programming error
	}
	return list
}

// generate loads the document and generates the tools, printing warnings
// to stderr. read, when set, reads each path item before its tools are
// made (the document's path items are built as generation walks them).
func (g *genFlags) generate(ctx context.Context, stdin io.Reader, stderr io.Writer, read func(path string, item *openapi3.PathItem)) (*openapi.Result, error) {
	if err := g.Gen.Check(); err != nil {
		return nil, &usageError{err.Error()}
	}
	opts := g.Gen.Options()
	opts.Overrides = g.Gen.Overrides
	opts.Consume = true // the document is not used after generation
	opts.OnPathItem = read
	doc, err := openapi.Load(ctx, g.Spec, openapi.LoadOptions{Stdin: stdin, Validate: g.Validate, DeferPaths: true})
	if err != nil {
		return nil, err
	}
	res, err := openapi.GenerateContext(ctx, doc, opts)
	if err != nil {
		return nil, err
	}
	for i, w := range res.Warnings {
		if i == 10 && !g.Verbose {
			fmt.Fprintf(stderr, "warning: %s: %d more warnings (-v shows all)\n", g.Spec, len(res.Warnings)-10)
			break
		}
		fmt.Fprintf(stderr, "warning: %s: %s\n", g.Spec, w)
	}
	return res, nil
}

type toolsCmd struct {
	genFlags
	Format string `name:"format" default:"mcp" enum:"mcp,manifest" help:"mcp prints exactly a tools/list result ({\"tools\":[...]}); manifest adds the routing, security schemes, version and source: commit it and gate changes with 'mcpgate check'."`
	Out    string `name:"out" placeholder:"FILE" help:"Write to this file instead of stdout."`
	Stats  bool   `name:"stats" help:"Print the tools/list's counts, sizes and estimated tokens (bytes/4), and the largest tools, instead of the tools."`
	// Search asks discovery's search offline, as an agent would.
	Search    string `name:"search" placeholder:"QUERY" help:"Print the tools discovery's search answers for QUERY, best first, instead of the tools: how your users' words find your operations."`
	Limit     int    `name:"limit" default:"10" help:"With --search, how many tools (1 to 50)."`
	Thesaurus string `name:"thesaurus" placeholder:"FILE" help:"With --search, a file of your users' words for your operations (the format of serve's tools.thesaurus)."`
}

// Run generates the tools and writes them.
func (c *toolsCmd) Run(ctx context.Context, std streams) error {
	if c.Search != "" {
		return c.search(ctx, std)
	}
	if c.Thesaurus != "" {
		return usagef("--thesaurus is read by --search only")
	}
	res, err := c.generate(ctx, std.stdin, std.stderr, nil)
	if err != nil {
		return err
	}
	if c.Stats {
		st, err := openapi.Stats(res.Tools, 10)
		if err != nil {
			return err
		}
		printStats(std.stdout, c.Spec, st)
		return nil
	}
	// Streamed: a big document's list or manifest is never held whole.
	write := func(w io.Writer) error { return openapi.WriteToolsList(w, res.Tools) }
	if c.Format == "manifest" {
		write = func(w io.Writer) error { _, err := openapi.NewManifest(res).WriteTo(w); return err }
	}
	if c.Out == "" {
		return write(std.stdout)
	}
	if err := writeFileWith(c.Out, write); err != nil {
		return fmt.Errorf("writing %s: %w", c.Out, err)
	}
	fmt.Fprintf(std.stderr, "%s: %d tools written to %s\n", c.Spec, len(res.Tools), c.Out)
	return nil
}

// search builds discovery's index over the tools, as serve does, and
// prints its answer to the query.
func (c *toolsCmd) search(ctx context.Context, std streams) error {
	if c.Limit < 1 || c.Limit > discovery.MaxLimit {
		return usagef("--limit %d: want 1 to %d", c.Limit, discovery.MaxLimit)
	}
	var th *discovery.Thesaurus
	if c.Thesaurus != "" {
		text, err := os.ReadFile(c.Thesaurus)
		if err != nil {
			return err
		}
		if th, err = discovery.ParseThesaurus(c.Thesaurus, string(text)); err != nil {
			return err
		}
	}
	ops := discovery.Operations{}
	res, err := c.generate(ctx, std.stdin, std.stderr, ops.Read)
	if err != nil {
		return err
	}
	ix, err := discovery.New(discovery.FromTools("", res.Tools, ops), discovery.Options{Thesaurus: th})
	if err != nil {
		return err
	}
	found, err := ix.Search(ctx, discovery.Query{Text: c.Search, Limit: c.Limit})
	if err != nil {
		return usagef("--search: %v", strings.TrimPrefix(err.Error(), "discovery: "))
	}
	if len(found) == 0 {
		fmt.Fprintf(std.stdout, "no tool of %s matches %q\n", c.Spec, c.Search)
		return nil
	}
	for i, r := range found {
		fmt.Fprintf(std.stdout, "%2d  %-50s %s %s  (%.2f)\n", i+1, r.Name, r.Method, r.Path, r.Score)
		if r.Description != "" {
			fmt.Fprintf(std.stdout, "    %s\n", r.Description)
		}
	}
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
