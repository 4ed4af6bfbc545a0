package gateway

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/proxy"
)

// Polling bounds for an upstream long-running operation.
const (
	minPoll     = 500 * time.Millisecond
	defaultPoll = 2 * time.Second
	maxPoll     = time.Minute
)

// taskRun runs a task tool: the upstream call, and when the upstream answers
// 202 Accepted with a Location, polling that location (honouring
// Retry-After) until the operation is done.
func (g *Gateway) taskRun(a *api, ep *proxy.Endpoint) func(ctx context.Context, req *mcp.TaskRequest) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, req *mcp.TaskRequest) (*mcp.CallToolResult, error) {
		p := req.Principal
		if req.TaskID == "" && a.creds.forward != nil {
			// Run inline: the request's own validated token is in ctx.
			bound, err := a.creds.bind(ctx)
			if err != nil {
				return toolError(err)
			}
			p = mcp.PrincipalFrom(bound)
		} else if req.TaskID != "" || p.Credential.IsZero() {
			// In a worker: the credential remembered for this caller
			// (already checked or exchanged for the upstream).
			p.Credential = g.taskCreds.get(p.Subject)
		}
		if p.Credential.IsZero() && a.cfg.Credentials.Mode == "passthrough" && p.Subject != "" {
			return mcp.ToolError("This task lost the caller's credential (the gateway restarted, and credentials are never stored): call the tool again."), nil
		}
		ctx = mcp.WithPrincipal(ctx, p)
		r, err := a.proxy.Do(ctx, ep, req.Arguments)
		for err == nil && r.Accepted != nil {
			acc := r.Accepted
			if req.TaskID == "" {
				return r.Result, nil // not a task: report the accepted operation and where to poll
			}
			_ = req.SetStatus(ctx, "Accepted by the upstream; polling its status "+acc.Path) // never acc.Location: the upstream's address
			wait := acc.RetryAfter
			if wait <= 0 {
				wait = defaultPoll
			}
			wait = min(max(wait, minPoll), maxPoll)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			r, err = a.proxy.Poll(ctx, ep, acc)
		}
		if err != nil {
			return nil, err
		}
		return r.Result, nil
	}
}

// prepareTask runs before a task is created, as the creating caller: it
// asks for confirmation when the tool needs it, then remembers (in memory
// only) the credential the task's worker will forward upstream: the
// caller's own, or with auth mode oauth the one checked or exchanged for
// the upstream.
func (g *Gateway) prepareTask(a *api, confirm func(context.Context, *mcp.CallToolRequest) error) func(context.Context, *mcp.CallToolRequest) error {
	return func(ctx context.Context, req *mcp.CallToolRequest) error {
		if confirm != nil {
			if err := confirm(ctx, req); err != nil {
				return err
			}
		}
		p := req.Principal
		if a.creds.forward != nil {
			bound, err := a.creds.bind(ctx)
			if err != nil {
				return mcp.NewError(mcp.CodeInvalidParams, err.Error(), nil)
			}
			p = mcp.PrincipalFrom(bound)
		}
		g.taskCreds.put(p.Subject, p.Credential)
		return nil
	}
}

// credentialVault remembers, in memory only, the latest credential of each
// subject, so that a task's worker can call the upstream as its creator.
// It is bounded: the least recently seen subjects are forgotten first.
type credentialVault struct {
	mu    sync.Mutex
	max   int
	order *list.List // of string subjects, most recent first
	m     map[string]*list.Element
	creds map[string]mcp.Secret
}

func newCredentialVault() *credentialVault {
	return &credentialVault{max: 10_000, order: list.New(), m: map[string]*list.Element{}, creds: map[string]mcp.Secret{}}
}

func (v *credentialVault) put(subject string, cred mcp.Secret) {
	if subject == "" || cred.IsZero() {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if e, ok := v.m[subject]; ok {
		v.order.MoveToFront(e)
	} else {
		v.m[subject] = v.order.PushFront(subject)
	}
	v.creds[subject] = cred
	for v.order.Len() > v.max {
		e := v.order.Back()
		s := e.Value.(string)
		v.order.Remove(e)
		delete(v.m, s)
		delete(v.creds, s)
	}
}

func (v *credentialVault) get(subject string) mcp.Secret {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.creds[subject]
}

func (v *credentialVault) String() string {
	return fmt.Sprintf("credentialVault(%d subjects; redacted)", len(v.creds))
}
