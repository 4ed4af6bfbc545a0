package mrtr

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"sync"
)

// Token format, version 1:
//
//	v1.<kid>.<base64url(nonce ‖ ciphertext ‖ tag)>
//
// base64url is unpadded and strict. The AES-256-GCM additional data is
//
//	"mcpgate/mrtr" ‖ len ‖ "v1" ‖ len ‖ kid ‖ len ‖ method ‖ len ‖ name
//
// with each len an unsigned varint, so the token opens only for the method and
// name it was sealed for. The plaintext is a fixed 92-byte header followed by
// the continuation:
//
//	expiresAt   8  unix milliseconds, big-endian
//	jti        16  random
//	arguments  32  SHA-256 of the canonical arguments
//	subject    32  SHA-256 of the caller's subject
//	round       4  big-endian
//	continuation   the rest (JSON, possibly empty)
const (
	tokenPrefix  = "v1."
	aadDomain    = "mcpgate/mrtr"
	headerSize   = 8 + 16 + sha256.Size + sha256.Size + 4
	sealOverhead = 12 + 16 // random nonce + GCM tag
)

var b64 = base64.RawURLEncoding.Strict()

// record is the sealed plaintext, decoded.
type record struct {
	expiresAt    int64
	jti          [16]byte
	args         [sha256.Size]byte
	subject      [sha256.Size]byte
	round        uint32
	continuation []byte
}

// scratch holds the buffers of one seal or open; pooled to keep the hot path
// free of garbage.
type scratch struct {
	plain, sealed, text, aad []byte
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(s *scratch) {
	const keep = 64 << 10 // do not pin buffers grown by a huge token
	if cap(s.plain)+cap(s.sealed)+cap(s.text) > keep {
		return
	}
	scratchPool.Put(s)
}

func appendAAD(dst []byte, kid, method, name string) []byte {
	for _, s := range [...]string{aadDomain, "v1", kid, method, name} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return dst
}

// seal encrypts r with the ring's sealing key, bound to method and name.
func (c *Codec) seal(r *record, method, name string) (string, error) {
	key := &c.ring.keys[0]
	sc := getScratch()
	defer putScratch(sc)

	p := sc.plain[:0]
	p = binary.BigEndian.AppendUint64(p, uint64(r.expiresAt))
	p = append(p, r.jti[:]...)
	p = append(p, r.args[:]...)
	p = append(p, r.subject[:]...)
	p = binary.BigEndian.AppendUint32(p, r.round)
	p = append(p, r.continuation...)
	sc.plain = p

	sc.aad = appendAAD(sc.aad[:0], key.id, method, name)
	sc.sealed = key.aead.Seal(sc.sealed[:0], nil, sc.plain, sc.aad)

	t := append(sc.text[:0], tokenPrefix...)
	t = append(t, key.id...)
	t = append(t, '.')
	t = b64.AppendEncode(t, sc.sealed)
	sc.text = t
	if len(t) > c.opts.MaxTokenSize {
		return "", ErrStateTooLarge
	}
	return string(t), nil
}

// open authenticates and decodes token for method and name. It checks
// nothing beyond integrity: expiry and binding are Open's job. Every
// failure is ErrInvalid.
func (c *Codec) open(token, method, name string) (record, error) {
	if len(token) > c.opts.MaxTokenSize {
		return record{}, ErrInvalid
	}
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok {
		return record{}, ErrInvalid
	}
	kid, payload, ok := strings.Cut(rest, ".")
	if !ok {
		return record{}, ErrInvalid
	}
	key := c.ring.find(kid)
	// The decoder skips CR and LF; refuse them so each state has one spelling.
	if key == nil || strings.IndexByte(payload, '\n') >= 0 || strings.IndexByte(payload, '\r') >= 0 {
		return record{}, ErrInvalid
	}

	sc := getScratch()
	defer putScratch(sc)
	sc.text = append(sc.text[:0], payload...)
	var err error
	if sc.sealed, err = b64.AppendDecode(sc.sealed[:0], sc.text); err != nil {
		return record{}, ErrInvalid
	}
	if len(sc.sealed) < sealOverhead+headerSize {
		return record{}, ErrInvalid
	}
	sc.aad = appendAAD(sc.aad[:0], kid, method, name)
	if sc.plain, err = key.aead.Open(sc.plain[:0], nil, sc.sealed, sc.aad); err != nil {
		return record{}, ErrInvalid
	}

	p := sc.plain
	r := record{
		expiresAt: int64(binary.BigEndian.Uint64(p)),
		round:     binary.BigEndian.Uint32(p[headerSize-4:]),
	}
	p = p[8:]
	p = p[copy(r.jti[:], p):]
	p = p[copy(r.args[:], p):]
	p = p[copy(r.subject[:], p):]
	if p = p[4:]; len(p) > 0 {
		r.continuation = append([]byte(nil), p...) // sc.plain goes back to the pool
	}
	return r, nil
}
