package postgres_test

import (
	"testing"

	"github.com/mcpgate/mcpgate/postgres"
	"github.com/mcpgate/mcpgate/tasks"
	"github.com/mcpgate/mcpgate/tasks/taskstest"
)

// TestContract runs the shared TaskManager contract (the same suite the
// memory and SQLite managers pass), each subtest on a fresh schema.
func TestContract(t *testing.T) {
	testDSN(t)
	taskstest.Run(t, func(t *testing.T, o tasks.Options) tasks.Manager {
		return open(t, newSchema(t), postgres.Options{Options: o})
	})
}
