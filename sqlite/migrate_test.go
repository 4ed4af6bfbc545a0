package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/tasks"
)

// A database written by a build of schema version 1 is migrated in place:
// its tasks stay readable, with no stage, and take the new columns.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range append([]string{`CREATE TABLE schema_version (version INTEGER NOT NULL)`,
		`INSERT INTO schema_version (version) VALUES (1)`}, migrations[0]...) {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO tasks (id, subject, tenant, tool, status, status_message, created_at, updated_at,
		ttl_ns, expires_at, poll_ns, params, result, error, input_requests, input_responses, cancel_requested, idempotent,
		lease_owner, lease_token, lease_expires_at, version)
		VALUES ('old', 'alice', '', 'x', 'working', '', 1, 1, 0, NULL, 0, '{}', NULL, NULL, NULL, NULL, 0, 1, 'dead', 3, 5, 4)`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	m, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p := tasks.Principal{Subject: "alice"}
	old, err := m.Get(ctx, p, "old")
	if err != nil || old.Stage != tasks.StageNone || old.Checkpoint != nil || old.Secret != nil || old.LeaseToken != 3 || !old.Idempotent {
		t.Fatalf("the version-1 task after migrating: %+v %v", old, err)
	}
	c, err := m.Claim(ctx, tasks.Claim{TaskID: "old", Owner: "w", Token: 3, For: 60e9})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Checkpoint(ctx, c.Lease(), tasks.StageResumable, []byte(`{"at":1}`)); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := m.DB().QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil || v != SchemaVersion() {
		t.Fatalf("schema version %d (%v), want %d", v, err, SchemaVersion())
	}
	m.Close()
	// Opening again migrates nothing and keeps everything.
	m2, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m2.Get(ctx, p, "old")
	if err != nil || got.Stage != tasks.StageResumable || string(got.Checkpoint) != `{"at":1}` {
		t.Fatalf("after reopening: %+v %v", got, err)
	}
	// A database from a newer build is refused.
	if _, err := m2.DB().Exec(`UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	m2.Close()
	if _, err := Open(ctx, path, Options{}); err == nil || !strings.Contains(err.Error(), "newer than this build") {
		t.Fatalf("open of a newer schema: %v", err)
	}
}
