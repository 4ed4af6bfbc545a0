package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// demoTools are the operations of the built-in demo API (demo.Operations).
var demoTools = []string{
	"listPets", "createPet", "getPet", "replacePet", "updatePet", "deletePet",
	"uploadPetPhoto", "putPetPhoto", "getPetPhoto", "listCategories", "createOrder",
	"getOrder", "cancelOrder", "getCurrentUser", "createReport", "getReport", "redirectMe",
}

// startDemo runs `mcpgate serve --demo --store memory` with extra flags.
func startDemo(t *testing.T, extra ...string) *gatewayProc {
	t.Helper()
	return startGateway(t, nil, append([]string{"--demo", "--store", "memory"}, extra...)...)
}

// structured decodes a result's structuredContent into a map.
func structured(t *testing.T, name string, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("%s: structuredContent: %v", name, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		t.Fatalf("%s: structuredContent is not an object: %s (text %s)", name, b, text(res))
	}
	return m
}

// elicitor answers the gateway's confirmation questions and remembers them.
type elicitor struct {
	mu     sync.Mutex
	asked  []string
	answer *sdk.ElicitResult
}

func (e *elicitor) handle(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, req.Params.Message)
	return e.answer, nil
}

func (e *elicitor) questions() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.asked)
}

var (
	acceptConfirm = &sdk.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}
	declineAnswer = &sdk.ElicitResult{Action: "decline"}
)

// sseElicit matches a server-to-client elicitation/create request sent as
// an SSE event.
var sseElicit = regexp.MustCompile(`(?m)^data: \{"jsonrpc":"2\.0","id":[^,]+,"method":"elicitation/create"`)

// checkDelete deletes pet id through a client that answers the confirmation
// with answer, and checks what happened: the question was asked once, and
// the pet is gone exactly when the user accepted.
func checkDelete(t *testing.T, url, version string, id int, answer *sdk.ElicitResult) {
	t.Helper()
	e := &elicitor{answer: answer}
	w := newWire()
	cs := connectHTTP(t, url, connectOptions{
		Bearer: "demo-token", Version: version, Want: version, Wire: w,
		Client: &sdk.ClientOptions{ElicitationHandler: e.handle},
	})
	res := call(t, cs, "deletePet", map[string]any{"petId": id})
	q := e.questions()
	// The question names the exact request, its values included.
	if want := fmt.Sprintf("Delete a pet: DELETE /pets/%d?", id); len(q) != 1 || !strings.Contains(q[0], want) {
		t.Errorf("deletePet: confirmation questions = %q, want one naming %q", q, want)
	}
	// How the question travelled: a 2025-11-25 session gets a real
	// elicitation/create request on the POST's SSE stream; a 2026-07-28
	// client gets an input_required result and calls again (MRTR).
	got := w.String()
	serverRequest := false
	for _, r := range w.responses() {
		if strings.HasPrefix(r, "POST 200 text/event-stream\n") && sseElicit.MatchString(r) {
			serverRequest = true
		}
	}
	if version == legacyVersion {
		if !serverRequest || strings.Contains(got, "input_required") {
			t.Errorf("2025-11-25: no elicitation/create request on the POST's SSE stream; the client read:\n%.2000s", got)
		}
	} else if serverRequest || !strings.Contains(got, `"resultType":"input_required"`) || !strings.Contains(got, `"requestState":"`) {
		t.Errorf("2026-07-28: no input_required result with requestState; the client read:\n%.2000s", got)
	}
	after := call(t, cs, "getPet", map[string]any{"petId": id})
	if answer.Action == "accept" {
		wantOK(t, "deletePet (accepted)", res)
		if !strings.Contains(text(res), "204") {
			t.Errorf("deletePet (accepted): %s", text(res))
		}
		wantError(t, "getPet after an accepted delete", after, "404", fmt.Sprintf("no pet with id %d", id))
	} else {
		wantError(t, "deletePet (declined)", res, "did not allow")
		wantOK(t, "getPet after a declined delete", after)
	}
}

