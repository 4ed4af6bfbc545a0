package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/internal/settings"
)

var update = flag.Bool("update", false, "rewrite the settings reference in docs/settings.md")

// parseServe parses "serve args..." as the CLI would, without running it.
func parseServe(t *testing.T, args ...string) (gateway.Config, error) {
	t.Helper()
	var out bytes.Buffer
	kctx, err := parse(context.Background(), append([]string{"serve"}, args...), streams{strings.NewReader(""), &out, &out})
	if err != nil {
		return gateway.Config{}, err
	}
	return kctx.Selected().Target.Addr().Interface().(*serveCmd).Config, nil
}

// samples are values unlike the defaults, two per kind so that precedence
// can be told apart.
func samples(t *testing.T, s settings.Setting) (yaml1, text1, text2 string) {
	t.Helper()
	structured := map[string][3]string{
		"auth.tool_scopes":              {"{getPet: [read]}", `{"getPet":["a"]}`, `{"getPet":["b"]}`},
		"credentials.static":            {"{api_key: k1}", `{"api_key":"k2"}`, `{"api_key":"k3"}`},
		"tools.overrides":               {"{getPet: {hide: true}}", `{"getPet":{"title":"A"}}`, `{"getPet":{"title":"B"}}`},
		"policy":                        {"[{when: 'true', effect: deny}]", `[{"when":"true","effect":"confirm"}]`, `[{"effect":"allow"}]`},
		"quotas":                        {"[{per: caller, limit: 5, window: 1m}]", `[{"per":"tool","limit":6,"window":"1m"}]`, `[{"per":"global","limit":7,"window":"1h"}]`},
		"credentials.oauth.auth_params": {"{access_type: offline}", `{"prompt":"consent"}`, `{"audience":"x"}`},
		"apis":                          {"[{name: a, spec: a.yaml, upstream: 'https://a'}]", `[{"name":"b"}]`, `[{"name":"c"}]`},
	}
	switch s.Type {
	case "yaml":
		v, ok := structured[s.Key]
		if !ok {
			t.Fatalf("setting %s is structured: add sample values for it to this test", s.Key)
		}
		return v[0], v[1], v[2]
	case "bool":
		return "true", "false", "true"
	case "int":
		return "17", "18", "19"
	case "duration":
		return "17s", "18s", "19s"
	case "number":
		return "0.25", "0.75", "1"
	case "list":
		return "[a, b]", "c,d", "e"
	}
	if s.Enum != "" {
		// The file sets a value other than the default, the variable the
		// default back, the flag the other value again.
		for v := range strings.SplitSeq(s.Enum, ",") {
			if v != s.Default {
				return v, s.Default, v
			}
		}
	}
	if strings.Contains(s.Key, "path") {
		return "/p1", "/p2", "/p3"
	}
	return "one", "two", "three"
}

// TestEverySettingHasEveryForm: each row of the table is a flag, a variable
// and a YAML key of serve, each taking effect, with flags over variables
// over the file over the defaults; and kong serves exactly the table.
func TestEverySettingHasEveryForm(t *testing.T) {
	list, err := gateway.Settings()
	if err != nil {
		t.Fatal(err)
	}
	checkModel(t, list)
	base, err := parseServe(t)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, s := range list {
		t.Run(s.Key, func(t *testing.T) {
			if s.Help == "" || len(s.Env) == 0 {
				t.Fatalf("%s lacks help or a variable: %+v", s.Key, s)
			}
			y, v1, v2 := samples(t, s)
			file := filepath.Join(dir, strings.ReplaceAll(s.Key, ".", "_")+".yaml")
			if err := os.WriteFile(file, []byte(nest(s.Key, y)), 0o600); err != nil {
				t.Fatal(err)
			}
			fromFile, err := parseServe(t, "--config", file)
			if err != nil || reflect.DeepEqual(fromFile, base) {
				t.Fatalf("YAML key %s had no effect (%v)", s.Key, err)
			}
			t.Setenv(s.Env[0], v1)
			fromEnv, err := parseServe(t, "--config", file)
			if err != nil || reflect.DeepEqual(fromEnv, fromFile) {
				t.Fatalf("%s=%s did not win over the file (%v)", s.Env[0], v1, err)
			}
			fromFlag, err := parseServe(t, "--config", file, "--"+s.Flag+"="+v2)
			if err != nil || reflect.DeepEqual(fromFlag, fromEnv) && v1 != v2 {
				t.Fatalf("--%s=%s did not win over the variable (%v)", s.Flag, v2, err)
			}
		})
	}
}

