package tasks_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpgate/mcpgate/tasks"
)

// gcmSealer is a test Sealer: AES-256-GCM with a random nonce.
type gcmSealer struct{ aead cipher.AEAD }

func newGCMSealer(t *testing.T) gcmSealer {
	key := make([]byte, 32)
	rand.Read(key)
	block, err := aes.NewCipher(key)
	must(t, err)
	aead, err := cipher.NewGCMWithRandomNonce(block)
	must(t, err)
	return gcmSealer{aead}
}

func (s gcmSealer) Seal(plain, aad []byte) ([]byte, error) {
	return s.aead.Seal(nil, nil, plain, aad), nil
}
func (s gcmSealer) Open(sealed, aad []byte) ([]byte, error) {
	return s.aead.Open(nil, nil, sealed, aad)
}

func TestRunnerKeepsTheTaskSecretSealed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sealer := newGCMSealer(t)
		secrets := &tasks.Secrets{Sealer: sealer, Capture: func(ctx context.Context, nt tasks.NewTask) ([]byte, error) {
			if nt.ToolName == "plain" {
				return nil, nil
			}
			return []byte("Bearer s3cr3t-of-" + nt.Owner.Subject), nil
		}}
		g := newRig(t, false, tasks.RunnerConfig{Secrets: secrets})
		var mu sync.Mutex
		seen := map[string]string{}
		run := func(ctx context.Context, x *tasks.Exec) (json.RawMessage, error) {
			if tasks.ExecFrom(ctx) != x {
				t.Error("ExecFrom(ctx) is not the running task")
			}
			s, err := x.Secret()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				seen[x.Task().ID] = "error: " + err.Error()
			} else {
				seen[x.Task().ID] = string(s)
			}
			return json.RawMessage(`{}`), nil
		}
		g.r.Handle("call", handler(run))
		g.r.Handle("plain", handler(run))
		if tasks.ExecFrom(context.Background()) != nil {
			t.Fatal("ExecFrom outside a task")
		}

		// The store holds the secret sealed, never in the clear.
		tk := g.submit("call", `{}`)
		stored, _ := g.m.Get(context.Background(), owner, tk.ID)
		if len(stored.Secret) == 0 || bytes.Contains(stored.Secret, []byte("s3cr3t")) {
			t.Fatalf("stored secret %q", stored.Secret)
		}
		plain := g.submit("plain", `{}`)
		if got, _ := g.m.Get(context.Background(), owner, plain.ID); got.Secret != nil {
			t.Fatalf("Capture kept nothing, the store has %q", got.Secret)
		}
		// A sealed secret copied to another owner's task does not open.
		bob := tasks.Principal{Subject: "bob"}
		moved, err := g.m.Create(context.Background(), tasks.NewTask{Owner: bob, ToolName: "call", Secret: stored.Secret})
		must(t, err)

		g.start()
		g.await(tk.ID, tasks.Completed)
		g.await(plain.ID, tasks.Completed)
		for i := 0; ; i++ {
			synctest.Wait()
			if got, _ := g.m.Get(context.Background(), bob, moved.ID); got.Status == tasks.Completed {
				break
			}
			if i == 100 {
				t.Fatal("bob's task did not complete")
			}
			time.Sleep(100 * time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		if seen[tk.ID] != "Bearer s3cr3t-of-alice" {
			t.Errorf("the handler read %q", seen[tk.ID])
		}
		if seen[plain.ID] != "" {
			t.Errorf("a task without a secret read %q", seen[plain.ID])
		}
		if got := seen[moved.ID]; got == "Bearer s3cr3t-of-alice" || got[:6] != "error:" {
			t.Errorf("a secret moved to bob's task opened: %q", got)
		}
		if got, _ := g.m.Get(context.Background(), owner, tk.ID); got.Secret != nil {
			t.Errorf("the finished task keeps its secret")
		}
	})
}

func TestRunnerSecretErrors(t *testing.T) {
	// Capture failing fails the submission; Secrets without a Sealer
	// refuse to keep anything.
	boom := errors.New("no credential")
	g := newRig(t, false, tasks.RunnerConfig{Secrets: &tasks.Secrets{Sealer: newGCMSealer(t),
		Capture: func(context.Context, tasks.NewTask) ([]byte, error) { return nil, boom }}})
	g.r.Handle("call", handler(func(context.Context, *tasks.Exec) (json.RawMessage, error) { return nil, nil }))
	if _, err := g.r.Submit(context.Background(), tasks.NewTask{Owner: owner, ToolName: "call"}); !errors.Is(err, boom) {
		t.Fatalf("Submit with a failing Capture: %v", err)
	}
	noSealer := newRig(t, false, tasks.RunnerConfig{Secrets: &tasks.Secrets{
		Capture: func(context.Context, tasks.NewTask) ([]byte, error) { return []byte("x"), nil }}})
	noSealer.r.Handle("call", handler(func(context.Context, *tasks.Exec) (json.RawMessage, error) { return nil, nil }))
	if _, err := noSealer.r.Submit(context.Background(), tasks.NewTask{Owner: owner, ToolName: "call"}); err == nil {
		t.Fatal("Submit sealed a secret without a Sealer")
	}
}
