// Package mrtr seals and verifies the requestState of multi round-trip
// requests (MCP 2026-07-28, "MRTR").
//
// A server that needs more input answers tools/call, prompts/get or
// resources/read with an InputRequiredResult carrying an opaque requestState;
// the client retries the original request with that string echoed back. The
// server is stateless, so everything that must survive between rounds travels
// inside the requestState. This package owns that string: the [State] record,
// its AES-256-GCM sealing with rotating keys ([KeyRing]), the arguments
// hash ([HashArguments]: RFC 8785, but numbers kept exact) and the
// optional single-use check
// ([ReplayCache]). It knows nothing of JSON-RPC; the protocol core maps every
// rejection (errors.Is(err, [ErrRejected])) to a -32602 error whose message is
// err.Error().
//
// Invariants:
//
//   - A requestState is attacker-controlled input. [Codec.Open] returns a
//     State only after every check passed, in this order: it opens (right
//     format, known key id, authentic for this method and name), it has not
//     expired, it was sealed for this caller, its round is within the cap, the
//     arguments are unchanged, and (with a replay cache) it was not used
//     before. Any failure is an error; nothing is half-trusted.
//   - The method and name are bound by the AEAD's additional data, so a token
//     presented for another method, tool, prompt or resource does not open at
//     all and is reported exactly like a tampered one ([ErrInvalid]). The
//     caller's subject is bound inside the sealed plaintext.
//   - The continuation is the only trusted per-round carrier. The arguments
//     must be identical across rounds (their hash is sealed), but the
//     inputResponses of each round are client-controlled. Anything a handler
//     must trust across rounds (an authorization decision, a price, a
//     resource id) belongs in the continuation, never re-derived from what the
//     client sends on the retry.
//   - Continuation fidelity: the continuation is stored as JSON. It comes back
//     as [State.Continuation] (json.RawMessage), not as the Go value that was
//     sealed; read it back into a typed value with [State.Decode] (or, in a
//     handler, mcp.ContinuationAs), which follows encoding/json rules
//     (unexported fields, interface types and channels do not survive).
//   - No package-level mutable state: keys live in a KeyRing, replay memory in
//     a ReplayCache, both owned by whoever builds the [Codec].
package mrtr

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// State is the record sealed into a requestState token.
type State struct {
	// Continuation is the handler's own data, as JSON. Empty when the handler
	// paused without one.
	Continuation json.RawMessage
	// Method is the request method the state was sealed for
	// (tools/call, prompts/get or resources/read).
	Method string
	// Name is the tool or prompt name, or the resource URI.
	Name string
	// Round is 1 on the first pause and grows by one on each further pause.
	Round int
	// ExpiresAt is when the state stops opening (millisecond precision).
	ExpiresAt time.Time
	// JTI identifies this one token (fresh random per pause), base64url.
	JTI string
	// ArgumentsHash is the base64url SHA-256 of the canonical arguments
	// (RFC 8785 with exact numbers, see HashArguments).
	ArgumentsHash string
	// SubjectHash is the base64url SHA-256 of the caller's subject.
	SubjectHash string
}

// Binding is what a request must match for its requestState to be accepted:
// the same method, name, caller and arguments as the request that paused.
type Binding struct {
	Method string // tools/call, prompts/get or resources/read
	Name   string // tool or prompt name, or resource URI
	// Subject identifies the authenticated caller; "" is the anonymous caller,
	// which is bound like any other subject.
	Subject string
	// Arguments are the request's arguments as received. Absent, null and {}
	// are equivalent.
	Arguments json.RawMessage
}

// Decode unmarshals the continuation into v with encoding/json. An empty
// continuation leaves v untouched.
func (s *State) Decode(v any) error {
	if len(s.Continuation) == 0 {
		return nil
	}
	if err := json.Unmarshal(s.Continuation, v); err != nil {
		return fmt.Errorf("mrtr: decode continuation: %w", err)
	}
	return nil
}

