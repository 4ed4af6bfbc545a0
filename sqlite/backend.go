package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/tasks"
)

// OpenStore is the [store.Opener] of locations "sqlite:PATH" (also written
// "sqlite://PATH", so "sqlite:///var/lib/mcpgate.db" is an absolute path):
// the task manager and the replay cache on the database file at PATH
// (created with its directory if missing), and an in-process publisher.
//
// Several processes on one machine may open the same file (a desktop client
// starting "mcpgate stdio" beside a running server, say): writes serialize
// on the file's lock, and a task is taken over only once its worker's lease
// lapsed. Notifications stay in the process that made the change, so the
// backend is not Shared; clients of the other process see the change when
// they poll.
func OpenStore(ctx context.Context, location string, o store.Options) (*store.Backend, error) {
	path, ok := strings.CutPrefix(location, "sqlite:")
	if !ok {
		return nil, fmt.Errorf("store %q: not a sqlite:PATH location", location)
	}
	path = strings.TrimPrefix(path, "//")
	if path == "" {
		return nil, fmt.Errorf("store %q: no database path (write sqlite:PATH)", location)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	bus := tasks.NewBus(0)
	m, err := Open(ctx, path, Options{Options: o.TaskOptions(bus)})
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	replay, err := NewReplayCache(ctx, m, o.Now)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return &store.Backend{
		Tasks:     m,
		Replay:    replay,
		Publisher: bus,
		Location:  path,
		CloseFunc: func() error { bus.Close(); return m.Close() },
		Audit:     func(ctx context.Context) (audit.Store, error) { return NewAuditStore(ctx, m.DB()) },
		Grants:    func(ctx context.Context) (connect.Store, error) { return NewGrantStore(ctx, m.DB(), o.Now) },
	}, nil
}
