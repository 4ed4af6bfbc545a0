package connect

import "context"

// TokensForTest opens the stored grant of k: tests use it to act on the
// tokens at the authorization server (revoke a refresh token) and to
// compare them with what the upstream received.
func (c *Connector) TokensForTest(ctx context.Context, k Key) (access, refresh string, err error) {
	rec, err := c.grants.store.Get(ctx, k)
	if err != nil {
		return "", "", err
	}
	t, err := c.grants.open(rec)
	return t.AccessToken, t.RefreshToken, err
}