// rejection is the type of the errors returned for a requestState that must
// not be used. Its message is safe to show to the client.
type rejection struct{ msg string }

func (r *rejection) Error() string { return r.msg }

// Is makes every rejection match ErrRejected.
func (r *rejection) Is(target error) bool { return target == ErrRejected }

// Reasons a requestState is rejected. Each matches ErrRejected with
// errors.Is; their messages are concise and carry no key or plaintext.
var (
	// ErrRejected matches every rejection below.
	ErrRejected = errors.New("requestState rejected")

	// ErrInvalid: the token is malformed or too large, names an unknown or
	// retired key, was altered, or was sealed for another method or name.
	// These cases are deliberately indistinguishable.
	ErrInvalid error = &rejection{"requestState is invalid"}
	// ErrExpired: the token opened but its expiry has passed.
	ErrExpired error = &rejection{"requestState has expired"}
	// ErrWrongCaller: the token was sealed for another caller's subject.
	ErrWrongCaller error = &rejection{"requestState belongs to another caller"}
	// ErrTooManyRounds: the round exceeds the codec's MaxRounds. Seal
	// returns it too, instead of sealing a round that cannot resume.
	ErrTooManyRounds error = &rejection{"requestState exceeds the round limit"}
	// ErrArgumentsChanged: the arguments differ from those of the paused
	// request.
	ErrArgumentsChanged error = &rejection{"arguments differ from the paused request"}
	// ErrReplayed: the replay cache has already seen this token's jti.
	ErrReplayed error = &rejection{"requestState was already used"}
)

// ErrStateTooLarge is returned by Seal when the sealed token would exceed
// Options.MaxTokenSize. It is a server-side error, not a rejection.
var ErrStateTooLarge = errors.New("mrtr: requestState exceeds the maximum token size")

// Defaults for Options fields left zero.
const (
	DefaultTTL          = 10 * time.Minute
	DefaultMaxRounds    = 10
	DefaultMaxTokenSize = 16 << 10
)

// Options configure a Codec. Zero fields take the defaults.
type Options struct {
	TTL          time.Duration    // lifetime of each sealed state; DefaultTTL
	MaxRounds    int              // highest round that seals and resumes; DefaultMaxRounds
	MaxTokenSize int              // longest token sealed or accepted, in bytes; DefaultMaxTokenSize
	ReplayCache  ReplayCache      // when set, each token resumes at most once
	Now          func() time.Time // clock; time.Now
}

// Codec pauses and resumes requests. It is safe for concurrent use.
type Codec struct {
	ring *KeyRing
	opts Options
}

