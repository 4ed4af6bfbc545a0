package postgres_test

import (
	"context"
	"testing"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/audit/audittest"
	"github.com/mcpgate/mcpgate/postgres"
)

func TestAuditStore(t *testing.T) {
	audittest.Run(t, func(t *testing.T) audit.Store {
		m := open(t, newSchema(t), postgres.Options{})
		s, err := postgres.NewAuditStore(context.Background(), m.Pool())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := postgres.NewAuditStore(context.Background(), m.Pool()); err != nil {
			t.Fatal(err)
		}
		return s
	})
}
