package e2e

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

var sighup = syscall.SIGHUP

const reloadSpec = `openapi: 3.0.3
info: {title: reloaded API, version: "1"}
paths:
  /items/{id}:
    get:
      operationId: getItem
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
`

const reloadSpecAdded = reloadSpec + `  /items:
    get:
      operationId: listItems
      responses: {"200": {description: ok}}
`

// listenToolsChanged opens a subscriptions/listen stream for tool list
// changes and signals on changed each notifications/tools/list_changed;
// ready is closed once the server acknowledged the stream.
func listenToolsChanged(t *testing.T, url string, ready chan<- struct{}, changed chan<- struct{}) {
	body := `{"jsonrpc":"2.0","id":"listen-tools","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("listen: %v", err)
		close(ready)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	acked := false
	for sc.Scan() {
		switch line := sc.Text(); {
		case !acked && strings.Contains(line, `"notifications/subscriptions/acknowledged"`):
			// The server subscribes the stream before it acknowledges it:
			// from here on no change can be missed.
			acked = true
			close(ready)
		case strings.Contains(line, `"notifications/tools/list_changed"`):
			changed <- struct{}{}
		}
	}
	if !acked {
		t.Errorf("listen: the stream ended unacknowledged (%v)", sc.Err())
		close(ready)
	}
}

// listedNames is tools/list over plain HTTP, as names.
func listedNames(t *testing.T, url string) []string {
	t.Helper()
	res, rpcErr := rpc(t, url, "tools/list", "", map[string]any{})
	if rpcErr != nil {
		t.Fatalf("tools/list: %v", rpcErr)
	}
	var names []string
	for _, tl := range res["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	slices.Sort(names)
	return names
}

// TestReloadLive: editing the document of a running gateway adds the new
// operation within 2 s, telling its listen streams; a breaking edit under
// reload additive is refused and the old tools keep serving; SIGHUP
// applies it (the operator asked).
func TestReloadLive(t *testing.T) {
	rec := newRecorder(t)
	spec := filepath.Join(t.TempDir(), "api.yaml")
	if err := os.WriteFile(spec, []byte(reloadSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, nil, "--spec", spec, "--upstream", rec.srv.URL, "--store", "memory", "--reload", "additive")
	ready, changed := make(chan struct{}), make(chan struct{}, 8)
	go listenToolsChanged(t, g.URL, ready, changed)
	<-ready

	if err := os.WriteFile(spec, []byte(reloadSpecAdded), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(2 * time.Second):
		t.Fatalf("no list_changed within 2 s of the edit:\n%s", g.Log.String())
	}
	if got := listedNames(t, g.URL); !slices.Equal(got, []string{"getItem", "listItems"}) {
		t.Fatalf("tools after the edit: %v", got)
	}
	// A breaking edit: getItem removed. Refused under additive.
	broken := strings.Replace(reloadSpecAdded, "  /items/{id}:\n    get:\n      operationId: getItem\n      parameters: [{name: id, in: path, required: true, schema: {type: string}}]\n      responses: {\"200\": {description: ok}}\n", "", 1)
	if err := os.WriteFile(spec, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(g.Log.String(), "reload refused") {
		if time.Now().After(deadline) {
			t.Fatalf("the breaking edit was not refused:\n%s", g.Log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := listedNames(t, g.URL); !slices.Contains(got, "getItem") {
		t.Fatalf("the refused edit took effect: %v", got)
	}
	res, rpcErr := rpc(t, g.URL, "tools/call", "getItem", map[string]any{"name": "getItem", "arguments": map[string]any{"id": "7"}})
	if rpcErr != nil || res["isError"] == true {
		t.Fatalf("the old tool does not serve: %v %v", rpcErr, res)
	}
	// SIGHUP: the operator asks, the breaking change is applied.
	if err := g.cmd.Process.Signal(sighup); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatalf("no list_changed after SIGHUP:\n%s", g.Log.String())
	}
	if got := listedNames(t, g.URL); slices.Contains(got, "getItem") {
		t.Fatalf("SIGHUP did not apply the change: %v", got)
	}
}

// TestReloadAcrossReplicas: three replicas on PostgreSQL serving one
// document; an edit reaches every replica's listen stream within 2 s, and
// tools/list on each shows the new operation.
func TestReloadAcrossReplicas(t *testing.T) {
	dsn, _, _ := clusterDSN(t)
	rec := newRecorder(t)
	spec := filepath.Join(t.TempDir(), "api.yaml")
	if err := os.WriteFile(spec, []byte(reloadSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	env := clusterEnv(t)
	var gs []*gatewayProc
	changed := make([]chan struct{}, 3)
	for i := range 3 {
		g := startGateway(t, env, "--spec", spec, "--upstream", rec.srv.URL, "--store", dsn, "--credentials", "none")
		gs = append(gs, g)
		ready := make(chan struct{})
		changed[i] = make(chan struct{}, 8)
		go listenToolsChanged(t, g.URL, ready, changed[i])
		<-ready
	}
	start := time.Now()
	if err := os.WriteFile(spec, []byte(reloadSpecAdded), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, ch := range changed {
		select {
		case <-ch:
		case <-time.After(2*time.Second - time.Since(start)):
			t.Fatalf("replica %d: no list_changed within 2 s:\n%s", i, gs[i].Log.String())
		}
	}
	t.Logf("every replica told within %s", time.Since(start).Round(time.Millisecond))
	for i, g := range gs {
		if got := listedNames(t, g.URL); !slices.Contains(got, "listItems") {
			t.Errorf("replica %d lists %v", i, got)
		}
	}
	// A breaking edit (reload is additive by default): every replica
	// refuses it and keeps serving the old tools.
	broken := strings.Replace(reloadSpecAdded, "operationId: getItem", "operationId: fetchItem", 1)
	if err := os.WriteFile(spec, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, g := range gs {
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(g.Log.String(), "reload refused") {
			if time.Now().After(deadline) {
				t.Fatalf("replica %d did not refuse the breaking edit:\n%s", i, g.Log.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got := listedNames(t, g.URL); !slices.Contains(got, "getItem") || slices.Contains(got, "fetchItem") {
			t.Errorf("replica %d after a refused edit lists %v", i, got)
		}
	}
}
