package gateway

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/mrtr"
	"github.com/mcpgate/mcpgate/tasks"
)

// taskSecrets keeps the credential a task's worker forwards upstream
// sealed with the task in the store (passthrough and exchange modes), so
// that whichever replica runs the task, after a crash or a restart, calls
// the API as the task's creator. Nil (nothing kept) in the other modes and
// with TaskOptions.MemoryOnlyCredentials.
func (g *Gateway) taskSecrets() (*tasks.Secrets, error) {
	if g.taskOpts.MemoryOnlyCredentials {
		return nil, nil
	}
	switch g.cfg.Credentials.Mode {
	case "passthrough", "exchange":
	default:
		return nil, nil
	}
	sealer, err := newStateKeySealer(g.cfg.StateKeys)
	if err != nil {
		return nil, err
	}
	return &tasks.Secrets{Sealer: sealer, Capture: func(ctx context.Context, nt tasks.NewTask) ([]byte, error) {
		// prepareTask has just remembered the credential to forward (the
		// caller's own, or the one checked or exchanged for the upstream).
		cred := g.taskCreds.get(nt.Owner.Subject)
		if cred == "" {
			cred = mcp.PrincipalFrom(ctx).Credential
		}
		if cred == "" {
			return nil, nil
		}
		return []byte(cred), nil
	}}, nil
}

// taskCredential is the credential a task's worker forwards: the one
// sealed with the task, else the one this process remembers for its
// creator (a task created before storing was on, or whose sealing key is
// gone), else none.
func (g *Gateway) taskCredential(ctx context.Context, subject string) string {
	if x := tasks.ExecFrom(ctx); x != nil {
		cred, err := x.Secret()
		if err != nil {
			g.logger.Warn("tasks: the task's sealed credential does not open; using this process's memory", "task", x.Task().ID, "err", err)
		} else if cred != nil {
			return string(cred)
		}
	}
	return g.taskCreds.get(subject)
}

// stateKeySealer is a minimal AES-256-GCM tasks.Sealer over the state
// keys, with a key id stored in every record, rotation (seal with the
// first key, open with any) and a subkey per purpose derived by HKDF, so a
// task credential record never opens as a requestState or the reverse.
//
// REPLACE it with the shared secret box over the state key ring (package
// secretbox, written by the OAuth work) once that is on main: this copy
// parses MCPGATE_STATE_KEYS itself because mrtr.KeyRing keeps no key bytes.
type stateKeySealer struct {
	seal  string // id of the sealing key
	aeads map[string]cipher.AEAD
}

// taskSecretPurpose is the HKDF info of the task credential subkeys.
const taskSecretPurpose = "mcpgate task credential v1"

// newStateKeySealer builds the sealer from a key ring spec ("kid:BASE64,…",
// newest first), MCPGATE_STATE_KEYS when spec is empty, or a random key
// (records then open only in this process) when both are empty.
func newStateKeySealer(spec string) (*stateKeySealer, error) {
	if spec = strings.TrimSpace(spec); spec == "" {
		spec = strings.TrimSpace(os.Getenv(mrtr.EnvKeys))
	}
	if spec == "" {
		key := make([]byte, mrtr.KeySize)
		rand.Read(key)
		spec = "process:" + base64.RawURLEncoding.EncodeToString(key)
	}
	s := &stateKeySealer{aeads: map[string]cipher.AEAD{}}
	for i, item := range strings.Split(spec, ",") {
		id, enc, ok := strings.Cut(strings.TrimSpace(item), ":")
		id = strings.TrimSpace(id)
		key, err := decodeStateKey(strings.TrimSpace(enc))
		if !ok || id == "" || len(id) > 255 || err != nil || len(key) != mrtr.KeySize {
			return nil, fmt.Errorf("state keys: key %d: want id:base64 of %d bytes", i+1, mrtr.KeySize)
		}
		sub, err := hkdf.Key(sha256.New, key, nil, taskSecretPurpose, 32)
		if err != nil {
			return nil, fmt.Errorf("state keys: key %q: %w", id, err)
		}
		block, err := aes.NewCipher(sub)
		if err != nil {
			return nil, fmt.Errorf("state keys: key %q: %w", id, err)
		}
		aead, err := cipher.NewGCMWithRandomNonce(block)
		if err != nil {
			return nil, fmt.Errorf("state keys: key %q: %w", id, err)
		}
		if i == 0 {
			s.seal = id
		}
		s.aeads[id] = aead
	}
	return s, nil
}

func decodeStateKey(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// Seal implements tasks.Sealer: one byte of key id length, the key id,
// then the GCM nonce and ciphertext; the key id is authenticated too.
func (s *stateKeySealer) Seal(plain, aad []byte) ([]byte, error) {
	out := append([]byte{byte(len(s.seal))}, s.seal...)
	return s.aeads[s.seal].Seal(out, nil, plain, append(append([]byte(nil), out...), aad...)), nil
}

// Open implements tasks.Sealer.
func (s *stateKeySealer) Open(sealed, aad []byte) ([]byte, error) {
	if len(sealed) < 1 || len(sealed) < 1+int(sealed[0]) {
		return nil, errors.New("sealed record too short")
	}
	head := sealed[:1+int(sealed[0])]
	aead, ok := s.aeads[string(head[1:])]
	if !ok {
		return nil, errors.New("sealed with a key that is not in the ring")
	}
	plain, err := aead.Open(nil, nil, sealed[len(head):], append(append([]byte(nil), head...), aad...))
	if err != nil {
		return nil, errors.New("sealed record does not open (altered, or sealed for another task)")
	}
	return plain, nil
}

func (s *stateKeySealer) String() string { return "stateKeySealer(redacted)" }
