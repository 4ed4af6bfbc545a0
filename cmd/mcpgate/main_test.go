package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const petsV1 = `openapi: 3.0.3
info: {title: Pets, version: "1"}
paths:
  /pets:
    get:
      operationId: listPets
      parameters:
        - {name: limit, in: query, schema: {type: integer}}
      responses: {"200": {description: ok}}
    post:
      operationId: createPet
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties: {name: {type: string}}
      responses: {"201": {description: ok}}
  /pets/{id}:
    delete:
      operationId: deletePet
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses: {"204": {description: ok}}
`

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, streams{strings.NewReader(""), &stdout, &stderr})
	return code, stdout.String(), stderr.String()
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestToolsFormats(t *testing.T) {
	dir := t.TempDir()
	spec := writeFile(t, dir, "pets.yaml", petsV1)
	code, out, errOut := runCLI(t, "tools", "--spec", spec)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var list map[string][]map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || len(list["tools"]) != 3 {
		t.Fatalf("not a tools/list result: %s", out)
	}
	for _, tool := range list["tools"] {
		if _, ok := tool["route"]; ok {
			t.Errorf("routing leaked into tools/list: %v", tool)
		}
		if tool["annotations"] == nil || tool["inputSchema"] == nil {
			t.Errorf("incomplete tool: %v", tool)
		}
	}
	manifest := filepath.Join(dir, "m.json")
	if code, _, errOut := runCLI(t, "tools", "--spec", spec, "--format", "manifest", "--out", manifest); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	first, _ := os.ReadFile(manifest)
	runCLI(t, "tools", "--spec", spec, "--format", "manifest", "--out", manifest)
	second, _ := os.ReadFile(manifest)
	if !bytes.Equal(first, second) || !bytes.Contains(first, []byte(`"route"`)) || !bytes.Contains(first, []byte(`"version": 1`)) {
		t.Errorf("manifest not deterministic or incomplete:\n%s", first)
	}
	// stdin
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"tools", "--spec", "-"}, streams{strings.NewReader(petsV1), &stdout, &stderr}); code != 0 {
		t.Fatal(stderr.String())
	}
	if stdout.String() != out {
		t.Error("stdin output differs from file output")
	}
}

