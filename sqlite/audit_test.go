package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/audit/audittest"
	"github.com/mcpgate/mcpgate/sqlite"
)

func TestAuditStore(t *testing.T) {
	audittest.Run(t, func(t *testing.T) audit.Store {
		m, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "audit.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		s, err := sqlite.NewAuditStore(context.Background(), m.DB())
		if err != nil {
			t.Fatal(err)
		}
		// Creating it again (a restart) is harmless.
		if _, err := sqlite.NewAuditStore(context.Background(), m.DB()); err != nil {
			t.Fatal(err)
		}
		return s
	})
}
