package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/mrtr"
)

// callerIDs names a caller known only by its bearer token (auth mode none)
// without keeping the token: the subject is a keyed hash of it, so sealed
// state and tasks belong to the token, and whoever reads the store cannot
// test guesses of short tokens offline. The key is derived from the state
// key ring (the oldest key, so that adding a key to the ring keeps every
// caller's subject; replicas sharing the ring agree).
type callerIDs struct{ key []byte }

func newCallerIDs(ring *mrtr.KeyRing) (callerIDs, error) {
	keys, err := ring.DeriveKeys("caller-subject")
	if err != nil {
		return callerIDs{}, fmt.Errorf("caller ids: %w", err)
	}
	return callerIDs{key: keys[len(keys)-1].Secret}, nil
}

// principal is the caller presenting token: its subject, and the token as
// the credential to forward.
func (c callerIDs) principal(token string) mcp.Principal {
	mac := hmac.New(sha256.New, c.key)
	mac.Write([]byte(token))
	return mcp.Principal{Subject: "bearer:" + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:16]), Credential: mcp.NewSecret(token)}
}
