package postgres

import (
	"context"
	"fmt"
	"net/url"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/quota"
	"github.com/mcpgate/mcpgate/store"
)

// OpenStore is the [store.Opener] of locations "postgres://…" and
// "postgresql://…" (any DSN pgx accepts in URL form): the task manager,
// the replay cache and the LISTEN/NOTIFY publisher on one database, which
// any number of replicas share.
func OpenStore(ctx context.Context, location string, o store.Options) (*store.Backend, error) {
	where := redact(location)
	m, err := Open(ctx, location, Options{Options: o.TaskOptions(nil)})
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", where, err)
	}
	pub, err := NewPublisher(m, PublisherOptions{Logger: o.Log()})
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("store %s: %w", where, err)
	}
	return &store.Backend{
		Tasks:     m,
		Replay:    NewReplayCache(m, ReplayOptions{Now: o.Now}),
		Publisher: pub,
		Shared:    true,
		Location:  where,
		CloseFunc: func() error { err := pub.Close(); m.Close(); return err },
		Audit:     func(ctx context.Context) (audit.Store, error) { return NewAuditStore(ctx, m.Pool()) },
		Quotas:    func(ctx context.Context) (quota.Bank, error) { return NewQuotaBank(ctx, m.Pool()) },
		Grants:    func(ctx context.Context) (connect.Store, error) { return NewGrantStore(ctx, m.Pool(), o.Now) },
		Signals:   NewSignals(m, "tools", o.Log()),
	}, nil
}

// redact returns a DSN URL without its password and query (which may carry
// one), for logs and errors.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres (unparsable URL)"
	}
	u.RawQuery, u.Fragment = "", ""
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	return u.String()
}
