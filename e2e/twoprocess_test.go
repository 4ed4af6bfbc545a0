package e2e

import (
	"context"
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

	"github.com/mcpgate/mcpgate/sqlite"
	"github.com/mcpgate/mcpgate/tasks"
)

// The tests of this file run more than one gateway process on one store,
// or one process on a store another process left behind: the task path's
// leases, recovery and shutdown as a desktop client, a restart or a crash
// exercise them.

// reportsSpec is an API with one long-running operation: POST /reports
// answers 202 Accepted with a Location that reads the report's status.
const reportsSpec = `{"openapi":"3.1.0","info":{"title":"reports test API","version":"1"},"paths":{
 "/reports":{"post":{"operationId":"createReport","x-mcp-task":true,"summary":"Start a report",
   "requestBody":{"required":true,"content":{"application/json":{"schema":{"type":"object",
     "properties":{"kind":{"type":"string"}},"required":["kind"]}}}},
   "responses":{"202":{"description":"accepted","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Report"}}}}}}},
 "/reports/{reportId}":{"get":{"operationId":"getReport","summary":"Read a report",
   "parameters":[{"name":"reportId","in":"path","required":true,"schema":{"type":"integer"}}],
   "responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Report"}}}}}}}},
 "components":{"schemas":{"Report":{"type":"object","properties":{
   "id":{"type":"integer"},"kind":{"type":"string"},"status":{"type":"string"},"rows":{"type":"integer"}}}}}}`

// reportUpstream serves reportsSpec: a report stays running until the test
// finishes it (finish) or finishes all (finishAll). It records, per report,
// the bearer of every request.
type reportUpstream struct {
	*httptest.Server

	mu       sync.Mutex
	next     int
	kinds    map[int]string
	done     map[int]bool
	allDone  bool
	posts    map[string]int   // by kind: how many times the report was started
	bearers  map[string]int   // Authorization values seen
	polls    map[int]int      // GETs per report
	holdKind map[string]bool  // a POST of these kinds waits for release…
	held     chan string      // …after announcing its kind here
	release  chan struct{}    // closed by releaseHeld
	polled   map[int]chan int // closed at the first poll of a report
}

