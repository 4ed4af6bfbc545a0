// Package store is the seam between mcpgate's core and the places it keeps
// durable state. A backend opens from a location URL and returns one
// [Backend] holding everything the core needs from it: the task authority,
// the replay cache of sealed request states, the publisher of task changes,
// whether replicas share it, and how to close it.
//
// Backends are chosen by the location's scheme through an [Openers] table
// that the composition root builds from the backend packages it links in
// (the model is Litestream's: a domain package at the root, one subpackage
// per backend, each with one constructor that returns the whole backend):
//
//	backends := store.Openers{
//		"sqlite":     sqlite.OpenStore,   // sqlite:PATH
//		"postgres":   postgres.OpenStore, // postgres://… (N replicas)
//		"postgresql": postgres.OpenStore,
//		"memory":     store.OpenMemory,   // memory (development only)
//	}
//	b, err := backends.Open(ctx, "sqlite:/var/lib/mcpgate/mcpgate.db", store.Options{})
//
// There is no package-level registry: the table is a value, so two
// gateways in one process may link different backends and a test may add a
// fake one.
//
// Invariants:
//
//   - An opened Backend has every part set (Tasks, Replay, Publisher); a
//     backend that cannot provide one fails to open. The optional parts
//     (Audit, Quotas, Grants) are opened by the features that use them.
//   - Location never contains a password: it is what the gateway logs.
//   - Close releases everything the backend opened, once; the parts stop
//     working afterwards.
//
// What joined the store after the task tables (audit records, quota
// buckets, OAuth grants, the signals of a reload) joined as a field of
// Backend, filled by each backend's opener, so the core never needs to know
// which backend it runs on; the next one joins the same way.
package store

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/mrtr"
	"github.com/mcpgate/mcpgate/quota"
	"github.com/mcpgate/mcpgate/tasks"
)

// Backend is one opened store: everything the core keeps durable state in.
type Backend struct {
	// Tasks is the task authority (client and worker sides).
	Tasks tasks.Manager
	// Replay accepts each sealed requestState id once.
	Replay mrtr.ReplayCache
	// Publisher carries the id of every changed task to this process's
	// listeners; with a Shared backend, to every replica's.
	Publisher tasks.Publisher
	// Shared reports whether processes on other machines may serve from
	// this backend at the same time (replicas behind a load balancer), so
	// that a task created on one is run, polled and cancelled through any.
	// Processes on one machine may share a non-shared file backend: its
	// leases keep them apart, but its notifications stay in each process.
	Shared bool
	// Location names the backend for logs and errors: a file path, or a URL
	// without its password and query.
	Location string

	// The optional parts, opened on first use by the features that need
	// them (each creates its table then): the audit table, the shared
	// quota bank (nil for a backend that no other replica shares: quotas
	// are then kept in memory) and the vault of users' OAuth grants.
	Audit  func(ctx context.Context) (audit.Store, error)
	Quotas func(ctx context.Context) (quota.Bank, error)
	Grants func(ctx context.Context) (connect.Store, error)
	// Signals carry short messages to every other process serving from
	// this backend (the version of a reloaded tool set); nil when the
	// backend has no such channel.
	Signals Signals
	// CloseFunc releases what the backend opened; nil when there is
	// nothing to release. Call [Backend.Close] rather than this.
	CloseFunc func() error

	closeOnce sync.Once
	closeErr  error
}

// Close releases the backend. It is safe to call more than once; later
// calls return the first call's error.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		if b.CloseFunc != nil {
			b.closeErr = b.CloseFunc()
		}
	})
	return b.closeErr
}

// Options are what every backend is opened with.
type Options struct {
	// Logger receives the backend's background errors (a dropped
	// connection, say); nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock of the stored times; nil means time.Now.
	Now func() time.Time
}

// Log returns o.Logger or slog.Default().
func (o Options) Log() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}

// TaskOptions are the tasks.Options a backend gives its manager: o's clock
// and the publisher pub (nil when the backend announces changes itself).
func (o Options) TaskOptions(pub tasks.Publisher) tasks.Options {
	return tasks.Options{Now: o.Now, Publisher: pub}
}

// An Opener opens one kind of backend from its location, the whole URL
// with its scheme ("sqlite:/var/lib/x.db", "postgres://db/mcpgate").
type Opener func(ctx context.Context, location string, o Options) (*Backend, error)

// Openers maps a location's scheme (lower case, without the colon) to the
// opener of its backend.
type Openers map[string]Opener

// Open opens the backend that location's scheme names. An unknown scheme is
// an error that lists the known ones.
func (t Openers) Open(ctx context.Context, location string, o Options) (*Backend, error) {
	scheme := Scheme(location)
	open, ok := t[scheme]
	if !ok {
		return nil, fmt.Errorf("store %q: no backend for %q (use %s)", location, scheme, t.usage())
	}
	b, err := open(ctx, location, o)
	if err != nil {
		return nil, err
	}
	if b == nil || b.Tasks == nil || b.Replay == nil || b.Publisher == nil {
		if b != nil {
			_ = b.Close()
		}
		return nil, fmt.Errorf("store %s: the %q backend returned an incomplete backend", scheme, scheme)
	}
	if b.Location == "" {
		b.Location = scheme
	}
	return b, nil
}

// usage lists the known schemes as location shapes.
func (t Openers) usage() string {
	if len(t) == 0 {
		return "no backend is linked in"
	}
	var shapes []string
	for s := range t {
		switch s {
		case "memory":
			shapes = append(shapes, "memory")
		case "postgres", "postgresql", "http", "https":
			shapes = append(shapes, s+"://…")
		default:
			shapes = append(shapes, s+":PATH")
		}
	}
	slices.Sort(shapes)
	return strings.Join(shapes, ", ")
}

// Scheme returns the scheme of a location: what precedes its first colon,
// in lower case, or the whole location when it has no colon (as "memory"
// has none).
func Scheme(location string) string {
	s, _, _ := strings.Cut(location, ":")
	return strings.ToLower(s)
}

// Signals carry short messages between the processes sharing a backend:
// best effort, every listening process (the sender too) receives each.
type Signals interface {
	Publish(ctx context.Context, msg string) error
	// Listen calls fn with every message until ctx ends.
	Listen(ctx context.Context, fn func(msg string))
}