// TestDemoModern drives `mcpgate serve --demo` with the go-sdk client in
// 2026-07-28 mode through every kind of demo operation.
func TestDemoModern(t *testing.T) {
	g := startDemo(t)
	cs := connectHTTP(t, g.URL, connectOptions{Bearer: "demo-token"})
	init := cs.InitializeResult()
	if init.ServerInfo == nil || init.ServerInfo.Name != "mcpgate" || init.Capabilities == nil || init.Capabilities.Tools == nil {
		t.Errorf("server/discover: info %+v capabilities %+v", init.ServerInfo, init.Capabilities)
	}

	t.Run("ListTools", func(t *testing.T) {
		names := toolNames(t, cs)
		slices.Sort(names)
		want := slices.Clone(demoTools)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("tools = %v\nwant %v", names, want)
		}
	})

	t.Run("getPet", func(t *testing.T) {
		res := call(t, cs, "getPet", map[string]any{"petId": 1})
		wantOK(t, "getPet", res)
		if p := structured(t, "getPet", res); p["name"] != "Rex" || p["species"] != "dog" || p["id"] != float64(1) {
			t.Errorf("getPet 1 = %v", p)
		}
	})

	t.Run("listPetsQueryStyles", func(t *testing.T) {
		// tags is a form array with explode=false (tags=friendly,trained):
		// exploded, the demo would only see "friendly" and also match Rex
		// and Rocky. filter is a deepObject (filter[species]=dog).
		res := call(t, cs, "listPets", map[string]any{
			"tags": []string{"friendly", "trained"}, "filter": map[string]any{"species": "dog"},
			"X-Request-Id": "e2e-req-1", "limit": 10,
		})
		wantOK(t, "listPets", res)
		items, _ := structured(t, "listPets", res)["items"].([]any)
		var names []string
		for _, it := range items {
			names = append(names, fmt.Sprint(it.(map[string]any)["name"]))
		}
		if fmt.Sprint(names) != "[Fido Duke]" {
			t.Errorf("listPets tags=friendly,trained filter[species]=dog: %v, want [Fido Duke]", names)
		}
		res = call(t, cs, "listPets", map[string]any{"filter": map[string]any{"status": "adopted"}, "limit": 100})
		wantOK(t, "listPets", res)
		items, _ = structured(t, "listPets", res)["items"].([]any)
		for _, it := range items {
			if s := it.(map[string]any)["status"]; s != "adopted" {
				t.Errorf("filter[status]=adopted returned a pet with status %v", s)
			}
		}
		if len(items) != 4 {
			t.Errorf("filter[status]=adopted: %d pets, want 4", len(items))
		}
	})

	t.Run("createPetJSON", func(t *testing.T) {
		res := call(t, cs, "createPet", map[string]any{
			"name": "E2E Rex", "species": "dog", "tags": []string{"e2e"},
			"details": map[string]any{"kind": "dog", "breed": "beagle"},
		})
		wantOK(t, "createPet", res)
		p := structured(t, "createPet", res)
		if p["name"] != "E2E Rex" || p["status"] != "available" || p["id"] == nil {
			t.Fatalf("createPet = %v", p)
		}
		if d, _ := p["details"].(map[string]any); d["breed"] != "beagle" {
			t.Errorf("createPet details = %v", p["details"])
		}
	})

	t.Run("updatePetMergePatch", func(t *testing.T) {
		// application/merge-patch+json body and the If-Match header.
		res := call(t, cs, "updatePet", map[string]any{"petId": 10, "If-Match": `"v999"`, "tags": []string{"stale"}})
		wantError(t, "updatePet (stale If-Match)", res, "412")
		res = call(t, cs, "updatePet", map[string]any{"petId": 10, "If-Match": `"v1"`, "tags": []string{"patched"}})
		wantOK(t, "updatePet", res)
		if p := structured(t, "updatePet", res); p["version"] != float64(2) || fmt.Sprint(p["tags"]) != "[patched]" || p["name"] != "Luna" {
			t.Errorf("updatePet = %v", p)
		}
	})

	t.Run("createOrderForm", func(t *testing.T) {
		res := call(t, cs, "createOrder", map[string]any{"petId": 9, "note": "deliver at 9 & ring, 100% sure", "express": true})
		wantOK(t, "createOrder", res)
		o := structured(t, "createOrder", res)
		if o["petId"] != float64(9) || o["note"] != "deliver at 9 & ring, 100% sure" || o["express"] != true || o["status"] != "placed" {
			t.Errorf("createOrder = %v", o)
		}
	})

	t.Run("photos", func(t *testing.T) {
		png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDRe2e-multipart")
		b64 := base64.StdEncoding.EncodeToString(png)
		res := call(t, cs, "uploadPetPhoto", map[string]any{
			"petId": 3, "caption": "smile",
			"file": map[string]any{"content": b64, "filename": "polly.png", "contentType": "image/png"},
		})
		wantOK(t, "uploadPetPhoto", res)
		if info := structured(t, "uploadPetPhoto", res); info["size"] != float64(len(png)) || info["caption"] != "smile" || info["contentType"] != "image/png" {
			t.Errorf("uploadPetPhoto = %v", info)
		}
		res = call(t, cs, "getPetPhoto", map[string]any{"petId": 3})
		wantOK(t, "getPetPhoto", res)
		img, ok := res.Content[0].(*sdk.ImageContent)
		if !ok || img.MIMEType != "image/png" || !bytes.Equal(img.Data, png) {
			t.Errorf("getPetPhoto content = %#v, want the uploaded PNG as an image block", res.Content[0])
		}

		raw := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDRe2e-octet-stream")
		res = call(t, cs, "putPetPhoto", map[string]any{"petId": 3, "caption": "raw", "body": base64.StdEncoding.EncodeToString(raw)})
		wantOK(t, "putPetPhoto", res)
		if info := structured(t, "putPetPhoto", res); info["size"] != float64(len(raw)) || info["caption"] != "raw" {
			t.Errorf("putPetPhoto = %v", info)
		}
		res = call(t, cs, "getPetPhoto", map[string]any{"petId": 3})
		if img, ok := res.Content[0].(*sdk.ImageContent); !ok || !bytes.Equal(img.Data, raw) {
			t.Errorf("getPetPhoto after putPetPhoto = %#v", res.Content[0])
		}
	})

	t.Run("getCurrentUserBearer", func(t *testing.T) {
		res := call(t, cs, "getCurrentUser", map[string]any{"theme": "dark"})
		wantOK(t, "getCurrentUser", res)
		u := structured(t, "getCurrentUser", res)
		if u["subject"] != "demo-user" || u["authenticated"] != true {
			t.Errorf("getCurrentUser = %v: the client's bearer did not reach the demo", u)
		}
		if p, _ := u["preferences"].(map[string]any); p["theme"] != "dark" {
			t.Errorf("getCurrentUser preferences = %v: the theme cookie did not arrive", u["preferences"])
		}
		// Without a bearer nothing is authorized: the demo, like a real
		// API, requires the caller's own token (demo-token).
		anon := connectHTTP(t, g.URL, connectOptions{})
		wantError(t, "getCurrentUser (no token)", call(t, anon, "getCurrentUser", nil), "401", "none were sent")
		wantError(t, "deletePet (no token)", call(t, anon, "deletePet", map[string]any{"petId": 1}), "401")
		// A wrong bearer is forwarded too, and the demo refuses it.
		bad := connectHTTP(t, g.URL, connectOptions{Bearer: "not-a-demo-token"})
		wantError(t, "getCurrentUser (bad token)", call(t, bad, "getCurrentUser", nil), "401")
	})

	t.Run("redirectMeSameOrigin", func(t *testing.T) {
		res := call(t, cs, "redirectMe", nil)
		wantOK(t, "redirectMe", res)
		if u := structured(t, "redirectMe", res); u["subject"] != "demo-user" || u["authenticated"] != true {
			t.Errorf("redirectMe = %v: the same-origin redirect was not followed with the credential", u)
		}
	})

	t.Run("createReportAccepted", func(t *testing.T) {
		// A client without the Tasks extension: the gateway waits for the
		// accepted report inside the call, and never names the upstream.
		res := call(t, cs, "createReport", map[string]any{"kind": "inventory"})
		wantOK(t, "createReport", res)
		if strings.Contains(text(res), "127.0.0.1") {
			t.Errorf("createReport names the upstream's address: %s", text(res))
		}
		if r := structured(t, "createReport", res); r["status"] != "done" {
			t.Errorf("createReport = %v", r)
		}
	})

	t.Run("notFound", func(t *testing.T) {
		wantError(t, "getPet 999999", call(t, cs, "getPet", map[string]any{"petId": 999999}), "404", "no pet with id 999999")
	})

	t.Run("invalidArguments", func(t *testing.T) {
		res := call(t, cs, "listPets", map[string]any{"limit": 1000, "tags": []string{"NOT A TAG"}, "X-Request-Id": strings.Repeat("x", 200)})
		wantError(t, "listPets (invalid)", res, "Invalid arguments", "/limit", "/tags/0", "/X-Request-Id")
		res = call(t, cs, "createPet", map[string]any{"species": "dragon"})
		wantError(t, "createPet (invalid)", res, "Invalid arguments", "name", "/species")
	})

	t.Run("deletePetAccepted", func(t *testing.T) { checkDelete(t, g.URL, "", 4, acceptConfirm) })
	t.Run("deletePetDeclined", func(t *testing.T) { checkDelete(t, g.URL, "", 5, declineAnswer) })

	t.Run("unknownTool", func(t *testing.T) {
		// A protocol error, not a tool error; the client keeps working.
		if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "noSuchTool", Arguments: map[string]any{}}); err == nil {
			t.Error("calling an unknown tool: no error")
		}
		wantOK(t, "getPet after an unknown tool", call(t, cs, "getPet", map[string]any{"petId": 1}))
	})

	t.Run("NoTokenInLog", func(t *testing.T) {
		if log := g.Log.String(); strings.Contains(log, "demo-token") || strings.Contains(log, "not-a-demo-token") {
			t.Errorf("the gateway's log contains a bearer token:\n%s", log)
		}
	})
}

