package mrtr

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// EnvKeys is the environment variable KeyRingFromEnv reads.
const EnvKeys = "MCPGATE_STATE_KEYS"

// KeySize is the length of a key: AES-256.
const KeySize = 32

// maxKeyIDLen bounds a key id; ids appear in every token.
const maxKeyIDLen = 32

// Key is one sealing key.
type Key struct {
	// ID names the key inside tokens: 1 to 32 characters of A-Z a-z 0-9 _ -.
	ID string
	// Secret is the 32-byte AES-256 key.
	Secret []byte
}

// KeyRing holds the keys of a Codec. The first key seals; every key opens.
// To rotate, put a new key first and keep the old ones until the tokens they
// sealed have expired (the Codec's TTL), then drop them. The same ring must be
// configured on every replica. Nonces are random, so rotate a key before it
// has sealed 2^32 states. A KeyRing keeps no raw key bytes, only the
// ciphers built from them and, for [KeyRing.DeriveKeys], an HKDF
// pseudorandom key per key; it is immutable.
type KeyRing struct {
	keys []ringKey // keys[0] seals
}

type ringKey struct {
	id   string
	aead cipher.AEAD // AES-256-GCM with a random nonce prefixed to the ciphertext
	prk  []byte      // HKDF-Extract of the secret, for DeriveKeys
}

// prkSalt is the HKDF salt of every ring key's pseudorandom key.
const prkSalt = "mcpgate/keyring/v1"

// NewKeyRing builds a ring from keys, the sealing key first.
func NewKeyRing(keys ...Key) (*KeyRing, error) {
	if len(keys) == 0 {
		return nil, errors.New("mrtr: key ring needs at least one key")
	}
	ring := &KeyRing{keys: make([]ringKey, 0, len(keys))}
	for i, k := range keys {
		if !validKeyID(k.ID) {
			return nil, fmt.Errorf("mrtr: key %d: id must be 1 to %d characters of A-Z a-z 0-9 _ -", i+1, maxKeyIDLen)
		}
		if ring.find(k.ID) != nil {
			return nil, fmt.Errorf("mrtr: key %d: duplicate id %q", i+1, k.ID)
		}
		if len(k.Secret) != KeySize {
			return nil, fmt.Errorf("mrtr: key %q: must be %d bytes, got %d", k.ID, KeySize, len(k.Secret))
		}
		block, err := aes.NewCipher(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("mrtr: key %q: %w", k.ID, err)
		}
		aead, err := cipher.NewGCMWithRandomNonce(block)
		if err != nil {
			return nil, fmt.Errorf("mrtr: key %q: %w", k.ID, err)
		}
		prk, err := hkdf.Extract(sha256.New, k.Secret, []byte(prkSalt))
		if err != nil {
			return nil, fmt.Errorf("mrtr: key %q: %w", k.ID, err)
		}
		ring.keys = append(ring.keys, ringKey{id: k.ID, aead: aead, prk: prk})
	}
	return ring, nil
}

// ParseKeyRing parses a ring from a comma-separated list of id:base64key
// pairs, newest (sealing) key first, e.g. "k2:BASE64,k1:BASE64". Keys are 32
// bytes in standard or URL-safe base64, padded or not. Errors never contain
// key material.
func ParseKeyRing(spec string) (*KeyRing, error) {
	var keys []Key
	for i, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		id, enc, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("mrtr: key %d: want id:base64key", i+1)
		}
		secret, err := decodeKey(strings.TrimSpace(enc))
		if err != nil {
			return nil, fmt.Errorf("mrtr: key %d (%q): key is not valid base64", i+1, id)
		}
		keys = append(keys, Key{ID: strings.TrimSpace(id), Secret: secret})
	}
	return NewKeyRing(keys...)
}

// KeyRingFromEnv parses the ring from the MCPGATE_STATE_KEYS environment
// variable (see ParseKeyRing). When the variable is unset or empty it falls
// back to GenerateKeyRing, which logs a warning to logger. A variable that is
// set but invalid is an error, never a silent fallback.
func KeyRingFromEnv(logger *slog.Logger) (*KeyRing, error) {
	spec := strings.TrimSpace(os.Getenv(EnvKeys))
	if spec == "" {
		return GenerateKeyRing(logger), nil
	}
	ring, err := ParseKeyRing(spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvKeys, err)
	}
	return ring, nil
}

// GenerateKeyRing returns a ring with one random key and logs a warning (to
// slog.Default when logger is nil): state sealed with it dies with the
// process and cannot be resumed by another replica.
func GenerateKeyRing(logger *slog.Logger) *KeyRing {
	if logger == nil {
		logger = slog.Default()
	}
	var id [6]byte
	rand.Read(id[:])
	secret := make([]byte, KeySize)
	rand.Read(secret)
	ring, err := NewKeyRing(Key{ID: "gen-" + base64.RawURLEncoding.EncodeToString(id[:]), Secret: secret})
	if err != nil {
		panic(err) // unreachable: the id and key length are valid by construction
	}
	clear(secret)
	logger.Warn("no requestState keys configured: generated a random key; "+
		"paused requests cannot resume after a restart or on another replica",
		"env", EnvKeys)
	return ring
}

// DeriveKeys returns one subkey per key of the ring, in ring order (the
// sealing key first), each with the id of the key it comes from: HKDF-SHA256
// of that key with info "mcpgate/derive/v1\x00" + purpose. Each purpose gets
// independent keys, none of which is the key this ring seals requestState
// with, so what is sealed for one purpose never opens as another's (package
// secretbox builds on it). purpose must be non-empty; the caller owns the
// returned secrets and should clear them once it has built its ciphers.
func (r *KeyRing) DeriveKeys(purpose string) ([]Key, error) {
	if purpose == "" {
		return nil, errors.New("mrtr: DeriveKeys needs a purpose")
	}
	keys := make([]Key, len(r.keys))
	for i, k := range r.keys {
		secret, err := hkdf.Expand(sha256.New, k.prk, "mcpgate/derive/v1\x00"+purpose, KeySize)
		if err != nil {
			return nil, fmt.Errorf("mrtr: derive a key from %q: %w", k.id, err)
		}
		keys[i] = Key{ID: k.id, Secret: secret}
	}
	return keys, nil
}

// find returns the key named id, or nil.
func (r *KeyRing) find(id string) *ringKey {
	for i := range r.keys {
		if r.keys[i].id == id {
			return &r.keys[i]
		}
	}
	return nil
}

func validKeyID(id string) bool {
	if len(id) == 0 || len(id) > maxKeyIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func decodeKey(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}
