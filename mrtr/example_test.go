package mrtr_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/mcpgate/mcpgate/mrtr"
)

// A tool pauses to ask which repository to use, then resumes on the retry.
func Example() {
	ring := mrtr.GenerateKeyRing(slog.New(slog.DiscardHandler)) // production: mrtr.KeyRingFromEnv
	codec, err := mrtr.NewCodec(ring, mrtr.Options{ReplayCache: mrtr.NewMemoryReplayCache(0, nil)})
	if err != nil {
		panic(err)
	}
	req := mrtr.Binding{
		Method:    "tools/call",
		Name:      "create_issue",
		Subject:   "user-12", // from the validated access token
		Arguments: json.RawMessage(`{"title":"Bug"}`),
	}
	type step struct {
		Asked string `json:"asked"`
	}

	// Round 1: answer with InputRequiredResult{requestState: token}.
	token, err := codec.Seal(req, 1, step{Asked: "repo"})
	if err != nil {
		panic(err)
	}

	// Round 2: the retry echoes the token; the binding comes from the retry.
	st, err := codec.Open(context.Background(), token, req)
	if err != nil {
		panic(err) // the core answers -32602 with err.Error()
	}
	var s step
	err = st.Decode(&s)
	fmt.Println(st.Round, s.Asked, err)

	// The same token again, or from another caller, is rejected.
	_, err = codec.Open(context.Background(), token, req)
	fmt.Println(err)
	req.Subject = "user-13"
	_, err = codec.Open(context.Background(), token, req)
	fmt.Println(err)
	// Output:
	// 1 repo <nil>
	// requestState was already used
	// requestState belongs to another caller
}
