package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/corpustest"
)

// Corpus expectations, from scripts/corpus/get.sh (see its MANIFEST.md).
const (
	corpusDocuments  = 59
	corpusOperations = 19661
)

type corpusEntry struct {
	File       string `json:"file"`
	Operations int    `json:"operations"`
}

func corpusEntries(t testing.TB, dir string) []corpusEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatalf("MCPGATE_CORPUS=%s: no usable manifest.json (was get.sh run into it?): %v", dir, err)
	}
	var entries []corpusEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		t.Fatalf("%s/manifest.json: %v", dir, err)
	}
	ops := 0
	for _, e := range entries {
		ops += e.Operations
	}
	if len(entries) < corpusDocuments || ops < corpusOperations {
		t.Fatalf("MCPGATE_CORPUS=%s: %d documents with %d operations, want at least %d and %d", dir, len(entries), ops, corpusDocuments, corpusOperations)
	}
	return entries
}

var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
var argNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// TestCorpus: every corpus document loads, every operation gives exactly
// one tool, names are unique and valid, every schema compiles as JSON Schema
// 2020-12, annotations are complete and routes cover every argument.
//
// Then every input and output schema is compiled by Ajv 2020 in unicode
// mode, as ECMA-262 clients (the TypeScript SDK) compile them
// (scripts/corpus/ajv): the test fails when any tool's schema does not
// compile there.
func TestCorpus(t *testing.T) {
	dir := corpustest.Dir(t)
	entries := corpusEntries(t, dir)
	ecma := newECMACheck(t)
	var docs, ops, tools, schemas int
	for _, e := range entries {
		t.Run(e.File, func(t *testing.T) {
			doc, err := Load(context.Background(), filepath.Join(dir, e.File), LoadOptions{})
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			res, err := Generate(doc, GenerateOptions{})
			if err != nil {
				t.Fatalf("generate: %v", err)
			}
			docs++
			ops += e.Operations
			tools += len(res.Tools)
			if len(res.Tools) != e.Operations {
				t.Errorf("%d tools for %d operations", len(res.Tools), e.Operations)
			}
			checkTools(t, res.Tools, &schemas)
			ecma.add(t, e.File, res.Tools)
			first, err := EncodeToolsList(res.Tools)
			if err != nil {
				t.Fatal(err)
			}
			// Determinism: a second load and generation gives the same bytes
			// (map iteration order differs between the runs), also when the
			// path items are built during generation and dropped after it.
			doc2, err := Load(context.Background(), filepath.Join(dir, e.File), LoadOptions{DeferPaths: true})
			if err != nil {
				t.Fatal(err)
			}
			res2, err := Generate(doc2, GenerateOptions{Consume: true})
			if err != nil {
				t.Fatal(err)
			}
			if w1, w2 := slices.Sorted(slices.Values(res.Warnings)), slices.Sorted(slices.Values(res2.Warnings)); !slices.Equal(w1, w2) {
				t.Errorf("warnings differ with DeferPaths:\n%q\n%q", w1, w2)
			}
			second, err := EncodeToolsList(res2.Tools)
			if err != nil {
				t.Fatal(err)
			}
			m1, _ := NewManifest(res).Encode()
			m2, _ := NewManifest(res2).Encode()
			if !bytes.Equal(first, second) || !bytes.Equal(m1, m2) {
				t.Error("two runs gave different output")
			}
		})
	}
	t.Logf("corpus: %d/%d documents loaded, %d operations, %d tools, %d schemas compiled", docs, len(entries), ops, tools, schemas)
	ecma.run(t)
}

