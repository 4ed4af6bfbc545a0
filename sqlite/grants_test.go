package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/connect/connecttest"
	"github.com/mcpgate/mcpgate/sqlite"
)

func TestGrantStore(t *testing.T) {
	connecttest.TestStore(t, func(t *testing.T) connect.Store {
		ctx := context.Background()
		m, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "grants.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		s, err := sqlite.NewGrantStore(ctx, m.DB(), nil)
		if err != nil {
			t.Fatal(err)
		}
		// Creating it again on the same database is harmless.
		if _, err := sqlite.NewGrantStore(ctx, m.DB(), nil); err != nil {
			t.Fatal(err)
		}
		return s
	})
}
