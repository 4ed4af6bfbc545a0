package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/sqlite"
)

// sealedMarker stands for sealed token bytes: it must never be printed.
const sealedMarker = "SEALED-TOKENS-NEVER-PRINTED"

// grantStore makes a SQLite store at a new path holding recs, and returns
// its --store location.
func grantStore(t *testing.T, recs ...connect.Record) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "mcpgate.db")
	m, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := sqlite.NewGrantStore(ctx, m.DB(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.Sealed = []byte(sealedMarker)
		if _, err := s.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return "sqlite:" + path
}

var (
	aliceGrant = connect.Record{Key: connect.Key{API: "pets", Tenant: "acme", Subject: "alice"}, KeyID: "k1",
		Scopes: "openid pets:read", Expiry: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), Refreshable: true}
	bobGrant = connect.Record{Key: connect.Key{API: "pets", Subject: "bearer:b0b"}, KeyID: "k1",
		Expiry: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)}
	carolGrant = connect.Record{Key: connect.Key{API: "github", Subject: "carol"}, KeyID: "k0", Scopes: "repo"}
)

func TestGrantsList(t *testing.T) {
	store := grantStore(t, aliceGrant, bobGrant, carolGrant)
	code, out, errOut := runCLI(t, "grants", "list", "--store", store)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "API ") {
		t.Fatalf("want a header and 3 rows, got:\n%s", out)
	}
	// Ordered by API, tenant, subject; what each row says.
	for i, want := range [][]string{
		{"github", "-", "carol", "repo", "unknown", "no", "k0"},
		{"pets", "-", "bearer:b0b", "-", "2001-01-01T00:00:00Z (expired)", "no", "k1"},
		{"pets", "acme", "alice", "openid pets:read", "2030-01-02T03:04:05Z", "yes", "k1"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Errorf("row %d %q lacks %q", i+1, lines[i+1], w)
			}
		}
	}
	if strings.Contains(out+errOut, sealedMarker) {
		t.Fatal("the sealed tokens were printed")
	}
	if errOut != "" {
		t.Errorf("listing wrote to stderr: %s", errOut)
	}

	code, out, errOut = runCLI(t, "grants", "list", "--store", store, "--api", "pets", "--format", "json")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if len(rows) != 2 || rows[1]["subject"] != "alice" || rows[1]["tenant"] != "acme" || rows[1]["expiry"] != "2030-01-02T03:04:05Z" ||
		rows[1]["refreshable"] != true || rows[1]["scopes"] != "openid pets:read" || rows[0]["subject"] != "bearer:b0b" {
		t.Fatalf("json rows: %v", rows)
	}
	if strings.Contains(out, sealedMarker) || rows[0]["sealed"] != nil {
		t.Fatal("the sealed tokens were printed")
	}

	for _, tc := range []struct {
		args []string
		want int // rows
	}{
		{[]string{"--subject", "alice"}, 1},
		{[]string{"--tenant", "acme"}, 1},
		{[]string{"--api", "slack"}, 0},
		{[]string{"--limit", "2"}, 2},
	} {
		code, out, errOut := runCLI(t, append([]string{"grants", "list", "--store", store, "--format", "json"}, tc.args...)...)
		var rows []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != tc.want {
			t.Errorf("list %v: exit %d, %d rows, want %d: %s%s", tc.args, code, len(rows), tc.want, out, errOut)
		}
	}
	if code, out, _ := runCLI(t, "grants", "list", "--store", grantStore(t)); code != 0 || strings.TrimSpace(out) != "no grants" {
		t.Errorf("empty store: exit %d: %q", code, out)
	}
}

func TestGrantsRevoke(t *testing.T) {
	store := grantStore(t, aliceGrant, bobGrant)
	code, out, errOut := runCLI(t, "grants", "revoke", "--store", store, "--api", "pets", "--tenant", "acme", "--subject", "alice")
	if code != 0 || !strings.Contains(out, `revoked the grant of subject "alice" to API "pets" in tenant "acme"`) {
		t.Fatalf("revoke: exit %d: %s%s", code, out, errOut)
	}
	_, out, _ = runCLI(t, "grants", "list", "--store", store)
	if strings.Contains(out, "alice") || !strings.Contains(out, "bearer:b0b") {
		t.Fatalf("after revoking alice's grant:\n%s", out)
	}
	// The same key again, and a key that only resembles one: nothing to revoke.
	for _, args := range [][]string{
		{"--api", "pets", "--tenant", "acme", "--subject", "alice"},
		{"--api", "pets", "--subject", "bearer:b0"},
		{"--api", "github", "--subject", "bearer:b0b"},
	} {
		code, _, errOut := runCLI(t, append([]string{"grants", "revoke", "--store", store}, args...)...)
		if code != 1 || !strings.Contains(errOut, "no grant of subject") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("revoke %v: exit %d, want 1 and one line: %s", args, code, errOut)
		}
	}
	if _, out, _ := runCLI(t, "grants", "list", "--store", store); !strings.Contains(out, "bearer:b0b") {
		t.Fatalf("a failed revoke deleted another grant:\n%s", out)
	}
}

