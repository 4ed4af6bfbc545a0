package connect_test

import (
	"testing"

	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/connect/connecttest"
)

func TestMemoryStore(t *testing.T) {
	connecttest.TestStore(t, func(*testing.T) connect.Store { return &connect.MemoryStore{} })
}
