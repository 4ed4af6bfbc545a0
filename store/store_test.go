package store_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/mrtr"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/tasks"
)

func quiet() store.Options {
	return store.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestScheme(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"sqlite:/var/lib/x.db", "sqlite"},
		{"SQLite:x.db", "sqlite"},
		{"postgres://u@db/mcpgate", "postgres"},
		{"postgresql://db", "postgresql"},
		{"memory", "memory"},
		{"", ""},
		{":x", ""},
	} {
		if got := store.Scheme(tc.in); got != tc.want {
			t.Errorf("Scheme(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// fake is a complete backend that records whether it was closed.
func fake(closed *int) store.Opener {
	return func(_ context.Context, location string, _ store.Options) (*store.Backend, error) {
		return &store.Backend{
			Tasks: tasks.NewMemory(0, tasks.Options{}), Replay: mrtr.NewMemoryReplayCache(0, nil), Publisher: tasks.NewBus(0),
			CloseFunc: func() error { *closed++; return nil },
		}, nil
	}
}

func TestOpenChoosesByScheme(t *testing.T) {
	var aClosed, bClosed int
	table := store.Openers{"a": fake(&aClosed), "b": fake(&bClosed), "memory": store.OpenMemory}
	b, err := table.Open(context.Background(), "B:somewhere", quiet())
	if err != nil {
		t.Fatal(err)
	}
	if b.Location != "b" {
		t.Errorf("Location defaults to the scheme, got %q", b.Location)
	}
	if err := b.Close(); err != nil || bClosed != 1 || aClosed != 0 {
		t.Fatalf("Close: %v, closed a=%d b=%d", err, aClosed, bClosed)
	}
	if err := b.Close(); err != nil || bClosed != 1 {
		t.Fatalf("a second Close closed again: %d", bClosed)
	}
}

func TestOpenErrors(t *testing.T) {
	var closed int
	incomplete := func(_ context.Context, _ string, _ store.Options) (*store.Backend, error) {
		return &store.Backend{Tasks: tasks.NewMemory(0, tasks.Options{}), CloseFunc: func() error { closed++; return nil }}, nil
	}
	failing := func(_ context.Context, _ string, _ store.Options) (*store.Backend, error) {
		return nil, errors.New("disk on fire")
	}
	table := store.Openers{"sqlite": incomplete, "postgres": failing, "memory": store.OpenMemory}
	for _, tc := range []struct {
		location string
		want     []string
	}{
		{"bogus:x", []string{`store "bogus:x"`, `no backend for "bogus"`, "memory, postgres://…, sqlite:PATH"}},
		{"", []string{`no backend for ""`}},
		{"memory:/tmp/x", []string{"takes no path"}},
		{"postgres://db", []string{"disk on fire"}},
		{"sqlite:x.db", []string{"incomplete backend"}},
	} {
		_, err := table.Open(context.Background(), tc.location, quiet())
		if err == nil {
			t.Errorf("Open(%q) succeeded", tc.location)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Open(%q) = %q, want it to contain %q", tc.location, err, w)
			}
		}
	}
	if closed != 1 {
		t.Errorf("an incomplete backend must be closed, closed %d times", closed)
	}
	if _, err := (store.Openers{}).Open(context.Background(), "memory", quiet()); err == nil || !strings.Contains(err.Error(), "no backend is linked in") {
		t.Errorf("empty table: %v", err)
	}
}

func TestMemoryBackendPublishes(t *testing.T) {
	ctx := t.Context()
	b, err := store.OpenMemory(ctx, "memory", quiet())
	if err != nil {
		t.Fatal(err)
	}
	ch, stop := b.Publisher.Subscribe(ctx)
	defer stop()
	tk, err := b.Tasks.Create(ctx, tasks.NewTask{Owner: tasks.Principal{Subject: "a"}, ToolName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := <-ch; got != tk.ID {
		t.Fatalf("published %q, want %q", got, tk.ID)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, open := <-ch; open {
		t.Fatal("Close left the subscription open")
	}
}
