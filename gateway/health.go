package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/tasks"
)

// readiness answers GET /readyz: ready when the store answers and every
// API's upstream answers HTTP at all (any status: a 401 or 404 from the
// upstream still proves it is there). A load balancer polls it often, so
// a verdict is kept for a few seconds and checks never pile up.
type readiness struct {
	g      *Gateway
	client *http.Client
	ttl    time.Duration

	mu      sync.Mutex
	checked time.Time
	report  readyReport
}

type readyReport struct {
	Ready     bool              `json:"ready"`
	Store     string            `json:"store"`
	Upstreams map[string]string `json:"upstreams"`
}

func newReadiness(g *Gateway) *readiness {
	return &readiness{g: g, ttl: 2 * time.Second, client: &http.Client{
		Timeout:       2 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// ServeHTTP answers 200 with the report when ready, 503 otherwise. The
// report names each API's state, never an upstream's address.
func (rd *readiness) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rep := rd.check(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !rep.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(rep)
}

func (rd *readiness) check(ctx context.Context) readyReport {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if time.Since(rd.checked) < rd.ttl {
		return rd.report
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	rep := readyReport{Ready: true, Store: "ok", Upstreams: map[string]string{}}
	// An id no task has: a store that answers says "not found".
	if _, err := rd.g.backend.Tasks.Get(ctx, tasks.Principal{Subject: "readyz"}, "readyz-probe"); err != nil && !errors.Is(err, tasks.ErrNotFound) {
		rep.Ready, rep.Store = false, "unreachable"
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, a := range rd.g.current().apis {
		wg.Go(func() {
			state := "ok"
			req, _ := http.NewRequestWithContext(ctx, http.MethodHead, a.base.String(), nil)
			if resp, err := rd.client.Do(req); err != nil {
				state = "unreachable"
			} else {
				resp.Body.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			rep.Upstreams[a.displayName()] = state
			if state != "ok" {
				rep.Ready = false
			}
		})
	}
	wg.Wait()
	rd.checked, rd.report = time.Now(), rep
	return rep
}