// checkTools asserts the per-tool invariants of the package doc.
func checkTools(t *testing.T, tools []Tool, compiled *int) {
	t.Helper()
	names := map[string]bool{}
	for i := range tools {
		tool := &tools[i]
		if !toolNameRE.MatchString(tool.Name) {
			t.Errorf("tool %q: invalid name", tool.Name)
		}
		if names[tool.Name] {
			t.Errorf("tool %q: duplicate name", tool.Name)
		}
		names[tool.Name] = true
		if tool.Annotations.Title == "" || tool.Title == "" {
			t.Errorf("tool %q: missing title", tool.Name)
		}
		if tool.Annotations.ReadOnlyHint && tool.Annotations.DestructiveHint {
			t.Errorf("tool %q: read-only and destructive", tool.Name)
		}
		var root struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(tool.InputSchema, &root); err != nil || root.Type != "object" {
			t.Errorf("tool %q: inputSchema root is not an object schema: %v %s", tool.Name, err, truncate(string(tool.InputSchema), 200))
		}
		if _, err := CompileInputSchema(tool); err != nil {
			t.Errorf("tool %q: inputSchema: %v", tool.Name, err)
		} else {
			*compiled++
		}
		if tool.OutputSchema != nil {
			if _, err := CompileSchema(tool.Name+"/output", tool.OutputSchema); err != nil {
				t.Errorf("tool %q: outputSchema: %v", tool.Name, err)
			} else {
				*compiled++
			}
		}
		if len(tool.Route.Arguments) != len(root.Properties) {
			t.Errorf("tool %q: %d arguments for %d properties", tool.Name, len(tool.Route.Arguments), len(root.Properties))
		}
		for _, a := range tool.Route.Arguments {
			if _, ok := root.Properties[a.Name]; !ok {
				t.Errorf("tool %q: argument %q not in inputSchema", tool.Name, a.Name)
			}
			if !argNameRE.MatchString(a.Name) {
				t.Errorf("tool %q: invalid argument name %q", tool.Name, a.Name)
			}
		}
		for _, p := range templateParams(tool.Route.Path) {
			found := false
			for _, a := range tool.Route.Arguments {
				found = found || (a.In == InPath && a.Param == p)
			}
			if !found {
				t.Errorf("tool %q: path parameter {%s} has no argument", tool.Name, p)
			}
		}
		if strings.Contains(tool.Route.Path, "#") {
			t.Errorf("tool %q: path %q keeps a fragment", tool.Name, tool.Route.Path)
		}
	}
}

// TestCorpusToolSizes prints what GitHub's and Stripe's tools/list cost
// with full and compact output schemas (issue 14), and checks that compact
// makes the typical and the large tools smaller:
//
//	MCPGATE_CORPUS=DIR go test -run TestCorpusToolSizes -v ./openapi/
func TestCorpusToolSizes(t *testing.T) {
	dir := corpustest.Dir(t)
	for _, name := range []string{"github/api.github.com.json", "apis-guru/stripe.com.json"} {
		doc, err := Load(context.Background(), filepath.Join(dir, name), LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stats := map[string]*ToolStats{}
		for _, mode := range []string{OutputSchemaFull, OutputSchemaCompact, OutputSchemaNone} {
			res, err := Generate(doc, GenerateOptions{OutputSchema: mode})
			if err != nil {
				t.Fatal(err)
			}
			st, err := Stats(res.Tools, 1)
			if err != nil {
				t.Fatal(err)
			}
			stats[mode] = st
			t.Logf("%s, outputSchema %s: %d tools, %d bytes (~%d tokens); per tool p50 %d, p95 %d, max %d bytes (%s)",
				name, mode, st.Tools, st.Bytes, st.Tokens, st.P50Bytes, st.P95Bytes, st.MaxBytes, st.Largest[0].Name)
		}
		full, compact := stats[OutputSchemaFull], stats[OutputSchemaCompact]
		if compact.P50Bytes > full.P50Bytes || compact.P95Bytes >= full.P95Bytes || compact.Bytes >= full.Bytes {
			t.Errorf("%s: compact (p50 %d, p95 %d, %d bytes) is not smaller than full (p50 %d, p95 %d, %d bytes)",
				name, compact.P50Bytes, compact.P95Bytes, compact.Bytes, full.P50Bytes, full.P95Bytes, full.Bytes)
		}
	}
}
