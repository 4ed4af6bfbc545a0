package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"sync"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/mrtr"
)

// callerIDs names a caller known only by its bearer token (auth mode none)
// without keeping the token: the subject is a keyed hash of it, so sealed
// state and tasks belong to the token, and whoever reads the store cannot
// test guesses of short tokens offline. The key is derived from the state
// key ring (the oldest key, so that adding a key to the ring keeps every
// caller's subject; replicas sharing the ring agree). Every call computes
// one or two such hashes, so the keyed HMACs are pooled and reused rather
// than keyed afresh each time; a pooled one holds no caller's data between
// uses.
type callerIDs struct {
	key  []byte
	macs *sync.Pool // of *callerMAC
}

// callerMAC is a reusable HMAC-SHA256 under the caller-id key, with the
// buffers its input and output go through.
type callerMAC struct {
	mac hash.Hash
	in  []byte
	out []byte
}

func newCallerIDs(ring *mrtr.KeyRing) (callerIDs, error) {
	keys, err := ring.DeriveKeys("caller-subject")
	if err != nil {
		return callerIDs{}, fmt.Errorf("caller ids: %w", err)
	}
	key := keys[len(keys)-1].Secret
	return callerIDs{key: key, macs: &sync.Pool{New: func() any {
		return &callerMAC{mac: hmac.New(sha256.New, key), out: make([]byte, 0, sha256.Size)}
	}}}, nil
}

// encoded returns prefix followed by the unpadded base64url of the first n
// bytes of HMAC(key, salt+msg).
func (c callerIDs) encoded(prefix, salt, msg string, n int) string {
	m := c.macs.Get().(*callerMAC)
	m.in = append(append(m.in[:0], salt...), msg...)
	m.mac.Write(m.in)
	m.out = m.mac.Sum(m.out[:0])
	var buf [64]byte
	s := string(base64.RawURLEncoding.AppendEncode(append(buf[:0], prefix...), m.out[:n]))
	clear(m.in) // the token must not outlive the call in a pooled buffer
	clear(m.out)
	m.mac.Reset()
	c.macs.Put(m)
	return s
}

// principal is the caller presenting token: its subject, and the token as
// the credential to forward.
func (c callerIDs) principal(token string) mcp.Principal {
	return mcp.Principal{Subject: c.encoded("bearer:", "", token, 16), Credential: mcp.NewSecret(token)}
}

// logName names a caller in logs without naming it: a short keyed hash of
// its subject, the same on every replica that shares the key ring.
func (c callerIDs) logName(subject string) string {
	if subject == "" {
		return "anonymous"
	}
	return c.encoded("", "log\x00", subject, 9)
}
