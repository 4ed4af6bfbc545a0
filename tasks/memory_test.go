package tasks_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/tasks"
	"github.com/mcpgate/mcpgate/tasks/taskstest"
)

func TestMemoryContract(t *testing.T) {
	taskstest.Run(t, func(t *testing.T, o tasks.Options) tasks.Manager {
		return tasks.NewMemory(1000, o)
	})
}

func TestMemoryBounded(t *testing.T) {
	clock := taskstest.NewClock()
	m := tasks.NewMemory(2, tasks.Options{Now: clock.Now})
	p := tasks.Principal{Subject: "s"}
	if _, err := m.Create(t.Context(), tasks.NewTask{Owner: p, ToolName: "x", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(t.Context(), tasks.NewTask{Owner: p, ToolName: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(t.Context(), tasks.NewTask{Owner: p, ToolName: "x"}); !errors.Is(err, tasks.ErrCapacity) {
		t.Fatalf("third create: %v, want ErrCapacity", err)
	}
	clock.Advance(time.Minute) // the first one expires and makes room
	if _, err := m.Create(t.Context(), tasks.NewTask{Owner: p, ToolName: "x"}); err != nil {
		t.Fatalf("create after expiry: %v", err)
	}
	if m.Len() != 2 {
		t.Fatalf("len %d", m.Len())
	}
}
