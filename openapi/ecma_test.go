package openapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ecmaCheck compiles generated schemas with Ajv 2020 (strict=false,
// unicodeRegExp=true), the validator of the MCP TypeScript SDK, through
// scripts/corpus/ajv/check.cjs. Without node and npm it is skipped, except
// under CI where it fails.
type ecmaCheck struct {
	dir   string // NDJSON files, one per document
	files []string
	skip  string // why the check cannot run, if it cannot
}

func newECMACheck(t *testing.T) *ecmaCheck {
	t.Helper()
	c := &ecmaCheck{dir: t.TempDir()}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is required in CI for the Ajv (ECMA-262) schema check: %v", tool, err)
			}
			c.skip = tool + " not on PATH"
		}
	}
	return c
}

// add writes every schema of tools as NDJSON lines {"tool","id","schema"}.
func (c *ecmaCheck) add(t *testing.T, doc string, tools []Tool) {
	t.Helper()
	if c.skip != "" {
		return
	}
	var buf bytes.Buffer
	for i := range tools {
		tool := &tools[i]
		name := doc + ":" + tool.Name
		for _, s := range []struct {
			kind   string
			schema json.RawMessage
		}{{"input", tool.InputSchema}, {"output", tool.OutputSchema}} {
			if s.schema == nil {
				continue
			}
			fmt.Fprintf(&buf, `{"tool":%q,"id":%q,"schema":%s}`+"\n", name, name+"/"+s.kind, s.schema)
		}
	}
	f := filepath.Join(c.dir, fmt.Sprintf("%03d.ndjson", len(c.files)))
	if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	c.files = append(c.files, f)
}

// ecmaReport is check.cjs's summary.
type ecmaReport struct {
	Schemas, Tools, FailedSchemas, FailedTools int
	Failures                                   []struct{ ID, Error string }
}

// report runs check.cjs over every file added.
func (c *ecmaCheck) report(t *testing.T) ecmaReport {
	t.Helper()
	modules := ajvModules(t)
	script, err := filepath.Abs(filepath.Join("..", "scripts", "corpus", "ajv", "check.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"--stack-size=8000", script}, c.files...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("check.cjs: %v\n%s", err, stderr.String())
	}
	var res ecmaReport
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("check.cjs output: %v: %s", err, out)
	}
	return res
}

// run checks every file added and fails the test when a tool's schema does
// not compile.
func (c *ecmaCheck) run(t *testing.T) {
	t.Helper()
	if c.skip != "" {
		t.Logf("Ajv schema check skipped: %s", c.skip)
		return
	}
	start := time.Now()
	res := c.report(t)
	t.Logf("Ajv 2020 (unicodeRegExp): %d schemas of %d tools compiled in %v; %d tools fail (%d schemas)",
		res.Schemas, res.Tools, time.Since(start).Round(time.Second), res.FailedTools, res.FailedSchemas)
	for _, f := range res.Failures {
		t.Errorf("%s: Ajv: %s", f.ID, f.Error)
	}
	if res.FailedTools != 0 {
		t.Errorf("%d tools have a schema that an ECMA-262 unicode-mode validator cannot compile", res.FailedTools)
	}
}

// ajvModules installs scripts/corpus/ajv's locked dependencies into a cache
// directory under the system temp dir (named after the lock file's hash)
// and returns its node_modules. The repository is never written to.
func ajvModules(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "scripts", "corpus", "ajv")
	h := sha256.New()
	files := map[string][]byte{}
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
		files[name] = b
	}
	dir := filepath.Join(os.TempDir(), "mcpgate-corpus-ajv-"+hex.EncodeToString(h.Sum(nil)[:8]))
	modules := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "ajv", "package.json")); err == nil {
		return modules
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "mcpgate-corpus-ajv-install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(os.TempDir(), "mcpgate-e2e-npm-cache"), "npm_config_update_notifier=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", tmp, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(modules, "ajv", "package.json")); statErr != nil {
			t.Fatalf("moving the install into place: %v", err)
		}
	}
	return modules
}

// TestECMACheckFails proves the Ajv check can fail, wherever the fault is:
// the root, a $defs entry (checked once per document), a dangling $ref, a
// keyword value the meta-schema refuses; and that a property named like a
// data keyword ("default") is still walked as a schema.
func TestECMACheckFails(t *testing.T) {
	if testing.Short() {
		t.Skip("installs Ajv from npm")
	}
	c := newECMACheck(t)
	if c.skip != "" {
		t.Skip(c.skip)
	}
	mk := func(name, schema string) Tool { return Tool{Name: name, InputSchema: json.RawMessage(schema)} }
	tools := []Tool{
		mk("good", `{"type":"object","properties":{"a":{"type":"string","pattern":"^-:$"},"default":{"$ref":"#/$defs/D"}},"$defs":{"D":{"type":"string","pattern":"^x$"}}}`),
		mk("badRoot", `{"type":"object","properties":{"a":{"type":"string","pattern":"^\\-\\:$"}}}`),
		mk("badDef", `{"type":"object","properties":{"a":{"$ref":"#/$defs/E"}},"$defs":{"E":{"type":"string","pattern":"\\A"}}}`),
		mk("sameBadDef", `{"type":"object","properties":{"b":{"$ref":"#/$defs/E"}},"$defs":{"E":{"type":"string","pattern":"\\A"}}}`),
		mk("dangling", `{"type":"object","properties":{"default":{"$ref":"#/$defs/Missing"}}}`),
		mk("metaSchema", `{"type":"object","properties":{"a":{"$ref":"#/$defs/F"}},"$defs":{"F":{"type":"string","minLength":-1}}}`),
	}
	c.add(t, "doc", tools)
	res := c.report(t)
	failed := map[string]bool{}
	for _, f := range res.Failures {
		failed[strings.TrimSuffix(strings.TrimPrefix(f.ID, "doc:"), "/input")] = true
	}
	want := map[string]bool{"badRoot": true, "badDef": true, "sameBadDef": true, "dangling": true, "metaSchema": true}
	if res.Tools != len(tools) || res.FailedTools != len(want) || !maps.Equal(failed, want) {
		t.Errorf("check.cjs = %+v, want failures %v", res, want)
	}
}
