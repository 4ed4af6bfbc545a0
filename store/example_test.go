package store_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/tasks"
)

// The composition root builds the table of the backends it links in (here
// only the in-memory one; a gateway adds sqlite.OpenStore and
// postgres.OpenStore) and opens the configured location. Everything the core
// needs comes back in one value.
func ExampleOpeners_Open() {
	backends := store.Openers{"memory": store.OpenMemory}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()

	b, err := backends.Open(ctx, "memory", store.Options{Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	alice := tasks.Principal{Subject: "alice"}
	t, _ := b.Tasks.Create(ctx, tasks.NewTask{Owner: alice, ToolName: "createReport"})
	got, _ := b.Tasks.Get(ctx, alice, t.ID)
	first, _ := b.Replay.Use(ctx, "jti-1", t.CreatedAt.Add(60e9))
	again, _ := b.Replay.Use(ctx, "jti-1", t.CreatedAt.Add(60e9))
	fmt.Println(b.Location, b.Shared, got.ToolName, got.Status, first, again)

	_, err = backends.Open(ctx, "redis://cache", store.Options{})
	fmt.Println(err)
	// Output:
	// memory false createReport working true false
	// store "redis://cache": no backend for "redis" (use memory)
}