func TestCheckDrift(t *testing.T) {
	dir := t.TempDir()
	spec := writeFile(t, dir, "pets.yaml", petsV1)
	manifest := filepath.Join(dir, "m.json")
	if code, _, errOut := runCLI(t, "tools", "--spec", spec, "--format", "manifest", "--out", manifest); code != 0 {
		t.Fatal(errOut)
	}
	cases := []struct {
		name     string
		doc      string
		strict   bool
		code     int
		contains []string
	}{
		{"same", petsV1, false, 0, []string{"ok: "}},
		{"description only", strings.Replace(petsV1, "operationId: listPets", "operationId: listPets\n      description: Lists pets.", 1), false, 0, []string{"cosmetic: listPets: description changed"}},
		{"description only strict", strings.Replace(petsV1, "operationId: listPets", "operationId: listPets\n      description: Lists pets.", 1), true, 1, []string{"compatible"}},
		{"optional argument added", strings.Replace(petsV1, "properties: {name: {type: string}}", "properties: {name: {type: string}, age: {type: integer}}", 1), false, 0, []string{`additive: createPet: optional argument "age" added`}},
		{"required argument added", strings.Replace(petsV1, "{name: limit, in: query, schema: {type: integer}}", "{name: limit, in: query, schema: {type: integer}}\n        - {name: owner, in: query, required: true, schema: {type: string}}", 1), false, 1, []string{`BREAKING: listPets: required argument "owner" added`}},
		{"type narrowed", strings.Replace(petsV1, "properties: {name: {type: string}}", "properties: {name: {type: integer}}", 1), false, 1, []string{`BREAKING: createPet: argument "name" type narrowed from string to integer`}},
		{"renamed", strings.Replace(petsV1, "operationId: deletePet", "operationId: removePet", 1), false, 1, []string{"BREAKING: deletePet: renamed to removePet"}},
		{"removed", strings.Replace(petsV1, "    post:\n      operationId: createPet", "    x-post:\n      operationId: createPet", 1), false, 1, []string{"BREAKING: createPet: tool removed"}},
		{"less safe", strings.Replace(petsV1, "operationId: listPets", "operationId: listPets\n      x-mcp-annotations: {readOnlyHint: false}", 1), false, 1, []string{"BREAKING: listPets: readOnlyHint changed from true to false"}},
		{"safer", strings.Replace(petsV1, "operationId: deletePet", "operationId: deletePet\n      x-mcp-annotations: {destructiveHint: false}", 1), false, 0, []string{"additive: deletePet: destructiveHint changed from true to false"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "pets.yaml", c.doc)
			args := []string{"check", "--spec", p, "--manifest", manifest}
			if c.strict {
				args = append(args, "--strict")
			}
			code, out, errOut := runCLI(t, args...)
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s%s", code, c.code, out, errOut)
			}
			for _, want := range c.contains {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

func TestUsageAndErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "broken.json", `{"openapi":"3.0.0","paths":{"/x":{"get":7}}}`)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "Usage: mcpgate <command>"},
		{[]string{"frobnicate"}, 2, `unexpected argument frobnicate`},
		{[]string{"tools"}, 2, "missing flags: --spec"},
		{[]string{"tools", "--spec", "x", "--format", "yaml"}, 2, `--format must be one of "mcp","manifest" but got "yaml"`},
		{[]string{"tools", "--bogus"}, 2, "unknown flag --bogus"},
		{[]string{"tools", "--spec", "x", "extra"}, 2, `unexpected argument extra`},
		{[]string{"tools", "--help"}, 0, "mcp prints exactly a tools/list result"},
		{[]string{"check", "--spec", "x"}, 2, "--manifest or --budget is required"},
		{[]string{"tools", "--spec", filepath.Join(dir, "nope.yaml")}, 1, "nope.yaml"},
		{[]string{"tools", "--spec", bad}, 1, "broken.json: paths./x.get: operation is not an object"},
		{[]string{"check", "--spec", bad, "--manifest", filepath.Join(dir, "none.json")}, 1, "none.json"},
		{[]string{"version"}, 0, ""},
	}
	for _, c := range cases {
		code, out, errOut := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(out+errOut, c.want) {
			t.Errorf("mcpgate %v: exit %d, want %d; output lacks %q:\n%s%s", c.args, code, c.code, c.want, out, errOut)
		}
	}
	if _, out, _ := runCLI(t, "version"); !strings.HasPrefix(out, "mcpgate ") {
		t.Errorf("version output %q", out)
	}
}

func TestToolsOverridesAndFilters(t *testing.T) {
	dir := t.TempDir()
	spec := writeFile(t, dir, "pets.yaml", petsV1)
	ov := writeFile(t, dir, "ov.yaml", "listPets: {name: list_all_pets, title: All pets}\n\"DELETE /pets/{id}\": {hide: true}\ncreatePet: {destructiveHint: true, redactResponse: [owner.email]}\n")
	code, out, errOut := runCLI(t, "tools", "--spec", spec, "--overrides", "@"+ov, "--format", "manifest")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{`"name": "list_all_pets"`, `"title": "All pets"`, `"owner.email"`} {
		if !strings.Contains(out, want) {
			t.Errorf("manifest lacks %s", want)
		}
	}
	if strings.Contains(out, "deletePet") {
		t.Error("hidden operation still a tool")
	}
	bad := writeFile(t, dir, "bad.yaml", "listPets: {nmae: x}\n")
	if code, _, errOut := runCLI(t, "tools", "--spec", spec, "--overrides", "@"+bad); code != 2 || !strings.Contains(errOut, "bad.yaml") || !strings.Contains(errOut, "nmae") {
		t.Errorf("bad overrides: exit %d: %s", code, errOut)
	}
	code, out, _ = runCLI(t, "tools", "--spec", spec, "--include-methods", "get,delete", "--exclude-operations", "deletePet")
	if code != 0 || strings.Count(out, `"name":`) != 1 || !strings.Contains(out, `"name":"listPets"`) {
		t.Errorf("filters: exit %d: %s", code, out)
	}
	// The variables are serve's: the same environment selects the same tools.
	t.Setenv("MCPGATE_TOOLS_INCLUDE_METHODS", "get,delete")
	t.Setenv("MCPGATE_TOOLS_EXCLUDE_OPERATIONS", "deletePet")
	code, out, _ = runCLI(t, "tools", "--spec", spec)
	if code != 0 || strings.Count(out, `"name":`) != 1 || !strings.Contains(out, `"name":"listPets"`) {
		t.Errorf("filters from serve's variables: exit %d: %s", code, out)
	}
}

