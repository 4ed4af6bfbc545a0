package tasks_test

import (
	"context"
	"testing"

	"github.com/mcpgate/mcpgate/tasks"
)

func BenchmarkMemoryGet(b *testing.B) {
	m := tasks.NewMemory(20_000, tasks.Options{})
	ctx := context.Background()
	ids := make([]string, 10_000)
	for i := range ids {
		tk, err := m.Create(ctx, tasks.NewTask{Owner: owner, ToolName: "x"})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = tk.ID
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := m.Get(ctx, owner, ids[i%len(ids)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
}
