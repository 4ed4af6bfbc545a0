package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/mcp"
)

type otherKey struct{}

func TestPrincipalContext(t *testing.T) {
	alice := mcp.Principal{Subject: "alice", Tenant: "acme", Scopes: []string{"read"}, Claims: map[string]any{"email": "alice@example.com"}, Credential: mcp.NewSecret("tok-alice")}
	bob := mcp.Principal{Subject: "bob"}
	base := context.WithValue(context.Background(), otherKey{}, "under")
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want mcp.Principal
	}{
		{"none", context.Background(), mcp.Principal{}},
		{"set", mcp.WithPrincipal(base, alice), alice},
		{"inner shadows outer", mcp.WithPrincipal(mcp.WithPrincipal(base, alice), bob), bob},
		{"under another value", context.WithValue(mcp.WithPrincipal(base, alice), otherKey{}, "over"), alice},
		{"under a cancel", func() context.Context {
			ctx, cancel := context.WithCancel(mcp.WithPrincipal(base, alice))
			t.Cleanup(cancel)
			return ctx
		}(), alice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mcp.PrincipalFrom(tc.ctx); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PrincipalFrom = %+v, want %+v", got, tc.want)
			}
		})
	}
	// Other values, cancellation, causes and deadlines pass through.
	parent, cancel := context.WithCancelCause(base)
	parent, stop := context.WithTimeout(parent, time.Hour)
	defer stop()
	ctx := mcp.WithPrincipal(parent, alice)
	if ctx.Value(otherKey{}) != "under" {
		t.Errorf("value under the principal: %v", ctx.Value(otherKey{}))
	}
	if d, ok := ctx.Deadline(); !ok || time.Until(d) < 59*time.Minute {
		t.Errorf("deadline %v %v", d, ok)
	}
	child, childCancel := context.WithCancel(ctx)
	defer childCancel()
	why := errors.New("client left")
	cancel(why)
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("cancelling the parent did not reach a child of the principal's context")
	}
	if !errors.Is(context.Cause(child), why) || !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("cause %v, err %v", context.Cause(child), ctx.Err())
	}
	// Printing the context names no part of the principal.
	for _, s := range []string{fmt.Sprint(ctx), fmt.Sprintf("%+v", ctx), fmt.Sprintf("%#v", child)} {
		for _, secret := range []string{"alice", "acme", "tok-alice", "example.com"} {
			if strings.Contains(s, secret) {
				t.Errorf("printed context %q shows %q", s, secret)
			}
		}
	}
}

// withPrincipal keeps the compiler from placing the context on the
// benchmark's stack: a middleware's context always reaches the heap.
//
//go:noinline
func withPrincipal(ctx context.Context, p mcp.Principal) context.Context {
	return mcp.WithPrincipal(ctx, p)
}

// BenchmarkWithPrincipal is what an authentication middleware and the
// server's admission pay per request for the caller's principal.
func BenchmarkWithPrincipal(b *testing.B) {
	p := mcp.Principal{Subject: "alice", Scopes: []string{"read"}, Credential: mcp.NewSecret("tok")}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if mcp.PrincipalFrom(withPrincipal(ctx, p)).Subject != "alice" {
			b.Fatal("lost the principal")
		}
	}
}
