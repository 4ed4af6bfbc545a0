package postgres_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/postgres"
	"github.com/mcpgate/mcpgate/sqlite"
	"github.com/mcpgate/mcpgate/tasks"
)

// The benchmarks run each operation on PostgreSQL and on SQLite in the same
// run, so the two are compared on the same machine at the same moment:
//
//	go test -run '^$' -bench . -benchmem ./postgres/
//
// Both stores run at their defaults: PostgreSQL with synchronous_commit on
// (a commit waits for its WAL fsync) and NOTIFY in every visible change;
// SQLite in WAL mode with synchronous=NORMAL (no fsync per commit).

type store struct {
	name string
	open func(b *testing.B) tasks.Manager
}

var stores = []store{
	{"postgres", func(b *testing.B) tasks.Manager {
		return open(b, newSchema(b), postgres.Options{MaxConns: 8})
	}},
	{"sqlite", func(b *testing.B) tasks.Manager {
		m, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "tasks.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close() })
		return m
	}},
}

var benchTask = tasks.NewTask{
	Owner:    owner,
	ToolName: "build_report",
	Params:   json.RawMessage(`{"name":"build_report","arguments":{"quarter":"Q3","format":"pdf"}}`),
	TTL:      time.Hour, PollInterval: 5 * time.Second, Idempotent: true,
	StatusMessage: "Report generation started",
}

// BenchmarkCreate: task creation up to the returned handle, which is only
// returned once the task is committed (durable).
func BenchmarkCreate(b *testing.B) {
	for _, s := range stores {
		b.Run(s.name, func(b *testing.B) {
			m := s.open(b)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Create(ctx, benchTask); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCreateParallel: the same with GOMAXPROCS concurrent creators.
func BenchmarkCreateParallel(b *testing.B) {
	for _, s := range stores {
		b.Run(s.name, func(b *testing.B) {
			m := s.open(b)
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := m.Create(ctx, benchTask); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkGet: tasks/get of a task with a result, authorized.
func BenchmarkGet(b *testing.B) {
	for _, s := range stores {
		b.Run(s.name, func(b *testing.B) {
			m := s.open(b)
			id := finishedTask(b, m)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Get(ctx, owner, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGetParallel: the same with GOMAXPROCS concurrent readers.
func BenchmarkGetParallel(b *testing.B) {
	for _, s := range stores {
		b.Run(s.name, func(b *testing.B) {
			m := s.open(b)
			id := finishedTask(b, m)
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := m.Get(ctx, owner, id); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func finishedTask(b *testing.B, m tasks.Manager) string {
	b.Helper()
	ctx := context.Background()
	tk, err := m.Create(ctx, benchTask)
	if err != nil {
		b.Fatal(err)
	}
	c, err := m.Claim(ctx, tasks.Claim{TaskID: tk.ID, Owner: "w", For: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	result := json.RawMessage(`{"content":[{"type":"text","text":"Q3 report: revenue up 12%"}],"structuredContent":{"url":"https://example.com/r.pdf"},"isError":false}`)
	if err := m.Finish(ctx, c.Lease(), tasks.Completed, result, ""); err != nil {
		b.Fatal(err)
	}
	return tk.ID
}
