package connect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/oauth2"
)

// Refresh protocol. A token expiring within RefreshMargin is refreshed
// before use. In one process, concurrent calls share one refresh
// (singleflight). Across replicas, the store's lease on the row's version
// decides who spends the refresh token (the authorization server may revoke
// a whole grant when a rotated refresh token is used twice); the others
// keep using the current token while it is valid, or wait briefly for the
// winner's write. A refresh the authorization server refuses (HTTP 4xx:
// invalid_grant, revoked, …) drops the grant, so the call asks the user to
// connect again; a failure to reach it keeps the grant. An access token
// the upstream answered 401 to (seen by [Connector.Transport]) is renewed
// the same way even before its expiry, or the grant dropped when it cannot
// be.

// waitForRefresh bounds how long a call waits for another replica's refresh
// of an expired token.
const waitForRefresh = 5 * time.Second

// accessToken returns a usable access token of k, refreshing it if due.
func (c *Connector) accessToken(ctx context.Context, p *provider, k Key) (string, error) {
	rec, err := c.grants.store.Get(ctx, k)
	if err != nil {
		return "", err
	}
	t, err := c.grants.open(rec)
	if err != nil {
		return "", err
	}
	if !c.due(t) {
		return t.AccessToken, nil
	}
	return c.renew(ctx, p, k, "")
}

// renew runs one refresh of k at a time in this process; rejected is the
// access token the upstream refused, "" for a refresh because of expiry.
func (c *Connector) renew(ctx context.Context, p *provider, k Key, rejected string) (string, error) {
	v, err, _ := c.refreshing.Do(k.String()+"\x00"+rejected, func() (any, error) {
		// Shared by every waiting call: not bound to the first one's
		// cancellation.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return c.refresh(rctx, p, k, rejected)
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// due reports whether t should be refreshed before use.
func (c *Connector) due(t tokens) bool {
	return !t.Expiry.IsZero() && !c.opts.Now().Add(c.opts.RefreshMargin).Before(t.Expiry)
}

// expired reports whether t can no longer be used.
func (c *Connector) expired(t tokens) bool {
	return !t.Expiry.IsZero() && !c.opts.Now().Before(t.Expiry)
}

// refresh renews the grant of k (see the protocol above).
func (c *Connector) refresh(ctx context.Context, p *provider, k Key, rejected string) (string, error) {
	store := c.grants.store
	rec, err := store.Get(ctx, k)
	if err != nil {
		return "", err
	}
	t, err := c.grants.open(rec)
	if err != nil {
		return "", err
	}
	// usable: the current token may serve while a refresh is not possible.
	usable := rejected == "" && !c.expired(t)
	switch {
	case rejected == "" && !c.due(t), rejected != "" && t.AccessToken != rejected: // refreshed meanwhile
		return t.AccessToken, nil
	case t.RefreshToken == "" && usable:
		return t.AccessToken, nil
	case t.RefreshToken == "":
		c.drop(ctx, rec, "the access token expired or was refused, and there is no refresh token")
		return "", ErrNoGrant
	}
	now := c.opts.Now()
	won, err := store.Lease(ctx, k, rec.Version, now.Add(c.opts.RefreshLease), now)
	if err != nil {
		return "", err
	}
	if !won {
		if usable {
			return t.AccessToken, nil
		}
		return c.awaitRefresh(ctx, k, rec.Version)
	}
	nt, err := p.oauth.TokenSource(c.clientContext(ctx), &oauth2.Token{RefreshToken: t.RefreshToken}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500 {
			c.drop(ctx, rec, "the authorization server refused the refresh ("+tokenError(err)+")")
			return "", ErrNoGrant
		}
		if usable {
			return t.AccessToken, nil
		}
		return "", fmt.Errorf("connect: refresh %s: %s", k, tokenError(err))
	}
	nt.RefreshToken = cmp.Or(nt.RefreshToken, t.RefreshToken) // a server may keep the old one
	scope, _ := nt.Extra("scope").(string)
	next, err := c.grants.seal(k, fromOAuth(nt, c.opts.Now()), cmp.Or(scope, rec.Scopes))
	if err != nil {
		return "", err
	}
	next.CreatedAt, next.Version = rec.CreatedAt, rec.Version
	ok, err := store.Update(ctx, next)
	if err != nil {
		return "", err
	}
	if !ok { // replaced meanwhile (a new authorization): use what is stored now
		cur, err := store.Get(ctx, k)
		if err != nil {
			return "", err
		}
		ct, err := c.grants.open(cur)
		return ct.AccessToken, err
	}
	c.opts.Logger.Info("connect: grant refreshed", "api", k.API, "subject", k.Subject, "tenant", k.Tenant)
	return nt.AccessToken, nil
}

// awaitRefresh waits for another replica's refresh of k past version.
func (c *Connector) awaitRefresh(ctx context.Context, k Key, version int64) (string, error) {
	deadline := time.Now().Add(waitForRefresh)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		rec, err := c.grants.store.Get(ctx, k)
		if err != nil {
			return "", err // ErrNoGrant when the other replica dropped it
		}
		if rec.Version > version {
			t, err := c.grants.open(rec)
			return t.AccessToken, err
		}
	}
	return "", fmt.Errorf("connect: grant %s: another replica is refreshing it; try again", k)
}

// drop deletes the grant rec (if unchanged since read) so the next call
// asks the user again.
func (c *Connector) drop(ctx context.Context, rec Record, why string) {
	if _, err := c.grants.store.Delete(ctx, rec.Key, rec.Version); err != nil {
		c.opts.Logger.Error("connect: dropping a grant failed", "api", rec.Key.API, "subject", rec.Key.Subject, "error", err)
		return
	}
	c.opts.Logger.Info("connect: grant dropped: "+why, "api", rec.Key.API, "subject", rec.Key.Subject, "tenant", rec.Key.Tenant)
}
