package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/store"
)

// auditRecords are four records, oldest first, spread over two hours.
func auditRecords(now time.Time) []audit.Record {
	rec := func(ago time.Duration, subject, tool string, outcome audit.Outcome) audit.Record {
		return audit.Record{Time: now.Add(-ago).UTC(), Kind: audit.KindToolCall, Subject: subject, API: "pets", Tool: tool,
			Method: "GET", Path: "/pets/{id}", Outcome: outcome, DurationMS: 1.5, Replica: "r1"}
	}
	return []audit.Record{
		rec(2*time.Hour, "alice", "getPet", audit.OK),
		rec(30*time.Minute, "bob", "deletePet", audit.Refused),
		rec(10*time.Minute, "alice", "deletePet", audit.InputRequired),
		rec(time.Minute, "alice", "getPet", audit.ToolError),
	}
}

// writeAuditStore writes records into a new SQLite store's audit table
// through the backends serve uses.
func writeAuditStore(t *testing.T, path string, recs []audit.Record) {
	t.Helper()
	ctx := context.Background()
	b, err := gateway.StoreBackends().Open(ctx, "sqlite:"+path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	st, err := b.Audit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
}

func writeAuditFile(t *testing.T, path string, recs []audit.Record) {
	t.Helper()
	f, err := audit.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Write(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// listed runs mcpgate audit --format json and returns the records'
// "subject tool outcome", in the order printed.
func listed(t *testing.T, args ...string) []string {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"audit", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("mcpgate audit %v: exit %d: %s", args, code, errOut)
	}
	var got []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("not a JSON record: %q: %v", sc.Text(), err)
		}
		got = append(got, r.Subject+" "+r.Tool+" "+string(r.Outcome))
	}
	return got
}

// TestAuditList: mcpgate audit lists a store's and a file's records
// newest first, with every filter, and finds them through serve's own
// settings file.
func TestAuditList(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	db, file := filepath.Join(dir, "mcpgate.db"), filepath.Join(dir, "audit.jsonl")
	writeAuditStore(t, db, auditRecords(now))
	writeAuditFile(t, file, auditRecords(now))
	storeCfg := writeFile(t, dir, "store.yaml", "store: sqlite:"+db+"\naudit: {sink: store}\n")
	fileCfg := writeFile(t, dir, "file.yaml", "store: sqlite:"+filepath.Join(dir, "other.db")+"\naudit: {sink: \"file:"+file+"\"}\n")

	all := []string{"alice getPet tool_error", "alice deletePet input_required", "bob deletePet refused", "alice getPet ok"}
	filters := []struct {
		args []string
		want []string
	}{
		{nil, all},
		{[]string{"--subject", "alice"}, []string{all[0], all[1], all[3]}},
		{[]string{"--tool", "deletePet"}, []string{all[1], all[2]}},
		{[]string{"--outcome", "refused"}, []string{all[2]}},
		{[]string{"--since", "1h"}, all[:3]},
		{[]string{"--since", "1h", "--until", "5m"}, all[1:3]},
		{[]string{"--since", now.Add(-15 * time.Minute).UTC().Format(time.RFC3339)}, all[:2]},
		{[]string{"--limit", "2"}, all[:2]},
		{[]string{"--kind", "task"}, nil},
		{[]string{"--subject", "alice", "--tool", "getPet", "--since", "1h"}, all[:1]},
	}
	// Every filter on both readers (the store's query, the file's scan);
	// the other ways of naming them with two filters each.
	sources := []struct {
		name    string
		args    []string
		filters int
	}{
		{"store", []string{"--store", "sqlite:" + db}, len(filters)},
		{"file", []string{"--file", file}, len(filters)},
		{"store config", []string{"--config", storeCfg}, 2},
		{"file config", []string{"--config", fileCfg}, 2},
		{"sink flag", []string{"--audit-sink", "file:" + file}, 2},
	}
	for _, src := range sources {
		for _, f := range filters[:src.filters] {
			if got := listed(t, append(slices.Clone(src.args), f.args...)...); !slices.Equal(got, f.want) {
				t.Errorf("%s %v: got %q, want %q", src.name, f.args, got, f.want)
			}
		}
	}
	t.Run("Text", func(t *testing.T) {
		code, out, errOut := runCLI(t, "audit", "--store", "sqlite:"+db, "--tool", "deletePet")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "TIME") ||
			!strings.Contains(lines[1], "pets/deletePet") || !strings.Contains(lines[2], "refused") {
			t.Fatalf("exit %d: %s\n%s", code, out, errOut)
		}
	})
}

// TestAuditErrors: a bad invocation or an unreadable source is one line
// naming the problem, with exit 2 for usage and 1 otherwise.
func TestAuditErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.jsonl", `{"time":"2026-01-01T00:00:00Z","kind":"tools/call","outcome":"ok"}`+"\nnot json\n")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--since", "yesterday"}, 2, `--since "yesterday": want a duration`},
		{[]string{"--since=-1h"}, 2, "must be positive"},
		{[]string{"--since", "1h", "--until", "2h"}, 2, "is not before"},
		{[]string{"--limit", "0"}, 2, "--limit 0"},
		{[]string{"--outcome", "fine"}, 2, "--outcome must be one of"},
		{[]string{"--audit-sink", "stdout"}, 2, "standard output"},
		{[]string{"--audit-sink", "syslog"}, 2, `--audit-sink "syslog"`},
		{[]string{"--store", "memory"}, 1, "keeps no audit records"},
		{[]string{"--store", "sqlite:" + filepath.Join(dir, "none.db")}, 1, "no such database"},
		{[]string{"--file", bad}, 1, bad + ":2: not an audit record"},
		{[]string{"--file", filepath.Join(dir, "missing.jsonl")}, 1, "missing.jsonl"},
	}
	for _, c := range cases {
		code, out, errOut := runCLI(t, append([]string{"audit"}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || out != "" {
			t.Errorf("audit %v: exit %d, stderr %q, stdout %q; want exit %d and one line with %q", c.args, code, errOut, out, c.code, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "none.db")); !os.IsNotExist(err) {
		t.Errorf("listing a missing store created it (%v)", err)
	}
}