func newReportUpstream(t *testing.T) *reportUpstream {
	u := &reportUpstream{kinds: map[int]string{}, done: map[int]bool{}, posts: map[string]int{},
		bearers: map[string]int{}, polls: map[int]int{}, polled: map[int]chan int{},
		holdKind: map[string]bool{}, held: make(chan string, 64), release: make(chan struct{})}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func (u *reportUpstream) serve(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.bearers[r.Header.Get("Authorization")]++
	u.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/reports":
		var in struct{ Kind string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Kind == "" {
			http.Error(w, "kind required", http.StatusUnprocessableEntity)
			return
		}
		u.mu.Lock()
		hold := u.holdKind[in.Kind]
		u.mu.Unlock()
		if hold {
			u.held <- in.Kind
			select {
			case <-u.release:
			case <-r.Context().Done():
				return // the caller went away: the report is never started
			}
		}
		u.mu.Lock()
		u.next++
		id := u.next
		u.kinds[id] = in.Kind
		u.posts[in.Kind]++
		if u.polled[id] == nil {
			u.polled[id] = make(chan int)
		}
		u.mu.Unlock()
		w.Header().Set("Location", "/reports/"+strconv.Itoa(id))
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"id":%d,"kind":%q,"status":"running"}`, id, in.Kind)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/reports/"):
		id, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/reports/"))
		u.mu.Lock()
		kind, ok := u.kinds[id]
		done := u.done[id] || u.allDone
		if ok {
			if u.polls[id] == 0 {
				close(u.polled[id])
			}
			u.polls[id]++
		}
		u.mu.Unlock()
		if err != nil || !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if !done {
			w.Header().Set("Retry-After", "1")
			fmt.Fprintf(w, `{"id":%d,"kind":%q,"status":"running"}`, id, kind)
			return
		}
		fmt.Fprintf(w, `{"id":%d,"kind":%q,"status":"done","rows":%d}`, id, kind, 100+id)
	default:
		http.NotFound(w, r)
	}
}

// firstPoll returns a channel closed once report id was polled.
func (u *reportUpstream) firstPoll(id int) <-chan int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if ch, ok := u.polled[id]; ok {
		return ch
	}
	ch := make(chan int)
	u.polled[id] = ch
	return ch
}

// hold makes the POSTs of these kinds wait (until releaseHeld) after
// announcing themselves on u.held.
func (u *reportUpstream) hold(kinds ...string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, k := range kinds {
		u.holdKind[k] = true
	}
}

func (u *reportUpstream) releaseHeld() { close(u.release) }

// polledReports counts the reports polled at least once.
func (u *reportUpstream) polledReports() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.polls)
}

// authorizations returns the Authorization values the upstream received.
func (u *reportUpstream) authorizations() map[string]int {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := map[string]int{}
	for k, v := range u.bearers {
		out[k] = v
	}
	return out
}

func (u *reportUpstream) finishAll() {
	u.mu.Lock()
	u.allDone = true
	u.mu.Unlock()
}

func (u *reportUpstream) postsOf(kind string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.posts[kind]
}

// writeDoc writes a document into the test's directory and returns its
// path.
func writeDoc(t *testing.T, doc string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitLog waits until a gateway's log contains s.
func waitLog(t *testing.T, g *gatewayProc, s string, d time.Duration) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(d)
	for !strings.Contains(g.Log.String(), s) {
		select {
		case <-tick.C:
		case <-g.exited:
			t.Fatalf("the gateway exited before logging %q:\n%s", s, g.Log.String())
		case <-deadline:
			t.Fatalf("the gateway did not log %q within %v:\n%s", s, d, g.Log.String())
		}
	}
}

// startTask calls a task tool and returns the task id.
func startTask(t *testing.T, url, tool string, args map[string]any) string {
	t.Helper()
	res, e := rpc(t, url, "tools/call", tool, map[string]any{"name": tool, "arguments": args})
	if e != nil || res["resultType"] != "task" {
		t.Fatalf("%s: want a task, got %v %v", tool, res, e)
	}
	return res["taskId"].(string)
}

// awaitTask polls tasks/get until the task is terminal and returns it.
func awaitTask(t *testing.T, url, id string, d time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		res, e := rpc(t, url, "tasks/get", id, map[string]any{"taskId": id})
		if e != nil {
			t.Fatalf("tasks/get %s: %v", id, e)
		}
		switch res["status"] {
		case "completed", "failed", "cancelled":
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still %v after %v: %v", id, res["status"], d, res["statusMessage"])
		}
		time.Sleep(50 * time.Millisecond) // a client's polling interval
	}
}

// TestTwoProcessesShareSQLite: a second process starting on the store of a
// running one (what a desktop client starting "mcpgate stdio" does) leaves
// the first one's task in flight alone, and the task completes. Both run
// with a 2 s lease, so the task also outlives several lease periods: the
// first process renews it.
func TestTwoProcessesShareSQLite(t *testing.T) {
	up := newReportUpstream(t)
	db := filepath.Join(t.TempDir(), "state", "mcpgate.db")
	args := []string{"--spec", writeDoc(t, reportsSpec), "--upstream", up.URL, "--store", "sqlite:" + db, "--task-lease", "2s"}
	env := clusterEnv(t)
	a := startGateway(t, env, args...)
	waitLog(t, a, "store="+db, 5*time.Second)

	id := startTask(t, a.URL, "createReport", map[string]any{"kind": "sales"})
	select {
	case <-up.firstPoll(1):
	case <-time.After(20 * time.Second):
		t.Fatalf("the task never polled its report\n%s", a.Log.String())
	}

	b := startGateway(t, env, args...)
	waitLog(t, b, "store="+db, 5*time.Second)
	waitLog(t, b, "tasks: recovered at start", 10*time.Second)
	if !strings.Contains(b.Log.String(), "requeued=0 failed=0 cancelled=0") {
		t.Fatalf("the second process took over the first one's live task:\n%s", b.Log.String())
	}
	// Three lease periods pass; the second process scans every 2 s.
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		res, e := rpc(t, b.URL, "tasks/get", id, map[string]any{"taskId": id})
		if e != nil || res["status"] != "working" {
			t.Fatalf("the task in flight on the first process is %v (%v) through the second:\n%s", res, e, b.Log.String())
		}
	}
	up.finishAll()
	res := awaitTask(t, b.URL, id, 30*time.Second)
	if res["status"] != "completed" || !strings.Contains(fmt.Sprint(res["result"]), "rows:101") {
		t.Fatalf("task ended %v: %v", res["status"], res)
	}
	if n := up.postsOf("sales"); n != 1 {
		t.Fatalf("the report was started %d times", n)
	}
	if strings.Contains(a.Log.String(), "took over") || strings.Contains(b.Log.String(), "took over") {
		t.Fatalf("a live lease was taken over:\nA:\n%s\nB:\n%s", a.Log.String(), b.Log.String())
	}
}

// TestStartWithMoreOrphansThanTheQueue: a crash left more unfinished tasks
// in the store than the task backlog holds (16 workers: 256). The next
// process serves at once, runs every one of them, and stops on SIGTERM.
func TestStartWithMoreOrphansThanTheQueue(t *testing.T) {
	const n = 300
	db := filepath.Join(t.TempDir(), "mcpgate.db")
	m, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		params := fmt.Sprintf(`{"arguments":{"n":%d,"ms":0}}`, i)
		if _, err := m.Create(context.Background(), tasks.NewTask{Owner: tasks.Principal{Subject: "crashed"},
			ToolName: "slowGet", Params: json.RawMessage(params), Idempotent: true, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	m.Close()

	up := newSlowUpstream(t)
	g := startGateway(t, nil, "--spec", writeDoc(t, clusterSpec), "--upstream", up.URL, "--store", "sqlite:"+db, "--credentials", "none")
	for deadline := time.Now().Add(60 * time.Second); up.started() < n; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d orphaned tasks ran\n%s", up.started(), n, g.Log.String())
		}
	}
	waitLog(t, g, fmt.Sprintf(`msg="tasks: recovered at start" requeued=%d`, n), 10*time.Second)
	g.sigterm() // the cleanup checks the clean exit
}

// TestShutdownLetsTasksFinish: SIGTERM while a createReport task polls its
// report. The gateway stops serving but keeps the task running (renewing
// its lease: a second process started meanwhile on the same store leaves it
// alone) until the report is done, records the result, and exits 0.
func TestShutdownLetsTasksFinish(t *testing.T) {
	up := newReportUpstream(t)
	db := filepath.Join(t.TempDir(), "mcpgate.db")
	args := []string{"--spec", writeDoc(t, reportsSpec), "--upstream", up.URL, "--store", "sqlite:" + db, "--task-lease", "2s"}
	env := clusterEnv(t)
	a := startGateway(t, env, args...)
	id := startTask(t, a.URL, "createReport", map[string]any{"kind": "inventory"})
	select {
	case <-up.firstPoll(1):
	case <-time.After(20 * time.Second):
		t.Fatalf("the task never polled its report\n%s", a.Log.String())
	}
	a.sigterm()
	waitLog(t, a, "tasks: stopping; letting running tasks finish", 10*time.Second)

	b := startGateway(t, env, args...)
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		select {
		case <-a.exited:
			t.Fatalf("the gateway exited with a task running (%v):\n%s", a.waitErr, a.Log.String())
		default:
		}
		if res, e := rpc(t, b.URL, "tasks/get", id, map[string]any{"taskId": id}); e != nil || res["status"] != "working" {
			t.Fatalf("during the shutdown the task is %v (%v):\n%s", res, e, b.Log.String())
		}
	}
	up.finishAll()
	select {
	case <-a.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("the gateway did not exit once its task finished:\n%s", a.Log.String())
	}
	if a.waitErr != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", a.waitErr, a.Log.String())
	}
	res := awaitTask(t, b.URL, id, 5*time.Second)
	if res["status"] != "completed" || !strings.Contains(fmt.Sprint(res["result"]), "rows:101") {
		t.Fatalf("the task finished during the shutdown ended %v: %v", res["status"], res)
	}
	if n := up.postsOf("inventory"); n != 1 {
		t.Fatalf("the report was started %d times", n)
	}
}
