// Package connecttest is the contract every [connect.Store] must meet: the
// memory, SQLite and PostgreSQL stores run the same [TestStore].
package connecttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/connect"
)

// TestStore runs the contract against stores made by open, each new and
// empty.
func TestStore(t *testing.T, open func(t *testing.T) connect.Store) {
	t.Run("PutGet", func(t *testing.T) { testPutGet(t, open(t)) })
	t.Run("Update", func(t *testing.T) { testUpdate(t, open(t)) })
	t.Run("Lease", func(t *testing.T) { testLease(t, open(t)) })
	t.Run("LeaseRace", func(t *testing.T) { testLeaseRace(t, open(t)) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, open(t)) })
	t.Run("List", func(t *testing.T) { testList(t, open(t)) })
}

var ctx = context.Background()

func record(k connect.Key, sealed string) connect.Record {
	return connect.Record{Key: k, Sealed: []byte(sealed), KeyID: "k1", Scopes: "openid pets:read",
		Expiry: time.Unix(1_900_000_000, 123_456_789), Refreshable: true}
}

func same(t *testing.T, got, want connect.Record) {
	t.Helper()
	if got.Key != want.Key || !bytes.Equal(got.Sealed, want.Sealed) || got.KeyID != want.KeyID || got.Scopes != want.Scopes ||
		!got.Expiry.Equal(want.Expiry) || got.Refreshable != want.Refreshable || got.Version != want.Version {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func testPutGet(t *testing.T, s connect.Store) {
	alice := connect.Key{API: "pets", Subject: "alice"}
	if _, err := s.Get(ctx, alice); !errors.Is(err, connect.ErrNoGrant) {
		t.Fatalf("Get of a missing grant: %v, want ErrNoGrant", err)
	}
	r := record(alice, "sealed-1")
	put, err := s.Put(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	r.Version = 1
	same(t, put, r)
	got, err := s.Get(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	same(t, got, r)
	if got.CreatedAt.IsZero() || !got.CreatedAt.Equal(got.UpdatedAt) {
		t.Errorf("new row: created %v, updated %v", got.CreatedAt, got.UpdatedAt)
	}
	// A new authorization replaces the row, keeps its creation time.
	r2 := record(alice, "sealed-2")
	r2.Expiry, r2.Refreshable = time.Time{}, false
	time.Sleep(2 * time.Millisecond)
	put2, err := s.Put(ctx, r2)
	if err != nil {
		t.Fatal(err)
	}
	r2.Version = 2
	same(t, put2, r2)
	got2, _ := s.Get(ctx, alice)
	same(t, got2, r2)
	if !got2.CreatedAt.Equal(got.CreatedAt) || !got2.UpdatedAt.After(got.UpdatedAt) {
		t.Errorf("replaced row: created %v (was %v), updated %v (was %v)", got2.CreatedAt, got.CreatedAt, got2.UpdatedAt, got.UpdatedAt)
	}
	// Keys differ by any field, with no ambiguity between them.
	for _, k := range []connect.Key{{API: "pets", Tenant: "t", Subject: "alice"}, {API: "pets", Subject: "alice/"}, {API: "pets/alice"}, {API: "pets", Subject: "ålice ✓"}} {
		if _, err := s.Get(ctx, k); !errors.Is(err, connect.ErrNoGrant) {
			t.Errorf("Get(%+v) = %v, want ErrNoGrant", k, err)
		}
		if _, err := s.Put(ctx, record(k, "x")); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get(ctx, k); err != nil || got.Key != k || got.Version != 1 {
			t.Errorf("Get(%+v) = %+v, %v", k, got, err)
		}
	}
	if got, _ := s.Get(ctx, alice); got.Version != 2 {
		t.Errorf("alice's row changed by other keys' writes: version %d", got.Version)
	}
}

func testUpdate(t *testing.T, s connect.Store) {
	k := connect.Key{API: "pets", Tenant: "acme", Subject: "bob"}
	if ok, err := s.Update(ctx, record(k, "x")); err != nil || ok {
		t.Fatalf("Update of a missing row = %v, %v", ok, err)
	}
	put, _ := s.Put(ctx, record(k, "v1"))
	next := record(k, "v2")
	next.Version = put.Version + 1 // stale guess
	if ok, err := s.Update(ctx, next); err != nil || ok {
		t.Fatalf("Update at a wrong version = %v, %v", ok, err)
	}
	next.Version = put.Version
	if ok, err := s.Update(ctx, next); err != nil || !ok {
		t.Fatalf("Update at the current version = %v, %v", ok, err)
	}
	got, _ := s.Get(ctx, k)
	next.Version = put.Version + 1
	same(t, got, next)
	if !got.CreatedAt.Equal(put.CreatedAt) {
		t.Errorf("Update changed CreatedAt: %v, was %v", got.CreatedAt, put.CreatedAt)
	}
	// The same version does not update twice.
	next.Version = put.Version
	if ok, _ := s.Update(ctx, next); ok {
		t.Error("a second Update at the old version succeeded")
	}
}

func testLease(t *testing.T, s connect.Store) {
	k := connect.Key{API: "pets", Subject: "carol"}
	now := time.Unix(1_800_000_000, 0)
	if ok, err := s.Lease(ctx, k, 1, now.Add(time.Minute), now); err != nil || ok {
		t.Fatalf("Lease of a missing row = %v, %v", ok, err)
	}
	put, _ := s.Put(ctx, record(k, "v1"))
	if ok, _ := s.Lease(ctx, k, put.Version+1, now.Add(time.Minute), now); ok {
		t.Error("Lease at a wrong version succeeded")
	}
	if ok, err := s.Lease(ctx, k, put.Version, now.Add(time.Minute), now); err != nil || !ok {
		t.Fatalf("first Lease = %v, %v", ok, err)
	}
	if ok, _ := s.Lease(ctx, k, put.Version, now.Add(2*time.Minute), now.Add(59*time.Second)); ok {
		t.Error("a second Lease while the first holds succeeded")
	}
	if ok, _ := s.Lease(ctx, k, put.Version, now.Add(3*time.Minute), now.Add(time.Minute)); !ok {
		t.Error("Lease after the first lapsed failed")
	}
	// Update and Put clear the lease.
	next := record(k, "v2")
	next.Version = put.Version
	if ok, _ := s.Update(ctx, next); !ok {
		t.Fatal("Update under a lease failed")
	}
	if ok, _ := s.Lease(ctx, k, put.Version+1, now.Add(4*time.Minute), now.Add(time.Minute)); !ok {
		t.Error("Lease after Update failed: the lease was not cleared")
	}
	p2, _ := s.Put(ctx, record(k, "v3"))
	if ok, _ := s.Lease(ctx, k, p2.Version, now.Add(5*time.Minute), now.Add(time.Minute)); !ok {
		t.Error("Lease after Put failed: the lease was not cleared")
	}
}

func testLeaseRace(t *testing.T, s connect.Store) {
	k := connect.Key{API: "pets", Subject: "dave"}
	put, _ := s.Put(ctx, record(k, "v1"))
	now := time.Unix(1_800_000_000, 0)
	const n = 16
	var wg sync.WaitGroup
	wins := make(chan bool, n)
	for range n {
		wg.Go(func() {
			ok, err := s.Lease(ctx, k, put.Version, now.Add(time.Minute), now)
			if err != nil {
				t.Error(err)
			}
			wins <- ok
		})
	}
	wg.Wait()
	close(wins)
	won := 0
	for ok := range wins {
		if ok {
			won++
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent leases won, want exactly 1", won, n)
	}
}

func testDelete(t *testing.T, s connect.Store) {
	k := connect.Key{API: "pets", Subject: "erin"}
	if ok, err := s.Delete(ctx, k, 0); err != nil || ok {
		t.Fatalf("Delete of a missing row = %v, %v", ok, err)
	}
	put, _ := s.Put(ctx, record(k, "v1"))
	if ok, _ := s.Delete(ctx, k, put.Version+1); ok {
		t.Error("Delete at a wrong version succeeded")
	}
	if ok, err := s.Delete(ctx, k, put.Version); err != nil || !ok {
		t.Fatalf("Delete at the version = %v, %v", ok, err)
	}
	if _, err := s.Get(ctx, k); !errors.Is(err, connect.ErrNoGrant) {
		t.Errorf("Get after Delete: %v", err)
	}
	s.Put(ctx, record(k, "v2"))
	if ok, _ := s.Delete(ctx, k, 0); !ok {
		t.Error("Delete of any version failed")
	}
}

func testList(t *testing.T, s connect.Store) {
	keys := []connect.Key{
		{API: "slack", Subject: "bob"},
		{API: "pets", Tenant: "acme", Subject: "alice"},
		{API: "pets", Subject: "bob"},
		{API: "pets", Subject: "alice"},
	}
	for _, k := range keys {
		if _, err := s.Put(ctx, record(k, "secret-"+k.Subject)); err != nil {
			t.Fatal(err)
		}
	}
	str := func(rs []connect.Record) string {
		out := ""
		for _, r := range rs {
			out += fmt.Sprintf("%s/%s/%s ", r.Key.API, r.Key.Tenant, r.Key.Subject)
			if r.Sealed != nil {
				t.Errorf("List returned the sealed tokens of %+v", r.Key)
			}
			if r.Version != 1 || r.KeyID != "k1" || r.CreatedAt.IsZero() {
				t.Errorf("List row %+v lacks its metadata", r)
			}
		}
		return out
	}
	tests := []struct {
		f    connect.Filter
		want string
	}{
		{connect.Filter{}, "pets//alice pets//bob pets/acme/alice slack//bob "},
		{connect.Filter{API: "pets"}, "pets//alice pets//bob pets/acme/alice "},
		{connect.Filter{Subject: "bob"}, "pets//bob slack//bob "},
		{connect.Filter{Tenant: "acme"}, "pets/acme/alice "},
		{connect.Filter{API: "pets", Subject: "alice", Tenant: "acme"}, "pets/acme/alice "},
		{connect.Filter{API: "github"}, ""},
		{connect.Filter{Limit: 2}, "pets//alice pets//bob "},
	}
	for _, tt := range tests {
		got, err := s.List(ctx, tt.f)
		if err != nil {
			t.Fatal(err)
		}
		if s := str(got); s != tt.want {
			t.Errorf("List(%+v) = %q, want %q", tt.f, s, tt.want)
		}
	}
}
