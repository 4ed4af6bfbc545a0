package store

import (
	"context"
	"fmt"

	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/mrtr"
	"github.com/mcpgate/mcpgate/tasks"
)

// MemoryTaskLimit bounds the tasks of a memory backend.
const MemoryTaskLimit = 100_000

// OpenMemory opens the in-process backend ("memory"): tasks, used request
// states and notifications live in this process only and die with it. It is
// for development and tests; it warns once on o's logger.
func OpenMemory(_ context.Context, location string, o Options) (*Backend, error) {
	if location != "memory" {
		return nil, fmt.Errorf("store %q: the memory backend takes no path (write just memory)", location)
	}
	o.Log().Warn("tasks are kept in memory: they are lost on restart (use --store sqlite:PATH)")
	bus := tasks.NewBus(0)
	return &Backend{
		Tasks:     tasks.NewMemory(MemoryTaskLimit, o.TaskOptions(bus)),
		Replay:    mrtr.NewMemoryReplayCache(mrtr.DefaultReplayCacheSize, o.Now),
		Publisher: bus,
		Location:  "memory",
		CloseFunc: func() error { bus.Close(); return nil },
		Grants:    func(context.Context) (connect.Store, error) { return &connect.MemoryStore{}, nil },
	}, nil
}
