package sqlite_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/sqlite"
	"github.com/mcpgate/mcpgate/tasks"
)

var benchOwner = tasks.Principal{Subject: "alice", Tenant: "acme"}

var benchParams = json.RawMessage(`{"name":"build_report","arguments":{"quarter":"Q3","format":"pdf"}}`)

func benchManager(b *testing.B, sync string) *sqlite.Manager {
	m, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "tasks.db"), sqlite.Options{Synchronous: sync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}

func perSecond(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
}

// BenchmarkCreate measures create → committed → handle returned.
func BenchmarkCreate(b *testing.B) {
	for _, sync := range []string{"NORMAL", "FULL"} {
		b.Run(sync, func(b *testing.B) {
			m := benchManager(b, sync)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Create(ctx, tasks.NewTask{Owner: benchOwner, ToolName: "build_report", Params: benchParams, TTL: time.Hour}); err != nil {
					b.Fatal(err)
				}
			}
			perSecond(b)
		})
		b.Run(sync+"/parallel", func(b *testing.B) {
			m := benchManager(b, sync)
			ctx := context.Background()
			b.ReportAllocs()
			b.SetParallelism(8) // 16 concurrent callers on 2 cores, as under HTTP load
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := m.Create(ctx, tasks.NewTask{Owner: benchOwner, ToolName: "build_report", Params: benchParams, TTL: time.Hour}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			perSecond(b)
		})
	}
}

// BenchmarkGet measures an authorized tasks/get lookup on 10,000 stored tasks.
func BenchmarkGet(b *testing.B) {
	m := benchManager(b, "NORMAL")
	ctx := context.Background()
	ids := make([]string, 10_000)
	for i := range ids {
		tk, err := m.Create(ctx, tasks.NewTask{Owner: benchOwner, ToolName: "build_report", Params: benchParams, TTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = tk.ID
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := m.Get(ctx, benchOwner, ids[i%len(ids)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
		perSecond(b)
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := n.Add(1)
				if _, err := m.Get(ctx, benchOwner, ids[int(i)%len(ids)]); err != nil {
					b.Error(err)
					return
				}
			}
		})
		perSecond(b)
	})
}

// BenchmarkRunner measures the whole path on SQLite: submit (durable create)
// → claim → handler → completed, with 4 workers.
func BenchmarkRunner(b *testing.B) {
	m := benchManager(b, "NORMAL")
	r, err := tasks.NewRunner(tasks.RunnerConfig{Manager: m, Concurrency: 4, Queue: 1 << 16})
	if err != nil {
		b.Fatal(err)
	}
	r.Handle("echo", tasks.Handler{Run: func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
		return json.RawMessage(`{"content":[{"type":"text","text":"ok"}],"isError":false}`), nil
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	ids := make([]string, 0, b.N)
	b.ResetTimer()
	for range b.N {
		tk, err := r.Submit(ctx, tasks.NewTask{Owner: benchOwner, ToolName: "echo", Params: benchParams, TTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}
	for _, id := range ids {
		for {
			tk, err := m.Get(ctx, benchOwner, id)
			if err != nil {
				b.Fatal(err)
			}
			if tk.Status == tasks.Completed {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	perSecond(b)
}
