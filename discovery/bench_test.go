package discovery

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/corpustest"
	"github.com/mcpgate/mcpgate/internal/cputime"
	"github.com/mcpgate/mcpgate/openapi"
)

// BenchmarkSearchGraph searches Microsoft Graph's 11,422 tools with the 210
// evaluation requests in turn and reports the median and p99 latency of one
// search (goal: ≤ 1 ms and ≤ 5 ms).
//
//	MCPGATE_CORPUS=/tmp/mcpgate-corpus go test ./discovery -run '^$' -bench SearchGraph -benchtime 2000x
func BenchmarkSearchGraph(b *testing.B) {
	// The index alone stays alive, as in a gateway that keeps its tools
	// (the benchmark drops the document so its garbage does not time GC).
	path := filepath.Join(corpustest.Dir(b), "apis-guru/microsoft.com-graph.json")
	doc, err := openapi.Load(context.Background(), path, openapi.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	res, err := openapi.Generate(doc, openapi.GenerateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ix, err := New(FromTools("graph", res.Tools, ReadOperations(doc)), Options{})
	if err != nil {
		b.Fatal(err)
	}
	doc, res = nil, nil
	runtime.GC()
	var queries []string
	for _, api := range evalAPIs {
		s := loadEvalSet(b, api)
		for _, q := range append(append([]evalQuery{}, s.Dev...), s.Heldout...) {
			queries = append(queries, q.Q)
		}
	}
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	// best[q] is request q's fastest search: the slowest of these is what a
	// search costs without the noise of a shared machine.
	best := make([]time.Duration, len(queries))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := ix.Search(ctx, Query{Text: queries[i%len(queries)]}); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		lat = append(lat, d)
		if q := i % len(queries); best[q] == 0 || d < best[q] {
			best[q] = d
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "µs-median")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "µs-p99")
	if b.N >= 3*len(queries) {
		b.ReportMetric(float64(slices.Max(best).Microseconds()), "µs-slowest-request")
	}
}

// BenchmarkIndexBuild measures, side by side in each iteration, loading and
// generating a document and then building its index (FromTools + New), and
// reports the index's cost as a share of the load (goal: ≤ 20 %), in wall
// time and, steadier on a shared machine, in process CPU time.
//
//	MCPGATE_CORPUS=/tmp/mcpgate-corpus go test ./discovery -run '^$' -bench IndexBuild -benchtime 3x
func BenchmarkIndexBuild(b *testing.B) {
	for _, file := range []string{"apis-guru/microsoft.com-graph.json", "github/api.github.com.json", "apis-guru/stripe.com.json"} {
		b.Run(filepath.Base(file), func(b *testing.B) {
			path := filepath.Join(corpustest.Dir(b), file)
			var load, index, loadCPU, indexCPU time.Duration
			for i := 0; i < b.N; i++ {
				runtime.GC()
				t0, c0 := time.Now(), cputime.Process()
				// As the gateway loads: the path items built during
				// generation, read by search as they pass.
				doc, err := openapi.Load(context.Background(), path, openapi.LoadOptions{DeferPaths: true})
				if err != nil {
					b.Fatal(err)
				}
				ops := Operations{}
				res, err := openapi.Generate(doc, openapi.GenerateOptions{Consume: true, OnPathItem: ops.Read})
				if err != nil {
					b.Fatal(err)
				}
				t1, c1 := time.Now(), cputime.Process()
				if _, err := New(FromTools("api", res.Tools, ops), Options{}); err != nil {
					b.Fatal(err)
				}
				t2, c2 := time.Now(), cputime.Process()
				load += t1.Sub(t0)
				index += t2.Sub(t1)
				loadCPU += c1 - c0
				indexCPU += c2 - c1
			}
			n := float64(b.N)
			b.ReportMetric(float64(load.Milliseconds())/n, "ms-load+generate")
			b.ReportMetric(float64(index.Milliseconds())/n, "ms-index")
			b.ReportMetric(100*float64(index)/float64(load), "%-of-load")
			if loadCPU > 0 {
				b.ReportMetric(100*float64(indexCPU)/float64(loadCPU), "%-of-load-cpu")
			}
		})
	}
}
