package gateway

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpgate/mcpgate/demo"
	"github.com/mcpgate/mcpgate/mcp"
)

// postgresDSN returns a DSN whose search_path is a fresh schema, or skips
// (fails under CI) without MCPGATE_TEST_POSTGRES.
func postgresDSN(t *testing.T) string {
	t.Helper()
	base := os.Getenv("MCPGATE_TEST_POSTGRES")
	if base == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("MCPGATE_TEST_POSTGRES is not set (scripts/postgres.sh prints it)")
		}
		t.Skip("set MCPGATE_TEST_POSTGRES to run the PostgreSQL tests (scripts/postgres.sh prints it)")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	schema := fmt.Sprintf("gw_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}

// TestReplicas: three gateways share PostgreSQL, one upstream and one key
// ring, as N stateless replicas behind a load balancer would.
func TestReplicas(t *testing.T) {
	dsn := postgresDSN(t)
	upstream := httptest.NewServer(demo.New(demo.Options{ReportDelay: 300 * time.Millisecond}))
	defer upstream.Close()
	spec := filepath.Join(t.TempDir(), "demo.json")
	if err := os.WriteFile(spec, demo.OpenAPI(), 0o600); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	keys := "k1:" + base64.StdEncoding.EncodeToString(key)
	replica := func() (*Gateway, *httptest.Server) {
		g, err := New(context.Background(), Config{Spec: spec, Upstream: upstream.URL, Store: dsn, StateKeys: keys}, discardLogger())
		if err != nil {
			t.Fatal(err)
		}
		stop := g.startRunner()
		ts := httptest.NewServer(g.Handler())
		t.Cleanup(func() { ts.Close(); stop(); g.Close() })
		return g, ts
	}
	a, _ := replica()
	b, _ := replica()
	c, cHTTP := replica()
	ctx := context.Background()
	client := func(g *Gateway) *mcp.Client {
		cl := mcp.NewClient(g.Server())
		cl.Principal = principalFor("demo-token")
		cl.Capabilities.Extensions = map[string]json.RawMessage{mcp.ExtensionTasks: json.RawMessage("{}")}
		cl.Capabilities.Elicitation = &mcp.ElicitationCapability{}
		return cl
	}
	taskID := func(r *mcp.Response) string {
		var h struct {
			TaskID string `json:"taskId"`
		}
		if r.Error != nil || json.Unmarshal(r.Result, &h) != nil || h.TaskID == "" {
			t.Fatalf("no task handle: %+v %s", r.Error, r.Result)
		}
		return h.TaskID
	}
	status := func(g *Gateway, id string) (string, string) {
		r, err := client(g).Do(ctx, "tasks/get", map[string]any{"taskId": id})
		if err != nil || r.Error != nil {
			t.Fatalf("tasks/get: %v %+v", err, r.Error)
		}
		var s struct {
			Status string          `json:"status"`
			Result json.RawMessage `json:"result"`
		}
		_ = json.Unmarshal(r.Result, &s)
		return s.Status, string(s.Result)
	}

	// A listen stream on C, for a task created through A.
	r, _ := client(a).Do(ctx, "tools/call", map[string]any{"name": "createReport", "arguments": map[string]any{"kind": "inventory"}})
	id := taskID(r)
	notified := make(chan string, 1)
	go listenForTask(t, cHTTP.URL, id, notified)

	// Polled through B until A's (or any replica's) worker finishes it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, res := status(b, id)
		if st == "completed" {
			if !strings.Contains(res, "done") {
				t.Fatalf("completed without the report: %s", res)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still %s", id, st)
		}
		time.Sleep(50 * time.Millisecond) // a client's polling
	}
	select {
	case got := <-notified:
		if !strings.Contains(got, `"status":"completed"`) {
			t.Fatalf("C's listen stream got %s", got)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no notifications/tasks reached the listen stream on C")
	}

	// Cancelled through C.
	r, _ = client(a).Do(ctx, "tools/call", map[string]any{"name": "createReport", "arguments": map[string]any{"kind": "sales"}})
	id2 := taskID(r)
	if r, _ := client(c).Do(ctx, "tasks/cancel", map[string]any{"taskId": id2}); r.Error != nil {
		t.Fatalf("tasks/cancel on C: %+v", r.Error)
	}
	for deadline = time.Now().Add(30 * time.Second); ; {
		st, _ := status(a, id2)
		if st == "cancelled" || st == "completed" { // completion may win the race
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cancelled task still %s", st)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// An MRTR round paused on A resumes on B; the same token is refused on C.
	r, _ = client(a).Do(ctx, "tools/call", map[string]any{"name": "deletePet", "arguments": map[string]any{"petId": 2}})
	var paused struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
	}
	_ = json.Unmarshal(r.Result, &paused)
	if paused.ResultType != mcp.ResultInputRequired || paused.RequestState == "" {
		t.Fatalf("deletePet should ask for confirmation: %s", r.Result)
	}
	retry := map[string]any{"name": "deletePet", "arguments": map[string]any{"petId": 2}, "requestState": paused.RequestState,
		"inputResponses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}
	r, _ = client(b).Do(ctx, "tools/call", retry)
	if r.Error != nil || !strings.Contains(string(r.Result), `"resultType":"complete"`) || strings.Contains(string(r.Result), `"isError":true`) {
		t.Fatalf("resume on B: %+v %s", r.Error, r.Result)
	}
	r, _ = client(c).Do(ctx, "tools/call", retry)
	if r.Error == nil || r.Error.Code != mcp.CodeInvalidParams {
		t.Fatalf("a replayed requestState must be refused on C: %s", r.Result)
	}
}

// listenForTask opens subscriptions/listen for one task on url and sends
// the first notifications/tasks that reports a terminal status.
func listenForTask(t *testing.T, url, id string, out chan<- string) {
	body := `{"jsonrpc":"2.0","id":"listen-1","method":"subscriptions/listen","params":{"notifications":{"taskIds":["` + id + `"]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("Authorization", "Bearer demo-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "data: ")
		if os.Getenv("DEBUG_LISTEN") != "" {
			t.Logf("listen: %s", line)
		}
		if strings.Contains(line, `"notifications/tasks"`) && strings.Contains(line, `/subscriptionId":"listen-1"`) &&
			(strings.Contains(line, `"completed"`) || strings.Contains(line, `"failed"`)) {
			out <- line
			return
		}
	}
}
