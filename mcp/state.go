package mcp

// This file is the server side of multi round-trip requests: a handler
// pauses by returning RequireInput's error (pause seals the state and asks
// for input), the client retries with the answers and the sealed state
// (resume verifies it before anything in it is used), and the StateCodec
// that seals and opens requestState (SealedState over package mrtr, or a
// random-key codec when none is configured).

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"

	"github.com/mcpgate/mcpgate/mrtr"
)

// resume reads the retry members of a multi round-trip request: the input
// responses (each must be an object) and the sealed requestState, verified
// against this request before anything in it is used.
func (s *Server) resume(ctx context.Context, c *call, name string, args json.RawMessage) *Error {
	if raw := c.params.InputResponses; raw != nil && string(raw) != "null" {
		var m map[string]json.RawMessage
		if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
			return ErrInvalidParams("Invalid params: inputResponses must be an object")
		}
		for k, v := range m {
			if len(v) == 0 || v[0] != '{' {
				return ErrInvalidParams("Invalid params: inputResponses[%q] must be an object", k)
			}
		}
		c.req.InputResponses = m
	}
	if c.params.RequestState == nil {
		return nil
	}
	round, cont, err := s.opts.StateCodec.Open(ctx, *c.params.RequestState, s.binding(c, name, args))
	if err != nil {
		var je *Error
		if errors.As(err, &je) {
			return je
		}
		return ErrInvalidParams("Invalid requestState: %v", err)
	}
	c.req.Round, c.req.continuation = round, cont
	return nil
}

func (s *Server) binding(c *call, name string, args json.RawMessage) mrtr.Binding {
	return mrtr.Binding{Method: c.msg.method, Name: name, Subject: c.req.Principal.Subject, Arguments: args}
}

// pause answers a round with an InputRequiredResult, after checking that the
// client declared every capability the input requests need.
func (s *Server) pause(ctx context.Context, c *call, name string, args json.RawMessage, ir *InputRequiredError) ([]byte, *Error) {
	if missing, what := missingCapabilities(&c.req.Capabilities, ir.Requests); missing != nil {
		return nil, ErrMissingCapability("This request needs the client's "+what+" capability", *missing)
	}
	cont, err := json.Marshal(ir.Continuation)
	if err != nil {
		return nil, s.toError(c.msg.method, err)
	}
	token, err := s.opts.StateCodec.Seal(ctx, s.binding(c, name, args), c.req.Round+1, cont)
	if err != nil {
		return nil, s.toError(c.msg.method, err)
	}
	if c.legacy {
		// A legacy session asks the client itself and runs the handler
		// again (session.serve); nothing is encoded.
		c.paused = &pausedRound{requests: ir.Requests, state: token}
		return nil, nil
	}
	return s.encodeResult(ResultInputRequired, struct {
		InputRequests map[string]InputRequest `json:"inputRequests,omitempty"`
		RequestState  string                  `json:"requestState"`
	}{ir.Requests, token}, false)
}

// missingCapabilities returns the capabilities the input requests need that
// the client did not declare, and a word naming them.
func missingCapabilities(caps *ClientCapabilities, reqs map[string]InputRequest) (*ClientCapabilities, string) {
	var need ClientCapabilities
	var names []string
	for _, r := range reqs {
		switch r.Method {
		case MethodElicit:
			url := false
			switch p := r.Params.(type) {
			case ElicitParams:
				url = p.Mode == "url"
			case *ElicitParams:
				url = p != nil && p.Mode == "url"
			}
			if caps.Elicitation == nil || (url && caps.Elicitation.URL == nil) {
				need.Elicitation = &ElicitationCapability{}
				if url {
					need.Elicitation.URL = &struct{}{}
				}
				names = append(names, "elicitation")
			}
		case MethodCreateMessage:
			if caps.Sampling == nil {
				need.Sampling = &SamplingCapability{}
				names = append(names, "sampling")
			}
		case MethodListRoots:
			if caps.Roots == nil {
				need.Roots = &struct{}{}
				names = append(names, "roots")
			}
		}
	}
	if names == nil {
		return nil, ""
	}
	return &need, strings.Join(names, " and ")
}

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
