package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/sqlite"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/tasks"
)

func TestOpenStore(t *testing.T) {
	dir := t.TempDir()
	backends := store.Openers{"sqlite": sqlite.OpenStore}
	p := tasks.Principal{Subject: "alice"}
	for _, tc := range []struct{ location, path string }{
		{"sqlite:" + filepath.Join(dir, "a", "b", "one.db"), filepath.Join(dir, "a", "b", "one.db")},
		{"sqlite://" + filepath.Join(dir, "two.db"), filepath.Join(dir, "two.db")},
	} {
		b, err := backends.Open(t.Context(), tc.location, store.Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.location, err)
		}
		if b.Location != tc.path || b.Shared {
			t.Errorf("%s: Location %q Shared %v, want %q and not shared", tc.location, b.Location, b.Shared, tc.path)
		}
		ch, stop := b.Publisher.Subscribe(t.Context())
		tk, err := b.Tasks.Create(t.Context(), tasks.NewTask{Owner: p, ToolName: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if id := <-ch; id != tk.ID {
			t.Errorf("published %q, want %q", id, tk.ID)
		}
		stop()
		if first, err := b.Replay.Use(t.Context(), "j", tk.CreatedAt.Add(60e9)); err != nil || !first {
			t.Fatalf("replay: %v %v", first, err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(tc.path); err != nil {
			t.Errorf("no database at %s: %v", tc.path, err)
		}
		// Reopened, the task and the used jti are still there.
		b, err = backends.Open(t.Context(), tc.location, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Tasks.Get(t.Context(), p, tk.ID); err != nil {
			t.Errorf("task lost on reopen: %v", err)
		}
		if first, _ := b.Replay.Use(t.Context(), "j", tk.CreatedAt.Add(60e9)); first {
			t.Error("a used jti was accepted again after reopening")
		}
		b.Close()
	}
	for _, bad := range []string{"sqlite:", "sqlite://"} {
		if _, err := sqlite.OpenStore(context.Background(), bad, store.Options{}); err == nil || !strings.Contains(err.Error(), "no database path") {
			t.Errorf("OpenStore(%q) = %v", bad, err)
		}
	}
}