// nest writes key: value with key's dots as nested mappings.
func nest(key, value string) string {
	parts := strings.Split(key, ".")
	var b strings.Builder
	for i, p := range parts {
		b.WriteString(strings.Repeat("  ", i) + p + ":")
		if i < len(parts)-1 {
			b.WriteString("\n")
		}
	}
	b.WriteString(" " + value + "\n")
	return b.String()
}

// checkModel: kong's serve flags are exactly the table's (plus help,
// version and config), with the same variables and help.
func checkModel(t *testing.T, list []settings.Setting) {
	t.Helper()
	var out bytes.Buffer
	p, err := newParser(context.Background(), streams{nil, &out, &out}, nil)
	if err != nil {
		t.Fatal(err)
	}
	byFlag := settings.Index(list)
	var serve *kong.Node
	for _, n := range p.Model.Children {
		if n.Name == "serve" {
			serve = n
		}
	}
	seen := map[string]bool{}
	for _, f := range serve.AllFlags(false) {
		for _, fl := range f {
			if slices.Contains([]string{"help", "version", "config"}, fl.Name) {
				continue
			}
			s := byFlag[fl.Name]
			if s == nil || s.Flag != fl.Name {
				t.Errorf("flag --%s is not in the settings table", fl.Name)
				continue
			}
			seen[s.Key] = true
			if !slices.Equal(fl.Envs, s.Env) || fl.Help != s.Help || !slices.Equal(fl.Aliases, s.Aliases) {
				t.Errorf("--%s: kong has env %v, aliases %v; the table %v, %v", fl.Name, fl.Envs, fl.Aliases, s.Env, s.Aliases)
			}
		}
	}
	for _, s := range list {
		if !seen[s.Key] {
			t.Errorf("setting %s has no flag", s.Key)
		}
	}
}

// TestSettingsReference: the README's reference is the table rendered
// (go test ./cmd/mcpgate -run SettingsReference -update rewrites it).
func TestSettingsReference(t *testing.T) {
	list, err := gateway.Settings()
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- settings:begin -->\n", "<!-- settings:end -->"
	path := filepath.Join("..", "..", "docs", "settings.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(readme, []byte(begin)), bytes.Index(readme, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("README.md has no %q ... %q section", begin, end)
	}
	want := settings.Reference(list)
	if got := string(readme[i+len(begin) : j]); got != want {
		if !*update {
			t.Fatalf("README's settings reference is out of date: run go test ./cmd/mcpgate -run SettingsReference -update")
		}
		out := append(append(append([]byte{}, readme[:i+len(begin)]...), want...), readme[j:]...)
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSettingsFileErrors: a misspelt key names the file, the line and the
// setting it resembles; an older variable name still works.
func TestSettingsFileErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ body, want string }{
		{"log_level: debug\n", `line 1: unknown setting "log_level" (did you mean "log.level"?)`},
		{"spec: x\nupstreem: https://x\n", `line 2: unknown setting "upstreem" (did you mean "upstream"?)`},
		{"task_lease: soon\n", "soon"},
		{"tools:\n  overrides:\n    getPet: {hidden: true}\n", `"hidden"`},
		{"log: [1, 2]\n", "line 1"},
	}
	for _, c := range cases {
		p := writeFile(t, dir, "c.yaml", c.body)
		code, out, errOut := runCLI(t, "serve", "--config", p)
		if code != 1 || !strings.Contains(errOut, p) || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "panic") {
			t.Errorf("%q: exit %d, stderr lacks %q:\n%s%s", c.body, code, c.want, out, errOut)
		}
		if n := strings.Count(strings.TrimSpace(errOut), "\n"); n != 0 {
			t.Errorf("%q: %d lines, want one:\n%s", c.body, n+1, errOut)
		}
	}
	t.Setenv("MCPGATE_NO_LEGACY", "1")
	if c, err := parseServe(t); err != nil || !c.DisableLegacy {
		t.Errorf("MCPGATE_NO_LEGACY=1 was ignored: %v", err)
	}
}

// TestNegativeFlagValue: a flag's value may be negative in the separate
// form the README uses (--gc-headroom -1).
func TestNegativeFlagValue(t *testing.T) {
	c, err := parseServe(t, "--demo", "--gc-headroom", "-1", "--task-inline-wait", "-1s")
	if err != nil || c.GCHeadroom != -1 || c.TaskInlineWait >= 0 {
		t.Fatalf("--gc-headroom -1: %v %d %s", err, c.GCHeadroom, c.TaskInlineWait)
	}
}
