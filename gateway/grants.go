package gateway

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/internal/settings"
)

// OpenGrants opens what `mcpgate grants` works on, the way serve opens it:
// cfg's store (the same table of backends, the same state keys) with its
// grant table, and, when some API's credentials mode is oauth, the
// connector serve builds for those APIs (their documents are read for the
// oauth2 endpoints), whose Revoke also revokes a grant at the API's
// revocation endpoint. conn is nil when cfg names no such API (a bare
// --store lists grants without any API). closeFn releases the store.
func OpenGrants(ctx context.Context, cfg Config, logger *slog.Logger) (grants connect.Store, conn *connect.Connector, closeFn func() error, err error) {
	if logger == nil {
		logger = slog.Default()
	}
	var apis []APIConfig
	if cfg.Spec != "" || len(cfg.APIs) > 0 || cfg.Demo {
		if cfg, err = cfg.withDefaults(); err != nil {
			return nil, nil, nil, err
		}
		if apis, err = cfg.apiConfigs(); err != nil {
			return nil, nil, nil, err
		}
	} else if err = settings.ApplyDefaults(&cfg); err != nil {
		return nil, nil, nil, err
	} else if cfg.Store == "" {
		cfg.Store = "sqlite:" + defaultStorePath()
	}
	// Without state keys the ring is random: its warning speaks of paused
	// requests, which do not concern grants (a grant it cannot open is
	// reported by the connector's Revoke).
	g := newGateway(cfg, slog.New(slog.DiscardHandler))
	if g.ring, err = g.keyRing(); err != nil {
		return nil, nil, nil, err
	}
	g.logger = logger
	defer func() {
		if err != nil {
			g.Close()
		}
	}()
	if err = g.openStore(ctx); err != nil {
		return nil, nil, nil, err
	}
	if g.backend.Grants == nil {
		return nil, nil, nil, fmt.Errorf("the %s store keeps no grants", g.backend.Location)
	}
	if grants, err = g.backend.Grants(ctx); err != nil {
		return nil, nil, nil, err
	}
	var loaded []*api
	for _, c := range apis {
		if c.Credentials.Mode != "oauth" {
			continue
		}
		a, err := g.loadAPI(ctx, c)
		if err != nil {
			return nil, nil, nil, err
		}
		loaded = append(loaded, a)
		g.track(a)
	}
	if err = g.setupConnect(ctx, loaded); err != nil {
		return nil, nil, nil, err
	}
	return grants, g.conn, g.Close, nil
}
