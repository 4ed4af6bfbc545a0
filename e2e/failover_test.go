package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFailoverPassthroughSQLite and TestFailoverPassthroughPostgres: the
// process running 40 createReport tasks in passthrough mode is killed with
// SIGKILL while 6 reports are accepted (their worker polls the Location),
// 2 requests are on their way to the API, and 32 tasks wait in its queue.
// The next process on the store (SQLite) or another replica (PostgreSQL)
// takes over: every queued or accepted task completes, as its caller
// (the credential kept sealed with the task), with its report started
// exactly once; the two requests in doubt fail saying exactly that.
func TestFailoverPassthroughSQLite(t *testing.T) {
	testPassthroughFailover(t, "sqlite:"+filepath.Join(t.TempDir(), "mcpgate.db"))
}

func TestFailoverPassthroughPostgres(t *testing.T) {
	dsn, _, _ := clusterDSN(t)
	testPassthroughFailover(t, dsn)
}

func testPassthroughFailover(t *testing.T, store string) {
	const n, workers = 40, 8
	up := newReportUpstream(t)
	kind := func(i int) string { return fmt.Sprintf("r%d", i) }
	inDoubt := map[string]bool{kind(6): true, kind(7): true}
	up.hold(kind(6), kind(7))
	args := []string{"--spec", writeDoc(t, reportsSpec), "--upstream", up.URL, "--store", store,
		"--task-lease", "2s", "--task-concurrency", fmt.Sprint(workers)}
	env := clusterEnv(t) // one key ring for both processes
	a := startGateway(t, env, args...)
	ids := make([]string, n)
	for i := range n {
		ids[i] = startTask(t, a.URL, "createReport", map[string]any{"kind": kind(i)})
	}
	for range inDoubt {
		select {
		case <-up.held:
		case <-time.After(20 * time.Second):
			t.Fatalf("the held requests never reached the upstream\n%s", a.Log.String())
		}
	}
	for deadline := time.Now().Add(20 * time.Second); up.polledReports() < workers-len(inDoubt); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d reports polled, want %d\n%s", up.polledReports(), workers-len(inDoubt), a.Log.String())
		}
	}
	a.crash()

	b := startGateway(t, env, args...)
	up.releaseHeld()
	up.finishAll()
	completed := 0
	for i, id := range ids {
		res := awaitTask(t, b.URL, id, 90*time.Second)
		switch {
		case inDoubt[kind(i)]:
			if res["status"] != "failed" || !strings.Contains(fmt.Sprint(res["statusMessage"]), "may or may not have reached the API") {
				t.Errorf("task %s (in doubt) ended %v: %v", kind(i), res["status"], res["statusMessage"])
			}
		case res["status"] != "completed":
			t.Errorf("task %s ended %v: %v", kind(i), res["status"], res["statusMessage"])
		case !strings.Contains(fmt.Sprint(res["result"]), "status:done"):
			t.Errorf("task %s completed without its report: %v", kind(i), res["result"])
		default:
			completed++
		}
		if posts := up.postsOf(kind(i)); !inDoubt[kind(i)] && posts != 1 {
			t.Errorf("report %s was started %d times, want once", kind(i), posts)
		}
	}
	t.Logf("%d of %d tasks completed after the SIGKILL; %d in doubt failed", completed, n, len(inDoubt))
	for auth, count := range up.authorizations() {
		if auth != "Bearer cluster-user" {
			t.Errorf("the upstream received %d requests with Authorization %q, not the caller's", count, auth)
		}
	}
}
