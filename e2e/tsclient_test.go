package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tsOutput is the JSON line tsclient/client.mjs prints.
type tsOutput struct {
	ProtocolVersion string `json:"protocolVersion"`
	SessionID       string `json:"sessionId"`
	Server          struct {
		Name string `json:"name"`
	} `json:"server"`
	Tools               []string    `json:"tools"`
	ListToolsError      string      `json:"listToolsError"`
	GetPet              tsResult    `json:"getPet"`
	DeletePet           tsResult    `json:"deletePet"`
	AfterDelete         tsResult    `json:"afterDelete"`
	ListCategories      *tsResult   `json:"listCategories"`
	ListCategoriesError string      `json:"listCategoriesError"`
	Elicitations        []tsElicits `json:"elicitations"`
}

type tsResult struct {
	IsError           bool           `json:"isError"`
	Text              string         `json:"text"`
	StructuredContent map[string]any `json:"structuredContent"`
}

type tsElicits struct {
	Message string         `json:"message"`
	Schema  map[string]any `json:"schema"`
}

// needTool finds a program on PATH; without it the test is skipped, except
// in CI where it fails.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required in CI (CI=%q) for the TypeScript SDK client test: %v", name, os.Getenv("CI"), err)
		}
		t.Skipf("%s not found on PATH: skipping the TypeScript SDK client test (install Node.js ≥ 20 with npm to run it)", name)
	}
	return p
}

// tsClientDir installs tsclient's locked dependencies into a cache
// directory under the system temp dir (named after the lock file's hash, so
// a changed lock gets a fresh install) and returns it. The repository is
// never written to.
func tsClientDir(t *testing.T, npm string) string {
	t.Helper()
	pkg, err := os.ReadFile(filepath.Join("tsclient", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile(filepath.Join("tsclient", "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(append([]byte(nil), pkg...), lock...))
	dir := filepath.Join(os.TempDir(), "mcpgate-e2e-tsclient-"+hex.EncodeToString(sum[:8]))
	marker := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")
	if _, err := os.Stat(marker); err == nil {
		return dir
	}
	// Install into a private directory, then move it into place, so that
	// concurrent runs never see a half-installed tree.
	tmp, err := os.MkdirTemp(os.TempDir(), "mcpgate-e2e-tsclient-install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(os.TempDir(), "mcpgate-e2e-npm-cache"), "npm_config_update_notifier=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", tmp, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(marker); statErr != nil { // not just another run that won the race
			t.Fatalf("moving the install into place: %v", err)
		}
	}
	return dir
}

// TestTypeScriptClient runs the TypeScript SDK v1 client (2025-11-25 only)
// against `mcpgate serve --demo`: initialize, tools/list, getPet, and
// deletePet with a real elicitation/create round answered by the client.
func TestTypeScriptClient(t *testing.T) {
	node := needTool(t, "node")
	npm := needTool(t, "npm")
	dir := tsClientDir(t, npm)

	script, err := os.ReadFile(filepath.Join("tsclient", "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	// Node resolves the SDK next to the script: run a copy inside the cache.
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	scriptPath := filepath.Join(dir, "client-"+hex.EncodeToString(rnd[:])+".mjs")
	if err := os.WriteFile(scriptPath, script, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(scriptPath) })

	g := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, scriptPath, g.URL)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("node client.mjs: %v\nstderr:\n%s\nstdout:\n%s\ngateway log:\n%s", err, stderr.String(), stdout.String(), g.Log.String())
		}
		t.Fatal(err)
	}
	var out tsOutput
	line := strings.TrimSpace(stdout.String())
	if err := json.Unmarshal([]byte(line), &out); err != nil {
		t.Fatalf("client output is not one JSON line: %v\n%s", err, line)
	}

	if out.ProtocolVersion != legacyVersion || out.SessionID == "" {
		t.Errorf("negotiated %q (session %q), want %s with a session", out.ProtocolVersion, out.SessionID, legacyVersion)
	}
	if out.Server.Name != "mcpgate" {
		t.Errorf("serverInfo = %+v", out.Server)
	}
	if len(out.Tools) != len(demoTools) {
		t.Errorf("tools = %v", out.Tools)
	}
	if out.GetPet.IsError || out.GetPet.StructuredContent["name"] != "Rex" {
		t.Errorf("getPet 1 = %+v", out.GetPet)
	}
	if len(out.Elicitations) != 1 || !strings.Contains(out.Elicitations[0].Message, "DELETE /pets/{petId}") {
		t.Errorf("elicitations = %+v, want one confirmation of DELETE /pets/{petId}", out.Elicitations)
	} else if props, _ := out.Elicitations[0].Schema["properties"].(map[string]any); props["confirm"] == nil {
		t.Errorf("elicitation schema = %v, want a confirm property", out.Elicitations[0].Schema)
	}
	if out.DeletePet.IsError || !strings.Contains(out.DeletePet.Text, "204") {
		t.Errorf("deletePet (accepted) = %+v", out.DeletePet)
	}
	if !out.AfterDelete.IsError || !strings.Contains(out.AfterDelete.Text, "404") {
		t.Errorf("getPet 2 after the delete = %+v", out.AfterDelete)
	}

	// The strict halves of the SDK's own validation: 2025-11-25 tool shapes
	// (object-rooted outputSchema, object structuredContent).
	t.Run("ListToolsValidates", func(t *testing.T) {
		if out.ListToolsError != "" {
			t.Fatalf("the TS SDK rejected tools/list (a 2025-11-25 outputSchema must have root type \"object\"): %.400s", out.ListToolsError)
		}
	})
	t.Run("ArrayStructuredContent", func(t *testing.T) {
		if out.ListCategoriesError != "" {
			t.Fatalf("the TS SDK rejected listCategories (2025-11-25 structuredContent must be an object): %.400s", out.ListCategoriesError)
		}
		if out.ListCategories == nil || out.ListCategories.IsError || !strings.Contains(out.ListCategories.Text, "Mammals") {
			t.Errorf("listCategories = %+v", out.ListCategories)
		}
	})
}
