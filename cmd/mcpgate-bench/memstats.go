package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// metricsFlags collects repeated -metrics NAME=URL flags: the Prometheus
// text endpoints of Go processes whose allocations and collections the
// harness reports per measured request.
type metricsFlags []namedURL

type namedURL struct{ name, url string }

func (m *metricsFlags) String() string {
	var parts []string
	for _, nu := range *m {
		parts = append(parts, nu.name+"="+nu.url)
	}
	return strings.Join(parts, ",")
}

func (m *metricsFlags) Set(s string) error {
	name, u, ok := strings.Cut(s, "=")
	if !ok || name == "" || u == "" {
		return fmt.Errorf("-metrics %q: want NAME=URL", s)
	}
	*m = append(*m, namedURL{name: name, url: u})
	return nil
}

// goMem is what one scrape of a Go process's metrics says: cumulative heap
// allocations (objects and bytes) and completed collections.
type goMem struct {
	allocs, bytes, gcs float64
}

// The Go collector of the Prometheus client exports these under these
// names in every process that registers it (mcpgate's /metrics, the bench
// servers' -metrics listener).
const (
	metricAllocs = "go_memstats_mallocs_total"
	metricBytes  = "go_memstats_alloc_bytes_total"
	metricGCs    = "go_gc_duration_seconds_count"
)

// parseGoMem reads the three counters from a Prometheus text exposition.
// All three must be present: a process that does not export them cannot be
// reported on, and a zero would look like a process that allocates nothing.
func parseGoMem(r io.Reader) (goMem, error) {
	var m goMem
	var seen int
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		var dst *float64
		switch name {
		case metricAllocs:
			dst = &m.allocs
		case metricBytes:
			dst = &m.bytes
		case metricGCs:
			dst = &m.gcs
		default:
			continue
		}
		value, _, _ = strings.Cut(value, " ") // a timestamp may follow
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return goMem{}, fmt.Errorf("metric %s: value %q: %w", name, value, err)
		}
		*dst = v
		seen++
	}
	if err := sc.Err(); err != nil {
		return goMem{}, fmt.Errorf("read metrics: %w", err)
	}
	if seen < 3 {
		return goMem{}, fmt.Errorf("the metrics lack one of %s, %s, %s (not a Go process with the Prometheus Go collector?)", metricAllocs, metricBytes, metricGCs)
	}
	return m, nil
}

// memScraper reads goMem from the -metrics endpoints, with a client of its
// own so that it never takes a connection from the load's pool.
type memScraper struct {
	targets metricsFlags
	client  *http.Client
}

func newMemScraper(targets metricsFlags) *memScraper {
	return &memScraper{targets: targets, client: &http.Client{Timeout: 5 * time.Second}}
}

// snapshot scrapes every endpoint once.
func (s *memScraper) snapshot(ctx context.Context) ([]goMem, error) {
	out := make([]goMem, len(s.targets))
	for i, t := range s.targets {
		m, err := s.scrape(ctx, t.url)
		if err != nil {
			return nil, fmt.Errorf("-metrics %s: %w", t.name, err)
		}
		out[i] = m
	}
	return out, nil
}

func (s *memScraper) scrape(ctx context.Context, url string) (goMem, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return goMem{}, fmt.Errorf("build request: %w", err)
	}
	res, err := s.client.Do(req)
	if err != nil {
		return goMem{}, err
	}
	defer drain(res)
	if res.StatusCode != http.StatusOK {
		return goMem{}, fmt.Errorf("GET %s: HTTP %d", url, res.StatusCode)
	}
	return parseGoMem(io.LimitReader(res.Body, 16<<20))
}

// memPerRequest fills the summary's allocation figures from two snapshots
// taken around the measured phase. A scrape's own allocations fall inside
// the window; they are a few hundred objects against thousands of requests.
func (s *memScraper) memPerRequest(sum *summary, before, after []goMem) error {
	if len(s.targets) == 0 || sum.Requests == 0 {
		return nil
	}
	if len(before) != len(s.targets) || len(after) != len(s.targets) {
		return errors.New("metrics snapshots do not match the -metrics targets")
	}
	sum.AllocsPerReq, sum.BytesPerReq, sum.GCPerSec = map[string]float64{}, map[string]float64{}, map[string]float64{}
	n := float64(sum.Requests)
	for i, t := range s.targets {
		sum.AllocsPerReq[t.name] = (after[i].allocs - before[i].allocs) / n
		sum.BytesPerReq[t.name] = (after[i].bytes - before[i].bytes) / n
		if sum.Seconds > 0 {
			sum.GCPerSec[t.name] = (after[i].gcs - before[i].gcs) / sum.Seconds
		}
	}
	return nil
}
