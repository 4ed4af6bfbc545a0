package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/connect/connecttest"
	"github.com/mcpgate/mcpgate/postgres"
)

func TestGrantStore(t *testing.T) {
	connecttest.TestStore(t, func(t *testing.T) connect.Store {
		// Two replicas create the table at once on a fresh schema.
		schema := newSchema(t)
		ms := []*postgres.Manager{open(t, schema, postgres.Options{}), open(t, schema, postgres.Options{})}
		stores := make([]*postgres.GrantStore, len(ms))
		var wg sync.WaitGroup
		for i, m := range ms {
			wg.Go(func() {
				s, err := postgres.NewGrantStore(context.Background(), m.Pool(), nil)
				if err != nil {
					t.Error(err)
				}
				stores[i] = s
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		return stores[0]
	})
}
