// Package audittest is the contract test of an [audit.Store]: package
// sqlite and package postgres run it against their audit tables.
package audittest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/audit"
)

// Run tests the store that open returns (a fresh, empty one per call).
func Run(t *testing.T, open func(t *testing.T) audit.Store) {
	t.Run("WriteList", func(t *testing.T) { testWriteList(t, open(t)) })
	t.Run("Filters", func(t *testing.T) { testFilters(t, open(t)) })
	t.Run("Sweep", func(t *testing.T) { testSweep(t, open(t)) })
}

var base = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

// records makes n tools/call records a second apart, alternating between
// two subjects, two tools and the outcomes.
func records(n int) []audit.Record {
	outcomes := []audit.Outcome{audit.OK, audit.ToolError, audit.RPCError, audit.Refused}
	rs := make([]audit.Record, n)
	for i := range rs {
		rs[i] = audit.Record{
			Time: base.Add(time.Duration(i) * time.Second), Kind: audit.KindToolCall, Replica: "r1",
			Subject: []string{"alice", "bob"}[i%2], API: "petstore", Tool: []string{"getPet", "createPet"}[i/2%2],
			Method: "GET", Path: "/pets/{petId}", ArgumentsSHA256: fmt.Sprint("digest", i),
			HTTPStatus: 200, Outcome: outcomes[i%4], DurationMS: 1.25,
		}
		if rs[i].Outcome == audit.RPCError {
			rs[i].RPCError = &audit.RPCErr{Code: -32602, Message: "bad"}
		}
	}
	return rs
}

func testWriteList(t *testing.T, s audit.Store) {
	ctx := context.Background()
	rs := records(10)
	rs[3].Arguments = json.RawMessage(`{"petId":3}`)
	rs[3].Confirmation = &audit.Confirmation{Asked: "Delete pet 3?", Answer: "accept"}
	rs[4].Kind, rs[4].TaskID, rs[4].TaskStatus = audit.KindTask, "t-1", "completed"
	if err := s.Write(ctx, rs[:6]); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, rs[6:]); err != nil {
		t.Fatal(err)
	}
	got, err := s.List(ctx, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 {
		t.Fatalf("listed %d records, want 10", len(got))
	}
	for i, r := range got {
		want := rs[9-i] // newest first
		gj, _ := json.Marshal(r)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			t.Fatalf("record %d:\n got %s\nwant %s", i, gj, wj)
		}
	}
}

func testFilters(t *testing.T, s audit.Store) {
	ctx := context.Background()
	if err := s.Write(ctx, records(40)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		f    audit.Filter
		want int
	}{
		{audit.Filter{Subject: "alice"}, 20},
		{audit.Filter{Tool: "createPet"}, 20},
		{audit.Filter{Subject: "bob", Tool: "getPet"}, 10},
		{audit.Filter{Outcome: audit.RPCError}, 10},
		{audit.Filter{Since: base.Add(30 * time.Second)}, 10},
		{audit.Filter{Until: base.Add(5 * time.Second)}, 5},
		{audit.Filter{Since: base.Add(10 * time.Second), Until: base.Add(20 * time.Second), Subject: "alice"}, 5},
		{audit.Filter{Limit: 7}, 7},
		{audit.Filter{Kind: audit.KindTask}, 0},
		{audit.Filter{Subject: "nobody"}, 0},
	}
	for _, tt := range tests {
		got, err := s.List(ctx, tt.f)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tt.want {
			t.Errorf("%+v: %d records, want %d", tt.f, len(got), tt.want)
		}
		for i, r := range got {
			if !tt.f.Match(&r) {
				t.Errorf("%+v: listed a record it does not match: %+v", tt.f, r)
			}
			if i > 0 && r.Time.After(got[i-1].Time) {
				t.Errorf("%+v: not newest first", tt.f)
			}
		}
	}
}

func testSweep(t *testing.T, s audit.Store) {
	ctx := context.Background()
	if err := s.Write(ctx, records(30)); err != nil {
		t.Fatal(err)
	}
	n, err := s.Sweep(ctx, base.Add(20*time.Second))
	if err != nil || n != 20 {
		t.Fatalf("swept %d (%v), want 20", n, err)
	}
	got, err := s.List(ctx, audit.Filter{})
	if err != nil || len(got) != 10 || got[len(got)-1].Time.Before(base.Add(20*time.Second)) {
		t.Fatalf("after the sweep: %d records (%v)", len(got), err)
	}
	if n, err := s.Sweep(ctx, base.Add(20*time.Second)); err != nil || n != 0 {
		t.Fatalf("second sweep: %d (%v)", n, err)
	}
}
