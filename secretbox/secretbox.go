// Package secretbox seals records that a store keeps at rest (OAuth grants,
// task credentials): AES-256-GCM with keys derived from the state key ring
// ([mrtr.KeyRing], MCPGATE_STATE_KEYS), one derivation per purpose.
//
// A [Box] is built for one purpose ("oauth-grant", "task-credential", …). Its
// keys are HKDF-SHA256 subkeys of the ring's keys for that purpose
// ([mrtr.KeyRing.DeriveKeys]), so a record sealed for one purpose never opens
// for another, nor as a requestState (which the ring seals with the ring keys
// themselves), and a requestState never opens as a record.
//
// Record format, version 1 (bytes, for a BLOB or BYTEA column):
//
//	0x01 ‖ len(kid) ‖ kid ‖ nonce (12) ‖ ciphertext ‖ tag (16)
//
// and the GCM additional data is
//
//	len ‖ "mcpgate/secretbox/v1" ‖ len ‖ purpose ‖ len ‖ kid ‖ aad
//
// (each len an unsigned varint), where aad is the caller's binding of the
// record to its owner: build it with [AAD] from the fields that identify the
// row (API, tenant, subject, task id), so a sealed value copied into another
// row does not open there.
//
// Invariants:
//
//   - Open returns plaintext only for a record that is authentic for this
//     purpose, this aad and a key of the ring; every other record is an
//     error ([ErrUnknownKey] when its key id is not in the ring, else
//     [ErrInvalid]), never partial plaintext. Errors carry no key material
//     and no plaintext.
//   - Seal always uses the ring's first (newest) key; Open accepts any key of
//     the ring. To rotate, put a new key first on every replica, re-seal old
//     records with [Box.Reseal] (or let writes re-seal them), and drop the old
//     key once no record names it ([Box.KeyID] tells which key a record uses
//     without opening it).
//   - A Box holds ciphers, not raw keys, and is immutable and safe for
//     concurrent use.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mcpgate/mcpgate/mrtr"
)

// Sealer is what a store needs to keep a value at rest: [Box] implements it.
// aad binds the sealed value to what it belongs to; Open with another aad
// fails.
type Sealer interface {
	Seal(plain, aad []byte) ([]byte, error)
	Open(sealed, aad []byte) ([]byte, error)
}

var _ Sealer = (*Box)(nil)

// Errors of Open. Neither says more than which case it is.
var (
	// ErrInvalid: the record is malformed, was altered, or was sealed for
	// another purpose or aad. These cases are indistinguishable by design.
	ErrInvalid = errors.New("secretbox: record is invalid (altered, or sealed for another owner or purpose)")
	// ErrUnknownKey: the record names a key id that is not in the ring (a
	// key dropped before every record sealed with it was re-sealed).
	ErrUnknownKey = errors.New("secretbox: record was sealed with a key that is not in the key ring")
)

// MaxSize bounds a sealed record (and so a plaintext) in bytes: records are
// small secrets, and a bound keeps a corrupt row from costing much.
const MaxSize = 1 << 20

const (
	version  = 1
	domain   = "mcpgate/secretbox/v1"
	overhead = 12 + 16 // random nonce + GCM tag
)

// Box seals and opens the records of one purpose.
type Box struct {
	purpose string
	keys    []boxKey // keys[0] seals
}

type boxKey struct {
	id   string
	aead cipher.AEAD // AES-256-GCM, random nonce prefixed
}

// New returns the Box of purpose on ring. purpose names what the records are
// ("oauth-grant"); two Boxes of one ring and purpose open each other's
// records, Boxes of different purposes never do.
func New(ring *mrtr.KeyRing, purpose string) (*Box, error) {
	if ring == nil {
		return nil, errors.New("secretbox: New needs a key ring")
	}
	if purpose == "" {
		return nil, errors.New("secretbox: New needs a purpose")
	}
	keys, err := ring.DeriveKeys("secretbox\x00" + purpose)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	b := &Box{purpose: purpose, keys: make([]boxKey, 0, len(keys))}
	for _, k := range keys {
		block, err := aes.NewCipher(k.Secret)
		clear(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("secretbox: key %q: %w", k.ID, err)
		}
		aead, err := cipher.NewGCMWithRandomNonce(block)
		if err != nil {
			return nil, fmt.Errorf("secretbox: key %q: %w", k.ID, err)
		}
		b.keys = append(b.keys, boxKey{id: k.ID, aead: aead})
	}
	return b, nil
}

