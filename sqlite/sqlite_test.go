package sqlite_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/sqlite"
	"github.com/mcpgate/mcpgate/tasks"
	"github.com/mcpgate/mcpgate/tasks/taskstest"
)

func open(t testing.TB, path string, o tasks.Options) *sqlite.Manager {
	t.Helper()
	m, err := sqlite.Open(context.Background(), path, sqlite.Options{Options: o})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestContract(t *testing.T) {
	taskstest.Run(t, func(t *testing.T, o tasks.Options) tasks.Manager {
		return open(t, filepath.Join(t.TempDir(), "tasks.db"), o)
	})
}

func TestReopenKeepsTasks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	p := tasks.Principal{Subject: "alice", Tenant: "acme"}
	m, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := m.Create(t.Context(), tasks.NewTask{Owner: p, ToolName: "x", Params: []byte(`{"a":"<&>"}`), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := open(t, path, tasks.Options{})
	got, err := m2.Get(t.Context(), p, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Params) != `{"a":"<&>"}` || !got.CreatedAt.Equal(tk.CreatedAt) || got.TTL != time.Hour {
		t.Fatalf("reopened task differs: %+v", got)
	}
	var mode string
	if err := m2.DB().QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal mode %q (%v)", mode, err)
	}
}

func TestDatabaseRefusesIllegalTransitions(t *testing.T) {
	m := open(t, filepath.Join(t.TempDir(), "tasks.db"), tasks.Options{})
	ctx := t.Context()
	p := tasks.Principal{Subject: "s"}
	tk, _ := m.Create(ctx, tasks.NewTask{Owner: p, ToolName: "x"})
	c, err := m.Claim(ctx, tasks.Claim{TaskID: tk.ID, Owner: "w", For: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Finish(ctx, c.Lease(), tasks.Completed, []byte(`{}`), ""); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE tasks SET status = 'working' WHERE id = ?`,
		`UPDATE tasks SET result = '{"x":1}' WHERE id = ?`,
	} {
		_, err := m.DB().Exec(q, tk.ID)
		if err == nil || !strings.Contains(err.Error(), "illegal task transition") {
			t.Errorf("%s: %v, want trigger abort", q, err)
		}
	}
	if _, err := m.DB().Exec(`UPDATE tasks SET status = 'bogus' WHERE id != ?`, tk.ID); err != nil {
		t.Fatal(err) // no other rows: nothing to refuse
	}
	tk2, _ := m.Create(ctx, tasks.NewTask{Owner: p, ToolName: "x"})
	if _, err := m.DB().Exec(`UPDATE tasks SET status = 'bogus' WHERE id = ?`, tk2.ID); err == nil {
		t.Error("unknown status accepted")
	}
	tr, err := m.Transitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) != 1 || tr[0].TaskID != tk.ID || tr[0].From != tasks.Working || tr[0].To != tasks.Completed {
		t.Fatalf("audit trail %+v", tr)
	}
}

func TestCreateWithDoneContext(t *testing.T) {
	m := open(t, filepath.Join(t.TempDir(), "tasks.db"), tasks.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := m.Create(ctx, tasks.NewTask{Owner: tasks.Principal{Subject: "s"}, ToolName: "x"}); err == nil {
		t.Fatal("create with a done context succeeded")
	}
	var n int
	if err := m.DB().QueryRow(`SELECT count(*) FROM tasks`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows (%v)", n, err)
	}
}

func TestGroupCommitManyWriters(t *testing.T) {
	m := open(t, filepath.Join(t.TempDir(), "tasks.db"), tasks.Options{})
	p := tasks.Principal{Subject: "s", Tenant: "t"}
	errs := make(chan error, 64)
	for range 64 {
		go func() {
			for range 20 {
				tk, err := m.Create(t.Context(), tasks.NewTask{Owner: p, ToolName: "x"})
				if err == nil {
					_, err = m.Get(t.Context(), p, tk.ID) // readable on another connection at once
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 64 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := m.DB().QueryRow(`SELECT count(*) FROM tasks`).Scan(&n); err != nil || n != 64*20 {
		t.Fatalf("%d rows (%v), want %d", n, err, 64*20)
	}
}