// TestDemoLegacy drives `mcpgate serve --demo` with the go-sdk client pinned
// to 2025-11-25 (the initialize handshake, sessions, and a real
// elicitation/create request on the POST's SSE stream).
func TestDemoLegacy(t *testing.T) {
	g := startDemo(t)
	cs := connectHTTP(t, g.URL, connectOptions{Bearer: "demo-token", Version: legacyVersion, Want: legacyVersion})
	if id := cs.ID(); id == "" {
		t.Errorf("a 2025-11-25 session has no Mcp-Session-Id")
	}
	names := toolNames(t, cs)
	if len(names) != len(demoTools) {
		t.Errorf("tools = %v", names)
	}
	res := call(t, cs, "getPet", map[string]any{"petId": 2})
	wantOK(t, "getPet", res)
	if p := structured(t, "getPet", res); p["name"] != "Whiskers" {
		t.Errorf("getPet 2 = %v", p)
	}
	if u := structured(t, "getCurrentUser", call(t, cs, "getCurrentUser", nil)); u["subject"] != "demo-user" {
		t.Errorf("getCurrentUser = %v", u)
	}
	wantError(t, "getPet 999999", call(t, cs, "getPet", map[string]any{"petId": 999999}), "404")
	t.Run("deletePetAccepted", func(t *testing.T) { checkDelete(t, g.URL, legacyVersion, 6, acceptConfirm) })
	t.Run("deletePetDeclined", func(t *testing.T) { checkDelete(t, g.URL, legacyVersion, 7, declineAnswer) })

	// 2025-11-25 requires a tool's outputSchema to have root type "object"
	// and structuredContent to be an object (2026-07-28 lifted both). The
	// go-sdk client does not check; the TypeScript SDK does (see
	// TestTypeScriptClient).
	t.Run("Shapes2025", func(t *testing.T) {
		var problems []string
		for tool, err := range cs.Tools(context.Background(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			if tool.OutputSchema == nil {
				continue
			}
			b, _ := json.Marshal(tool.OutputSchema)
			var root struct {
				Type any `json:"type"`
			}
			_ = json.Unmarshal(b, &root)
			if root.Type != "object" {
				problems = append(problems, fmt.Sprintf("%s: outputSchema root type %v", tool.Name, root.Type))
			}
		}
		res := call(t, cs, "listCategories", nil)
		wantOK(t, "listCategories", res)
		if b, _ := json.Marshal(res.StructuredContent); res.StructuredContent != nil && !bytes.HasPrefix(b, []byte("{")) {
			problems = append(problems, fmt.Sprintf("listCategories: structuredContent is not an object: %.60s…", b))
		}
		if len(problems) > 0 {
			t.Fatalf("2025-11-25 sessions got 2026-07-28 tool shapes: %d problems: %q", len(problems), problems)
		}
	})
}

// TestDemoStdio runs `mcpgate stdio --demo --store memory` under the go-sdk
// CommandTransport: list and call, the bearer from MCPGATE_BEARER_TOKEN.
func TestDemoStdio(t *testing.T) {
	cmd := exec.Command(binary, "stdio", "--demo", "--store", "memory")
	cmd.Env = append(baseEnv(t), "MCPGATE_BEARER_TOKEN=demo-token")
	log := newLogBuffer()
	cmd.Stderr = log
	e := &elicitor{answer: acceptConfirm}
	c := sdk.NewClient(&sdk.Implementation{Name: "mcpgate-e2e", Version: "0.0.1"}, &sdk.ClientOptions{ElicitationHandler: e.handle})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, log.String())
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = cs.Close()
		}
	})
	if v := cs.InitializeResult().ProtocolVersion; v != modernVersion {
		t.Fatalf("negotiated %q over stdio, want %q", v, modernVersion)
	}
	if names := toolNames(t, cs); len(names) != len(demoTools) {
		t.Errorf("tools = %v", names)
	}
	res := call(t, cs, "getPet", map[string]any{"petId": 1})
	wantOK(t, "getPet", res)
	if p := structured(t, "getPet", res); p["name"] != "Rex" {
		t.Errorf("getPet 1 = %v", p)
	}
	if u := structured(t, "getCurrentUser", call(t, cs, "getCurrentUser", nil)); u["subject"] != "demo-user" {
		t.Errorf("getCurrentUser over stdio = %v: MCPGATE_BEARER_TOKEN did not reach the demo", u)
	}
	wantError(t, "listPets (invalid)", call(t, cs, "listPets", map[string]any{"limit": 0}), "Invalid arguments", "/limit")
	// The confirmation round over stdio.
	res = call(t, cs, "deletePet", map[string]any{"petId": 8})
	wantOK(t, "deletePet", res)
	if q := e.questions(); len(q) != 1 || !regexp.MustCompile(`DELETE /pets/\d+\?`).MatchString(q[0]) {
		t.Errorf("deletePet over stdio: questions %q", q)
	}
	wantError(t, "getPet after the delete", call(t, cs, "getPet", map[string]any{"petId": 8}), "404")

	// Closing stdin ends the server: it must exit 0 on its own, before the
	// transport's SIGTERM.
	closed = true
	start := time.Now()
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if took := time.Since(start); took >= 10*time.Second {
		t.Errorf("mcpgate stdio took %v to exit after stdin closed (the transport sends SIGTERM after 10s)", took)
	}
	if cmd.ProcessState == nil {
		t.Fatalf("the stdio server was not waited for")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("mcpgate stdio exit code %d after stdin closed\n%s", code, log.String())
	}
	if strings.Contains(log.String(), "demo-token") {
		t.Errorf("the stdio log contains the bearer:\n%s", log.String())
	}
	if strings.Contains(log.String(), "WARNING: DATA RACE") {
		t.Errorf("the race detector found a data race in mcpgate stdio:\n%s", log.String())
	}
}
