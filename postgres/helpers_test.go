package postgres_test

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpgate/mcpgate/postgres"
)

// envDSN names the variable that holds the test database's DSN.
const envDSN = "MCPGATE_TEST_POSTGRES"

// testDSN returns the DSN of the test database. Without one the test is
// skipped, except in CI (env CI non-empty), where it fails.
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(envDSN)
	if dsn == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set, and CI must run the PostgreSQL tests: eval \"$(scripts/postgres.sh)\"", envDSN)
		}
		t.Skipf("%s is not set: run eval \"$(scripts/postgres.sh)\" to test against PostgreSQL", envDSN)
	}
	return dsn
}

// newSchema returns the name of a fresh schema (created by the first Open)
// that is dropped when the test ends.
func newSchema(t testing.TB) string {
	t.Helper()
	return dropAtEnd(t, "t_"+strings.ToLower(rand.Text()[:16]))
}

// dropAtEnd drops schema name when the test ends and returns name.
func dropAtEnd(t testing.TB, name string) string {
	t.Helper()
	dsn := testDSN(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// open opens a manager on schema, closed when the test ends.
func open(t testing.TB, schema string, o postgres.Options) *postgres.Manager {
	t.Helper()
	o.Schema = schema
	if o.MaxConns == 0 {
		o.MaxConns = 4
	}
	m, err := postgres.Open(context.Background(), testDSN(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
