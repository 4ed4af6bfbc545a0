package e2e

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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The cluster tests run several gateway processes on one PostgreSQL
// database, as N stateless replicas behind a load balancer would.

// clusterDSN returns a DSN on a fresh schema, or skips (fails under CI)
// without MCPGATE_TEST_POSTGRES.
func clusterDSN(t *testing.T) (dsn string, conn *pgx.Conn, schema string) {
	t.Helper()
	base := os.Getenv("MCPGATE_TEST_POSTGRES")
	if base == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("MCPGATE_TEST_POSTGRES is not set (scripts/postgres.sh prints it)")
		}
		t.Skip("set MCPGATE_TEST_POSTGRES to run the cluster tests (scripts/postgres.sh prints it)")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	schema = fmt.Sprintf("e2e_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema, conn, schema
}

const clusterSpec = `{"openapi":"3.1.0","info":{"title":"cluster test API","version":"1"},"paths":{
 "/slow/{n}":{"get":{"operationId":"slowGet","x-mcp-task":true,"summary":"A slow read","parameters":[
   {"name":"n","in":"path","required":true,"schema":{"type":"integer"}},
   {"name":"ms","in":"query","schema":{"type":"integer"}}],
   "responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object"}}}}}}},
 "/items/{n}":{"delete":{"operationId":"deleteItem","summary":"Delete an item","parameters":[
   {"name":"n","in":"path","required":true,"schema":{"type":"integer"}}],
   "responses":{"204":{"description":"deleted"}}}}}}`

// slowUpstream answers GET /slow/{n}?ms= after ms milliseconds and counts
// the calls per n.
type slowUpstream struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[int]int
}