func TestGrantsErrors(t *testing.T) {
	store := grantStore(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"grants", "revoke", "--store", store, "--api", "pets"}, 2, "--subject"},
		{[]string{"grants", "revoke", "--store", store, "--subject", "alice"}, 2, "--api"},
		{[]string{"grants", "list", "--store", store, "--format", "yaml"}, 2, "--format"},
		{[]string{"grants", "list", "--store", store, "--limit", "0"}, 2, "--limit 0"},
		{[]string{"grants", "list", "--store", "redis://cache"}, 1, `store "redis://cache"`},
		{[]string{"grants", "list", "--store", "sqlite:"}, 1, "no database path"},
		{[]string{"grants", "list", "--store", store, "--state-keys", "k1:short"}, 1, "state keys"},
		{[]string{"grants", "list", "--config", filepath.Join(t.TempDir(), "missing.yaml")}, 1, "missing.yaml"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, want %d and %q: %s", tc.args[1:], code, tc.code, tc.want, errOut)
		}
	}
}

// oauthPets is an API whose document declares an oauth2 authorization
// code flow.
const oauthPets = `openapi: 3.0.3
info: {title: Pets, version: "1"}
components:
  securitySchemes:
    petsAuth:
      type: oauth2
      flows:
        authorizationCode:
          authorizationUrl: http://127.0.0.1:1/auth
          tokenUrl: http://127.0.0.1:1/token
          scopes: {pets:read: read}
security: [{petsAuth: [pets:read]}]
paths:
  /pets:
    get:
      operationId: listPets
      responses: {"200": {description: ok}}
`

// TestGrantsRevokeWithConfig: with serve's settings file, revoke builds the
// API's OAuth client as serve does; a grant the state keys do not open is
// deleted, the revocation endpoint is not called with anything, and the
// operator is told.
func TestGrantsRevokeWithConfig(t *testing.T) {
	var revocations atomic.Int32
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { revocations.Add(1) }))
	defer as.Close()
	dir := t.TempDir()
	store := grantStore(t, connect.Record{Key: connect.Key{API: "api", Subject: "alice"}, KeyID: "k1"})
	spec := writeFile(t, dir, "pets.yaml", oauthPets)
	config := writeFile(t, dir, "mcpgate.yaml", `spec: `+spec+`
upstream: http://127.0.0.1:1
store: `+store+`
state_keys: "k1:`+strings.Repeat("A", 43)+`="
connect: {base_url: "http://127.0.0.1:8080"}
credentials:
  mode: oauth
  oauth: {client_id: mcpgate, client_secret: s3cret, revocation_url: "`+as.URL+`/revoke"}
`)
	code, out, errOut := runCLI(t, "grants", "revoke", "--config", config, "--api", "api", "--subject", "alice")
	if code != 0 || !strings.Contains(out, "revoked the grant") {
		t.Fatalf("revoke: exit %d: %s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "not revoked at the API: the state keys do not open it") || strings.Contains(errOut, "s3cret") {
		t.Errorf("stderr: %s", errOut)
	}
	if n := revocations.Load(); n != 0 {
		t.Errorf("the revocation endpoint was called %d times for a grant that does not open", n)
	}
	if _, out, _ := runCLI(t, "grants", "list", "--config", config); strings.TrimSpace(out) != "no grants" {
		t.Errorf("after revoke:\n%s", out)
	}
	// A configuration serve would refuse is refused here too.
	bad := writeFile(t, dir, "bad.yaml", `spec: `+spec+`
upstream: http://127.0.0.1:1
store: `+store+`
credentials: {mode: oauth, oauth: {client_id: mcpgate}}
`)
	if code, _, errOut := runCLI(t, "grants", "list", "--config", bad); code != 1 || !strings.Contains(errOut, "connect.base_url") {
		t.Errorf("config without connect.base_url: exit %d: %s", code, errOut)
	}
}
