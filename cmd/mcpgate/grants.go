package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpgate/mcpgate/connect"
	"github.com/mcpgate/mcpgate/gateway"
)

// grantsCmd is `mcpgate grants`: the users' own OAuth grants to the APIs
// (credentials mode oauth), in the store serve uses. It opens that store
// through gateway.OpenGrants, with serve's settings (--config, --store, the
// state keys), so it reads exactly what serve wrote.
type grantsCmd struct {
	List   grantsListCmd   `cmd:"" help:"List the stored grants: API, tenant, subject, scopes, expiry (never a token)."`
	Revoke grantsRevokeCmd `cmd:"" help:"Delete one user's grant, and revoke it at the API when the API has a revocation endpoint (credentials.oauth.revocation_url)."`
}

// Help is shown under grants and its subcommands (instead of serve's).
func (grantsCmd) Help() string       { return grantsHelp }
func (grantsListCmd) Help() string   { return grantsHelp }
func (grantsRevokeCmd) Help() string { return grantsHelp }

const grantsHelp = `The store, the state keys and the APIs come from serve's settings: --config, --store,
--state-keys or MCPGATE_STATE_KEYS (needed to revoke a grant at the API, whose tokens they seal).
Subjects are the callers' as the gateway names them: with auth mode oauth the token's sub claim,
otherwise "bearer:" and a keyed hash of the caller's token (mcpgate grants list shows them).`

type grantsListCmd struct {
	gatewayFlags
	API     string `name:"api" env:"-" help:"Only the grants to this API (the name of its apis entry; \"api\" for the single API)."`
	Tenant  string `name:"tenant" env:"-" help:"Only the grants of this tenant."`
	Subject string `name:"subject" env:"-" help:"Only the grants of this subject."`
	Limit   int    `name:"limit" env:"-" default:"1000" help:"At most this many grants."`
	Format  string `name:"format" env:"-" default:"text" enum:"text,json" help:"text (a table) or json (an array of objects)."`
}

type grantsRevokeCmd struct {
	gatewayFlags
	API     string `name:"api" env:"-" required:"" help:"The API of the grant (the name of its apis entry; \"api\" for the single API)."`
	Tenant  string `name:"tenant" env:"-" help:"The tenant of the grant's subject (empty without tenants)."`
	Subject string `name:"subject" env:"-" required:"" help:"The subject whose grant to delete, as mcpgate grants list shows it."`
}

// grantRow is one grant as `grants list --format json` prints it: the
// record's metadata, never its sealed tokens.
type grantRow struct {
	API         string    `json:"api"`
	Tenant      string    `json:"tenant,omitempty"`
	Subject     string    `json:"subject"`
	Scopes      string    `json:"scopes"`
	Expiry      time.Time `json:"expiry,omitzero"`
	Refreshable bool      `json:"refreshable"`
	KeyID       string    `json:"keyId"`
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
}

// Run lists the grants.
func (c *grantsListCmd) Run(ctx context.Context, io streams) error {
	if c.Limit < 1 {
		return usagef("--limit %d: must be at least 1", c.Limit)
	}
	// Listing opens no grant: the state keys' warnings would only mislead.
	grants, _, closeFn, err := c.open(ctx, io.stderr, slog.LevelError)
	if err != nil {
		return err
	}
	defer closeFn()
	recs, err := grants.List(ctx, connect.Filter{API: c.API, Tenant: c.Tenant, Subject: c.Subject, Limit: c.Limit})
	if err != nil {
		return fmt.Errorf("list grants: %w", err)
	}
	rows := make([]grantRow, len(recs))
	for i, r := range recs {
		rows[i] = grantRow{API: r.Key.API, Tenant: r.Key.Tenant, Subject: r.Key.Subject, Scopes: r.Scopes, Expiry: r.Expiry.UTC(),
			Refreshable: r.Refreshable, KeyID: r.KeyID, Created: r.CreatedAt.UTC(), Updated: r.UpdatedAt.UTC()}
	}
	if c.Format == "json" {
		enc := json.NewEncoder(io.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	return writeGrantTable(io.stdout, rows, time.Now())
}

// writeGrantTable prints rows as an aligned table, or a line saying there
// are none.
func writeGrantTable(w io.Writer, rows []grantRow, now time.Time) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no grants")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "API\tTENANT\tSUBJECT\tSCOPES\tEXPIRES\tREFRESH\tKEY\tUPDATED")
	for _, r := range rows {
		expires := "unknown"
		if !r.Expiry.IsZero() {
			expires = r.Expiry.Format(time.RFC3339)
			if !now.Before(r.Expiry) {
				expires += " (expired)"
			}
		}
		refresh := "no"
		if r.Refreshable {
			refresh = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.API, dash(r.Tenant), r.Subject, dash(r.Scopes), expires, refresh, r.KeyID, r.Updated.Format(time.RFC3339))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Run deletes one grant (revoking it at the API when it can).
func (c *grantsRevokeCmd) Run(ctx context.Context, io streams) error {
	grants, conn, closeFn, err := c.open(ctx, io.stderr, slog.LevelWarn)
	if err != nil {
		return err
	}
	defer closeFn()
	k := connect.Key{API: c.API, Tenant: c.Tenant, Subject: c.Subject}
	var had bool
	if conn != nil {
		had, err = conn.Revoke(ctx, k) // warns on stderr when the API refuses or cannot be told
	} else {
		had, err = grants.Delete(ctx, k, 0)
	}
	if err != nil {
		return fmt.Errorf("revoke the grant of %s: %w", describeKey(k), err)
	}
	if !had {
		return fmt.Errorf("no grant of %s (mcpgate grants list shows the stored ones)", describeKey(k))
	}
	_, err = fmt.Fprintf(io.stdout, "revoked the grant of %s\n", describeKey(k))
	return err
}

func describeKey(k connect.Key) string {
	s := fmt.Sprintf("subject %q to API %q", k.Subject, k.API)
	if k.Tenant != "" {
		s += fmt.Sprintf(" in tenant %q", k.Tenant)
	}
	return s
}

// open opens the grants of the configured store, logging at level and
// above to stderr.
func (f *gatewayFlags) open(ctx context.Context, stderr io.Writer, level slog.Level) (connect.Store, *connect.Connector, func() error, error) {
	lc := f.Log
	lc.Level = strings.ToLower(level.String())
	return gateway.OpenGrants(ctx, f.Config, newLogger(lc, stderr))
}