func TestToolsStatsAndBudget(t *testing.T) {
	dir := t.TempDir()
	spec := writeFile(t, dir, "pets.yaml", petsV1)
	code, out, errOut := runCLI(t, "tools", "--spec", spec, "--stats")
	if code != 0 || !strings.Contains(out, "3 tools") || !strings.Contains(out, "p95") || !strings.Contains(out, "listPets") {
		t.Fatalf("--stats: exit %d: %s %s", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "check", "--spec", spec, "--budget", "100000"); code != 0 || !strings.HasPrefix(out, "ok:") {
		t.Errorf("within budget: exit %d: %s", code, out)
	}
	code, out, _ = runCLI(t, "check", "--spec", spec, "--budget", "10")
	if code != 1 || !strings.Contains(out, "over budget") || !strings.Contains(out, "createPet") {
		t.Errorf("over budget: exit %d: %s", code, out)
	}
	if code, _, _ := runCLI(t, "check", "--spec", spec); code != 2 {
		t.Errorf("neither --manifest nor --budget: exit %d, want 2", code)
	}
}

// TestToolsSearch: tools --search answers as discovery's search tool would,
// with an operator's thesaurus, and says what is wrong with a bad call.
func TestToolsSearch(t *testing.T) {
	dir := t.TempDir()
	spec := writeFile(t, dir, "pets.yaml", petsV1)
	words := writeFile(t, dir, "words.txt", "critters: pets\n")
	code, out, errOut := runCLI(t, "tools", "--spec", spec, "--search", "remove a pet", "--limit", "1")
	if code != 0 || !strings.HasPrefix(out, " 1  deletePet ") || !strings.Contains(out, "DELETE /pets/{id}") || strings.Contains(out, " 2  ") {
		t.Errorf("--search: exit %d: %q %s", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "tools", "--spec", spec, "--search", "critters"); code != 0 || !strings.Contains(out, "matches \"critters\"") {
		t.Errorf("--search without the thesaurus: exit %d: %q", code, out)
	}
	if code, out, _ := runCLI(t, "tools", "--spec", spec, "--search", "critters", "--thesaurus", words); code != 0 || !strings.HasPrefix(out, " 1  listPets ") {
		t.Errorf("--search with the thesaurus: exit %d: %q", code, out)
	}
	bad := writeFile(t, dir, "bad.txt", "critters: pets\nthe: pets\n")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--search", "pets", "--limit", "0"}, 2, "--limit 0: want 1 to 50"},
		{[]string{"--thesaurus", words}, 2, "--thesaurus is read by --search only"},
		{[]string{"--search", "pets", "--thesaurus", bad}, 1, bad + `:2: "the: pets": "the" is a stop word`},
		{[]string{"--search", strings.Repeat("pets ", 300)}, 2, "--search: the query is 1500 bytes long, at most 1000"},
	} {
		code, _, errOut := runCLI(t, append([]string{"tools", "--spec", spec}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, %q; want %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}
