package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/npmtest"
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

// TestTypeScriptClient runs the TypeScript SDK v1 client (2025-11-25 only)
// against `mcpgate serve --demo`: initialize, tools/list, getPet, and
// deletePet with a real elicitation/create round answered by the client.
func TestTypeScriptClient(t *testing.T) {
	const what = "the TypeScript SDK client test"
	node := npmtest.NeedTool(t, "node", what)
	dir := npmtest.Install(t, npmtest.NeedTool(t, "npm", what), "tsclient", "mcpgate-e2e-tsclient-", "@modelcontextprotocol/sdk/package.json")

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
	if len(out.Elicitations) != 1 || !regexp.MustCompile(`DELETE /pets/\d+\?`).MatchString(out.Elicitations[0].Message) {
		t.Errorf("elicitations = %+v, want one confirmation naming the request (DELETE /pets/N)", out.Elicitations)
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