// Purpose is the purpose the Box was built for.
func (b *Box) Purpose() string { return b.purpose }

// SealingKeyID is the id of the key Seal uses (the ring's newest).
func (b *Box) SealingKeyID() string { return b.keys[0].id }

// Seal encrypts plain with the newest key, bound to aad.
func (b *Box) Seal(plain, aad []byte) ([]byte, error) {
	k := &b.keys[0]
	size := 2 + len(k.id) + overhead + len(plain)
	if size > MaxSize {
		return nil, fmt.Errorf("secretbox: a %d-byte value is over the %d-byte record bound", len(plain), MaxSize)
	}
	out := make([]byte, 0, size)
	out = append(out, version, byte(len(k.id)))
	out = append(out, k.id...)
	return k.aead.Seal(out, nil, plain, b.additionalData(k.id, aad)), nil
}

// Open authenticates sealed for aad and returns its plaintext.
func (b *Box) Open(sealed, aad []byte) ([]byte, error) {
	kid, body, err := split(sealed)
	if err != nil {
		return nil, err
	}
	k := b.find(kid)
	if k == nil {
		return nil, ErrUnknownKey
	}
	plain, err := k.aead.Open(nil, nil, body, b.additionalData(kid, aad))
	if err != nil {
		return nil, ErrInvalid
	}
	return plain, nil
}

// KeyID returns the id of the key sealed was sealed with, without opening
// it (so a store can find the records a rotation must re-seal). It is not
// authenticated: Open is the only verdict on a record.
func (b *Box) KeyID(sealed []byte) (string, error) {
	kid, _, err := split(sealed)
	return kid, err
}

// Reseal returns sealed re-sealed with the newest key when it was sealed
// with an older one (resealed true), or sealed itself when it already uses
// the newest key. The record must open for aad either way.
func (b *Box) Reseal(sealed, aad []byte) (out []byte, resealed bool, err error) {
	plain, err := b.Open(sealed, aad)
	if err != nil {
		return nil, false, err
	}
	defer clear(plain)
	if kid, _, _ := split(sealed); kid == b.keys[0].id {
		return sealed, false, nil
	}
	out, err = b.Seal(plain, aad)
	return out, err == nil, err
}

// AAD joins the fields that identify a record's owner into additional data
// for Seal and Open, each length-prefixed so that no two lists of fields
// give the same bytes (("ab","c") and ("a","bc") differ).
func AAD(fields ...string) []byte {
	n := 0
	for _, f := range fields {
		n += binary.MaxVarintLen64 + len(f)
	}
	out := make([]byte, 0, n)
	for _, f := range fields {
		out = binary.AppendUvarint(out, uint64(len(f)))
		out = append(out, f...)
	}
	return out
}

// additionalData is the GCM additional data of a record with key kid.
func (b *Box) additionalData(kid string, aad []byte) []byte {
	return append(AAD(domain, b.purpose, kid), aad...)
}

// split parses the record header: the key id and the nonce-prefixed
// ciphertext.
func split(sealed []byte) (kid string, body []byte, err error) {
	if len(sealed) > MaxSize || len(sealed) < 2 || sealed[0] != version {
		return "", nil, ErrInvalid
	}
	n := int(sealed[1])
	if n == 0 || len(sealed) < 2+n+overhead {
		return "", nil, ErrInvalid
	}
	return string(sealed[2 : 2+n]), sealed[2+n:], nil
}

func (b *Box) find(kid string) *boxKey {
	for i := range b.keys {
		if b.keys[i].id == kid {
			return &b.keys[i]
		}
	}
	return nil
}
