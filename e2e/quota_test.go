package e2e

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// retryIn reads the retry time of a quota refusal.
var retryIn = regexp.MustCompile(`Retry in (\d+)s\.`)

// TestQuotaReplicas (issue 18): three replicas on one PostgreSQL database,
// one caller, a limit of N calls per minute. Calls spread over the
// replicas; the admitted count stays within the quota package's stated
// cluster bound, N + N·T/window + R·B (R replicas, B tokens leased per
// bank round trip), and above N − R·B (at most B tokens wait unspent on
// each replica); every refusal says when to retry, sends nothing upstream
// and is counted as refused.
func TestQuotaReplicas(t *testing.T) {
	dsn, _, _ := clusterDSN(t)
	rec := newRecorder(t)
	const (
		replicas = 3
		limit    = 60 // per minute: B = 5 % of it = 3 tokens per lease
		batch    = 3
		calls    = 150
		workers  = 6
	)
	env := clusterEnv(t)
	quotas := fmt.Sprintf("[{per: caller, limit: %d, window: 1m}]", limit)
	var gs []*gatewayProc
	for range replicas {
		gs = append(gs, startOps(t, rec, env, "--store", dsn, "--credentials", "none", "--quotas", quotas))
	}

	var (
		mu       sync.Mutex
		admitted int
		refused  []string
		perProc  [replicas]int
	)
	jobs := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				g := gs[i%replicas]
				res := callAs(t, g.URL, opsBearer, "getItem", map[string]any{"id": strconv.Itoa(i)}, nil)
				mu.Lock()
				if res["isError"] == true {
					refused = append(refused, resultText(res))
				} else {
					admitted++
					perProc[i%replicas]++
				}
				mu.Unlock()
			}
		})
	}
	for i := range calls {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)

	// N·T/window rounded up, plus the leases.
	upper := limit + int(math.Ceil(float64(limit)*elapsed.Seconds()/60)) + replicas*batch
	lower := limit - replicas*batch
	t.Logf("%d calls over %d replicas in %v: %d admitted (per replica %v), %d refused; bound [%d, %d]",
		calls, replicas, elapsed.Round(time.Millisecond), admitted, perProc, len(refused), lower, upper)
	if admitted > upper || admitted < lower {
		t.Errorf("%d calls admitted, want between %d and %d", admitted, lower, upper)
	}
	for _, msg := range refused {
		m := retryIn.FindStringSubmatch(msg)
		if m == nil {
			t.Fatalf("a refusal without a retry time: %q", msg)
		}
		if s, _ := strconv.Atoi(m[1]); s < 1 || s > 60 {
			t.Errorf("retry in %ds: want 1 to 60 s (a token comes back every second)", s)
		}
	}
	if sent := len(rec.requests()); sent != admitted {
		t.Errorf("the upstream received %d calls, %d were admitted", sent, admitted)
	}
	counted := 0.0
	for _, g := range gs {
		_, m := getText(t, g.Base+"/metrics")
		if v := metricValue(m, `mcpgate_tool_calls_total{outcome="refused",tool="getItem"}`); v > 0 {
			counted += v
		}
	}
	if int(counted) != len(refused) {
		t.Errorf("the replicas counted %v refusals, the caller got %d", counted, len(refused))
	}
}