// NewCodec returns a Codec that seals with the first key of ring and opens
// with any of its keys.
func NewCodec(ring *KeyRing, opts Options) (*Codec, error) {
	if ring == nil || len(ring.keys) == 0 {
		return nil, errors.New("mrtr: NewCodec needs a key ring with at least one key")
	}
	if opts.TTL < 0 || opts.MaxRounds < 0 || opts.MaxTokenSize < 0 {
		return nil, errors.New("mrtr: negative option")
	}
	if opts.TTL == 0 {
		opts.TTL = DefaultTTL
	}
	if opts.MaxRounds == 0 {
		opts.MaxRounds = DefaultMaxRounds
	}
	if opts.MaxTokenSize == 0 {
		opts.MaxTokenSize = DefaultMaxTokenSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Codec{ring: ring, opts: opts}, nil
}

// Seal seals the state of a request that returns InputRequiredResult, in
// the given round (1 on the first pause; State.Round+1 after an Open, the
// same convention as State.Round), with a fresh jti, expiry now+TTL, bound
// to b. The continuation is
// marshalled with encoding/json; a json.RawMessage is used as is (it must be
// valid JSON without duplicate member names) and nil means no continuation.
// Sealing past MaxRounds returns ErrTooManyRounds, a token longer than
// MaxTokenSize ErrStateTooLarge; other errors are the caller's bugs (invalid
// arguments or continuation).
func (c *Codec) Seal(b Binding, round int, continuation any) (string, error) {
	if round < 1 {
		return "", errors.New("mrtr: rounds start at 1")
	}
	if round > c.opts.MaxRounds {
		return "", ErrTooManyRounds
	}
	args, err := argumentsDigest(b.Arguments)
	if err != nil {
		return "", err
	}
	var cont json.RawMessage
	switch v := continuation.(type) {
	case nil:
	case json.RawMessage:
		if !jsontext.Value(v).IsValid() {
			return "", errors.New("mrtr: continuation is not valid JSON")
		}
		cont = v
	default:
		if cont, err = json.Marshal(v); err != nil {
			return "", fmt.Errorf("mrtr: marshal continuation: %w", err)
		}
	}
	r := record{
		continuation: cont,
		round:        uint32(round),
		expiresAt:    c.opts.Now().Add(c.opts.TTL).UnixMilli(),
		args:         args,
		subject:      subjectDigest(b.Subject),
	}
	rand.Read(r.jti[:])
	return c.seal(&r, b.Method, b.Name)
}

// Open verifies token for a request bound to b and returns its state. The
// checks run in a fixed order (see the package doc) and the first failure is
// returned: one of the rejection errors, or a wrapped error of the replay
// cache, which is a server fault rather than a rejection.
func (c *Codec) Open(ctx context.Context, token string, b Binding) (*State, error) {
	r, err := c.open(token, b.Method, b.Name)
	if err != nil {
		return nil, err
	}
	now := c.opts.Now()
	expiresAt := time.UnixMilli(r.expiresAt)
	if !now.Before(expiresAt) {
		return nil, ErrExpired
	}
	subject := subjectDigest(b.Subject)
	if subtle.ConstantTimeCompare(r.subject[:], subject[:]) != 1 {
		return nil, ErrWrongCaller
	}
	if int64(r.round) > int64(c.opts.MaxRounds) {
		return nil, ErrTooManyRounds
	}
	args, err := argumentsDigest(b.Arguments)
	if err != nil || args != r.args {
		return nil, ErrArgumentsChanged
	}
	ids := encodeIDs(&r)
	jti := ids[:jtiLen]
	if c.opts.ReplayCache != nil {
		first, err := c.opts.ReplayCache.Use(ctx, jti, expiresAt)
		if err != nil {
			return nil, fmt.Errorf("mrtr: replay cache: %w", err)
		}
		if !first {
			return nil, ErrReplayed
		}
	}
	return &State{
		Continuation:  r.continuation,
		Method:        b.Method,
		Name:          b.Name,
		Round:         int(r.round),
		ExpiresAt:     expiresAt,
		JTI:           jti,
		ArgumentsHash: ids[jtiLen : jtiLen+hashLen],
		SubjectHash:   ids[jtiLen+hashLen:],
	}, nil
}

// Lengths of the base64url forms of a jti and of a SHA-256 hash.
var (
	jtiLen  = base64.RawURLEncoding.EncodedLen(len(record{}.jti))
	hashLen = base64.RawURLEncoding.EncodedLen(sha256.Size)
)

// encodeIDs returns the base64url jti, arguments hash and subject hash of r
// concatenated, so that the three strings of a State cost one allocation.
func encodeIDs(r *record) string {
	var buf [64 * 3]byte
	b := base64.RawURLEncoding.AppendEncode(buf[:0], r.jti[:])
	b = base64.RawURLEncoding.AppendEncode(b, r.args[:])
	b = base64.RawURLEncoding.AppendEncode(b, r.subject[:])
	return string(b)
}

// subjectDigest hashes a caller's subject. Only the hash is sealed.
func subjectDigest(subject string) [sha256.Size]byte {
	return sha256.Sum256([]byte(subject))
}