func newSlowUpstream(t *testing.T) *slowUpstream {
	u := &slowUpstream{calls: map[int]int{}}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n, ok := strings.CutPrefix(r.URL.Path, "/items/"); ok && r.Method == http.MethodDelete {
			_ = n
			w.WriteHeader(http.StatusNoContent)
			return
		}
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/slow/"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		u.mu.Lock()
		u.calls[n]++
		u.mu.Unlock()
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"n":%d}`, n)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *slowUpstream) started() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.calls)
}

// rpc is one raw 2026-07-28 request to a gateway by the caller
// cluster-user, whose client has form elicitation and the Tasks extension.
func rpc(t *testing.T, url, method, name string, params map[string]any) (result map[string]any, rpcErr map[string]any) {
	t.Helper()
	return rpcAs(t, url, "cluster-user", clusterCaps, method, name, params)
}

// clusterCaps are the capabilities rpc's client declares: form elicitation
// and the Tasks extension.
var clusterCaps = map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}

// rpcAs is one raw 2026-07-28 request by the caller whose bearer token is
// bearer, from a client with the capabilities caps.
func rpcAs(t *testing.T, url, bearer string, caps map[string]any, method, name string, params map[string]any) (result map[string]any, rpcErr map[string]any) {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	var out struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return out.Result, out.Error
}

func clusterEnv(t *testing.T) []string {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return []string{"MCPGATE_STATE_KEYS=k1:" + base64.StdEncoding.EncodeToString(key)}
}

func startReplicas(t *testing.T, n int, dsn, upstream string, extra ...string) []*gatewayProc {
	spec := filepath.Join(t.TempDir(), "cluster.json")
	if err := os.WriteFile(spec, []byte(clusterSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	env := clusterEnv(t)
	var out []*gatewayProc
	for range n {
		args := append([]string{"--spec", spec, "--upstream", upstream, "--store", dsn, "--credentials", "none", "--task-lease", "2s"}, extra...)
		out = append(out, startGateway(t, env, args...))
	}
	return out
}

func taskStatus(t *testing.T, url, id string) string {
	res, e := rpc(t, url, "tasks/get", id, map[string]any{"taskId": id})
	if e != nil {
		t.Fatalf("tasks/get %s: %v", id, e)
	}
	s, _ := res["status"].(string)
	return s
}

// TestClusterReplicas: three gateway processes, one PostgreSQL.
func TestClusterReplicas(t *testing.T) {
	dsn, _, _ := clusterDSN(t)
	up := newSlowUpstream(t)
	r := startReplicas(t, 3, dsn, up.URL)
	a, b, c := r[0].URL, r[1].URL, r[2].URL

	// Created through A, listened to on C, polled through B.
	res, e := rpc(t, a, "tools/call", "slowGet", map[string]any{"name": "slowGet", "arguments": map[string]any{"n": 1, "ms": 300}})
	if e != nil || res["resultType"] != "task" {
		t.Fatalf("slowGet on A: %v %v", res, e)
	}
	id := res["taskId"].(string)
	notified := make(chan string, 1)
	go listenTask(c, id, notified)
	deadline := time.Now().Add(30 * time.Second)
	for taskStatus(t, b, id) != "completed" {
		if time.Now().After(deadline) {
			t.Fatalf("task %s not completed", id)
		}
		time.Sleep(50 * time.Millisecond) // a client's polling interval
	}
	if res, _ := rpc(t, b, "tasks/get", id, map[string]any{"taskId": id}); !strings.Contains(fmt.Sprint(res["result"]), "n:1") {
		t.Fatalf("completed without the upstream's answer: %v", res["result"])
	}
	select {
	case line := <-notified:
		if !strings.Contains(line, `"status":"completed"`) {
			t.Fatalf("C's stream: %s", line)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no notifications/tasks reached the listen stream on C")
	}

	// Cancelled through C.
	res, _ = rpc(t, a, "tools/call", "slowGet", map[string]any{"name": "slowGet", "arguments": map[string]any{"n": 2, "ms": 60000}})
	id2 := res["taskId"].(string)
	if _, e := rpc(t, c, "tasks/cancel", id2, map[string]any{"taskId": id2}); e != nil {
		t.Fatalf("tasks/cancel on C: %v", e)
	}
	for deadline = time.Now().Add(30 * time.Second); taskStatus(t, b, id2) != "cancelled"; {
		if time.Now().After(deadline) {
			t.Fatalf("task %s not cancelled", id2)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// An MRTR round paused on A resumes on B; the token is refused on C.
	res, e = rpc(t, a, "tools/call", "deleteItem", map[string]any{"name": "deleteItem", "arguments": map[string]any{"n": 7}})
	state, _ := res["requestState"].(string)
	if e != nil || res["resultType"] != "input_required" || state == "" {
		t.Fatalf("deleteItem on A should ask for confirmation: %v %v", res, e)
	}
	retry := map[string]any{"name": "deleteItem", "arguments": map[string]any{"n": 7}, "requestState": state,
		"inputResponses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}
	res, e = rpc(t, b, "tools/call", "deleteItem", retry)
	if e != nil || res["resultType"] != "complete" || res["isError"] == true {
		t.Fatalf("resume on B: %v %v", res, e)
	}
	retry["requestState"] = state
	if _, e = rpc(t, c, "tools/call", "deleteItem", retry); e == nil || e["code"] != float64(-32602) {
		t.Fatalf("a replayed requestState must be refused on C, got error %v", e)
	}
}

// TestClusterFailover: the replica running 100 tasks is killed with
// SIGKILL; the others take them over once the leases lapse; every task ends
// in a terminal state, and none reaches one twice.
func TestClusterFailover(t *testing.T) {
	dsn, conn, schema := clusterDSN(t)
	up := newSlowUpstream(t)
	r := startReplicas(t, 3, dsn, up.URL, "--task-concurrency", "200")
	a, b := r[0], r[1]
	const n = 100
	ids := make([]string, n)
	for i := range n {
		res, e := rpc(t, a.URL, "tools/call", "slowGet", map[string]any{"name": "slowGet", "arguments": map[string]any{"n": 100 + i, "ms": 3000}})
		if e != nil || res["resultType"] != "task" {
			t.Fatalf("task %d: %v %v", i, res, e)
		}
		ids[i] = res["taskId"].(string)
	}
	// Wait until the upstream sees the work under way, then crash A.
	for deadline := time.Now().Add(20 * time.Second); up.started() < n/2; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d tasks started", up.started(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.crash()
	deadline := time.Now().Add(90 * time.Second)
	for _, id := range ids {
		for {
			st := taskStatus(t, b.URL, id)
			if st == "completed" || st == "failed" || st == "cancelled" {
				if st != "completed" {
					t.Errorf("task %s ended %s (a read-only operation is re-run, not failed)", id, st)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s still %s after the failover", id, st)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// None reached a terminal state twice (the audit trail of every status
	// change is in the database).
	var twice int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM (SELECT task_id FROM `+schema+`.task_transitions
		WHERE to_status IN ('completed','failed','cancelled') GROUP BY task_id HAVING count(*) > 1) d`).Scan(&twice); err != nil {
		t.Fatal(err)
	}
	if twice != 0 {
		t.Fatalf("%d tasks reached a terminal state twice", twice)
	}
}

func listenTask(url, id string, out chan<- string) {
	body := `{"jsonrpc":"2.0","id":"listen-1","method":"subscriptions/listen","params":{"notifications":{"taskIds":["` + id + `"]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("Authorization", "Bearer cluster-user")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "data: ")
		if strings.Contains(line, `"method":"notifications/tasks"`) && strings.Contains(line, `/subscriptionId":"listen-1"`) &&
			(strings.Contains(line, `"completed"`) || strings.Contains(line, `"failed"`)) {
			out <- line
			return
		}
	}
}
