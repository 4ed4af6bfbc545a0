package postgres_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mcpgate/mcpgate/postgres"
	mcpstore "github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/tasks"
)

func TestOpenStore(t *testing.T) {
	dsn := testDSN(t)
	schema := newSchema(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	if u.User == nil {
		u.User = url.User("mcpgate")
	}
	secret := "pw-" + schema
	withPassword := *u
	if pw, ok := u.User.Password(); ok {
		secret = pw
	} else {
		withPassword.User = url.UserPassword(u.User.Username(), secret)
	}

	backends := mcpstore.Openers{"postgres": postgres.OpenStore, "postgresql": postgres.OpenStore}
	b, err := backends.Open(ctx, u.String(), mcpstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.Shared {
		t.Error("a PostgreSQL store is shared by replicas")
	}
	if strings.Contains(b.Location, ":"+secret+"@") || strings.Contains(b.Location, "?") || !strings.Contains(b.Location, u.Host) {
		t.Errorf("Location %q must name the server without the password or query", b.Location)
	}
	ch, stop := b.Publisher.Subscribe(ctx)
	defer stop()
	p := tasks.Principal{Subject: "alice"}
	var tk tasks.Task
	created := map[string]bool{}
	waitFor(t, "the listener", 10e9, func() bool {
		tk, err = b.Tasks.Create(ctx, tasks.NewTask{Owner: p, ToolName: "x"})
		if err != nil {
			t.Fatal(err)
		}
		created[tk.ID] = true
		for {
			select {
			case id := <-ch:
				if created[id] {
					return true
				}
			default:
				return false
			}
		}
	})
	if first, err := b.Replay.Use(ctx, "jti-"+tk.ID, tk.CreatedAt.Add(60e9)); err != nil || !first {
		t.Fatalf("replay first use: %v %v", first, err)
	}
	if first, _ := b.Replay.Use(ctx, "jti-"+tk.ID, tk.CreatedAt.Add(60e9)); first {
		t.Fatal("replay accepted a jti twice")
	}

	// A refused login is reported without the password.
	bad := withPassword
	bad.User = url.UserPassword(u.User.Username(), "wrong-"+secret)
	if _, err := backends.Open(context.Background(), strings.Replace(bad.String(), "postgres://", "postgresql://", 1), mcpstore.Options{}); err == nil {
		t.Log("the server accepted a wrong password (trust authentication); nothing to check")
	} else if strings.Contains(err.Error(), "wrong-"+secret) {
		t.Errorf("the error shows the password: %v", err)
	}
}
