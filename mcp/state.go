package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"

	"github.com/mcpgate/mcpgate/mrtr"
)

// SealedState adapts an mrtr.Codec (AES-256-GCM sealed requestState with
// key rotation, expiry, round cap, caller and argument binding, optional
// replay cache) to the StateCodec the server uses.
func SealedState(c *mrtr.Codec) StateCodec { return sealedState{c} }

type sealedState struct{ c *mrtr.Codec }

func (s sealedState) Seal(ctx context.Context, b mrtr.Binding, round int, cont json.RawMessage) (string, error) {
	tok, err := s.c.Seal(b, round, cont)
	if errors.Is(err, mrtr.ErrRejected) {
		return "", ErrInvalidParams("Too many input rounds: %v", err)
	}
	return tok, err
}

func (s sealedState) Open(ctx context.Context, token string, b mrtr.Binding) (int, json.RawMessage, error) {
	st, err := s.c.Open(ctx, token, b)
	if err != nil {
		if !errors.Is(err, mrtr.ErrRejected) {
			// A failing replay cache is the server's fault, not the client's.
			return 0, nil, errInternal()
		}
		return 0, nil, err
	}
	return st.Round, st.Continuation, nil
}

// ephemeralState is the StateCodec of a server configured without one: a
// codec with a random key, made on first use (which logs that paused
// requests then cannot resume after a restart or on another replica).
type ephemeralState struct {
	logger *slog.Logger
	once   sync.Once
	codec  StateCodec
	err    error
}

func (e *ephemeralState) get() (StateCodec, error) {
	e.once.Do(func() {
		c, err := mrtr.NewCodec(mrtr.GenerateKeyRing(e.logger), mrtr.Options{})
		e.codec, e.err = SealedState(c), err
	})
	return e.codec, e.err
}

func (e *ephemeralState) Seal(ctx context.Context, b mrtr.Binding, round int, cont json.RawMessage) (string, error) {
	c, err := e.get()
	if err != nil {
		return "", err
	}
	return c.Seal(ctx, b, round, cont)
}

func (e *ephemeralState) Open(ctx context.Context, token string, b mrtr.Binding) (int, json.RawMessage, error) {
	c, err := e.get()
	if err != nil {
		return 0, nil, err
	}
	return c.Open(ctx, token, b)
}
