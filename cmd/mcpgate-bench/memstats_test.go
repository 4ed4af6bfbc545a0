package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcpgate/mcpgate/demo"
)

func TestParseGoMem(t *testing.T) {
	text := `# HELP go_memstats_mallocs_total Total number of heap objects allocated.
# TYPE go_memstats_mallocs_total counter
go_memstats_mallocs_total 1.234567e+06
go_memstats_alloc_bytes_total 9.8e+07 1700000000000
go_gc_duration_seconds{quantile="0.5"} 0.0001
go_gc_duration_seconds_sum 0.5
go_gc_duration_seconds_count 42
go_memstats_mallocs_total_other 7
`
	m, err := parseGoMem(strings.NewReader(text))
	if err != nil || m != (goMem{allocs: 1234567, bytes: 9.8e7, gcs: 42}) {
		t.Errorf("parseGoMem = %+v, %v", m, err)
	}
	for name, bad := range map[string]string{
		"missing":   "go_memstats_mallocs_total 1\ngo_gc_duration_seconds_count 2\n",
		"bad value": "go_memstats_mallocs_total x\ngo_memstats_alloc_bytes_total 1\ngo_gc_duration_seconds_count 2\n",
		"empty":     "",
	} {
		if _, err := parseGoMem(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestMemPerRequest(t *testing.T) {
	sc := newMemScraper(metricsFlags{{"srv", "http://127.0.0.1/metrics"}})
	s := summary{Requests: 1000, Seconds: 2}
	err := sc.memPerRequest(&s, []goMem{{allocs: 500, bytes: 1e6, gcs: 10}}, []goMem{{allocs: 50500, bytes: 11e6, gcs: 30}})
	if err != nil || s.AllocsPerReq["srv"] != 50 || s.BytesPerReq["srv"] != 10000 || s.GCPerSec["srv"] != 10 {
		t.Errorf("memPerRequest: %+v %v", s, err)
	}
	if err := sc.memPerRequest(&s, nil, nil); err == nil {
		t.Error("snapshots that do not match the targets were accepted")
	}
}

// TestRunReportsAllocations drives the demo in this process and reads this
// process's own Go metrics from the Prometheus client's Go collector, the
// one mcpgate and the bench servers export: the names must match, and
// serving requests allocates.
func TestRunReportsAllocations(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", demo.New(demo.Options{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s := runJSON(t, "-mode", "http", "-url", srv.URL+"/pets/1", "-n", "2000", "-c", "2",
		"-metrics", "self="+srv.URL+"/metrics", "-label", "demo", "-round", "3")
	allocs, bytes := s.AllocsPerReq["self"], s.BytesPerReq["self"]
	if allocs < 1 || bytes < allocs || s.GCPerSec["self"] < 0 {
		t.Errorf("allocs/req %v, bytes/req %v, gc/s %v", allocs, bytes, s.GCPerSec)
	}
	if s.Label != "demo" || s.Round != 3 {
		t.Errorf("label %q round %d", s.Label, s.Round)
	}
	for _, bad := range [][]string{
		{"-metrics", "nourl"},
		{"-metrics", "x=http://example.com/metrics"},
		{"-round", "-1"},
	} {
		if _, err := parseFlags(append([]string{"-mode", "http", "-url", srv.URL}, bad...), io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	err := run(t.Context(), []string{"-mode", "http", "-url", srv.URL + "/pets/1", "-n", "5", "-metrics", "x=" + srv.URL + "/pets/1"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-metrics x") {
		t.Errorf("a -metrics URL without Go metrics: %v", err)
	}
}
