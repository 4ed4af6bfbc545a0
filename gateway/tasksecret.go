package gateway

import (
	"context"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/mrtr"
	"github.com/mcpgate/mcpgate/secretbox"
	"github.com/mcpgate/mcpgate/tasks"
)

// taskSecrets keeps the credential a task's worker forwards upstream
// sealed with the task in the store (for APIs whose calls carry the
// caller's own credential: passthrough and exchange), so that whichever
// replica runs the task, after a crash or a restart, calls the API as the
// task's creator. Nil (nothing kept) when no API needs it, and with
// task_credentials memory.
func (g *Gateway) taskSecrets(ring *mrtr.KeyRing, apis []*api) (*tasks.Secrets, error) {
	if g.cfg.TaskCredentials == "memory" {
		return nil, nil
	}
	needed := false
	for _, a := range apis {
		needed = needed || a.creds.needsCallerCredential()
	}
	if !needed {
		return nil, nil
	}
	box, err := secretbox.New(ring, "task-credential")
	if err != nil {
		return nil, err
	}
	return &tasks.Secrets{Sealer: box, Capture: func(ctx context.Context, nt tasks.NewTask) ([]byte, error) {
		// prepareTask has just remembered the credential to forward (the
		// caller's own, or the one checked or exchanged for the API).
		cred := g.taskCreds.get(vaultKey(nt.Owner.Subject, nt.ToolName))
		if cred.IsZero() {
			cred = mcp.PrincipalFrom(ctx).Credential
		}
		if cred.IsZero() {
			return nil, nil
		}
		return []byte(cred.Reveal()), nil
	}}, nil
}

// taskCredential is the credential a task's worker forwards: the one
// sealed with the task, else the one this process remembers for its
// creator and tool (a task created before storing was on, or whose sealing
// key is gone), else none.
func (g *Gateway) taskCredential(ctx context.Context, subject, tool string) mcp.Secret {
	if x := tasks.ExecFrom(ctx); x != nil {
		cred, err := x.Secret()
		if err != nil {
			g.logger.Warn("tasks: the task's sealed credential does not open; using this process's memory", "task", x.Task().ID, "err", err)
		} else if cred != nil {
			return mcp.NewSecret(string(cred))
		}
	}
	return g.taskCreds.get(vaultKey(subject, tool))
}
