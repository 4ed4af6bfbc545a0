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

// TaskOptions are the settings of the gateway's task path that Config does
// not carry yet; pass them to New with WithTaskOptions. Zero values take
// the defaults noted.
type TaskOptions struct {
	// ShutdownGrace is how long a stopping gateway (SIGINT, SIGTERM, the
	// end of stdin) lets running tasks finish before it stops them and
	// releases their leases for the next process or another replica
	// (default 30 s; negative: none).
	ShutdownGrace time.Duration
	// MemoryOnlyCredentials keeps a task's credential (passthrough and
	// exchange modes) in this process's memory only, never in the store:
	// then a task taken over by another replica or the next process after
	// a crash cannot call the API as its caller and ends with a tool error
	// asking to call again. By default the credential is kept sealed with
	// the task and deleted when it ends.
	MemoryOnlyCredentials bool
}

// An Option changes how New builds a gateway.
type Option func(*Gateway)

// WithTaskOptions sets the task path's options.
func WithTaskOptions(o TaskOptions) Option { return func(g *Gateway) { g.taskOpts = o } }

// Polling bounds for an upstream long-running operation.
const (
	minPoll     = 500 * time.Millisecond
	defaultPoll = 2 * time.Second
	maxPoll     = time.Minute
)

// taskRun runs a task tool: the upstream call, and when the upstream answers
// 202 Accepted with a Location, polling that location (honouring
// Retry-After) until the operation is done.
func (g *Gateway) taskRun(ep *proxy.Endpoint) func(ctx context.Context, req *mcp.TaskRequest) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, req *mcp.TaskRequest) (*mcp.CallToolResult, error) {
		p := req.Principal
		if req.TaskID == "" && g.oauth != nil && g.oauth.forwarding != nil {
			// Run inline: the request's own validated token is in ctx.
			bound, err := g.oauth.forwarding.Bind(ctx)
			if err != nil {
				return mcp.ToolError("Could not obtain a credential for the API: " + err.Error()), nil
			}
			p = mcp.PrincipalFrom(bound)
		} else if req.TaskID != "" || p.Credential == "" {
			// In a worker: the credential sealed with the task, or
			// remembered for this caller (already checked or exchanged for
			// the upstream).
			p.Credential = g.taskCredential(ctx, p.Subject)
		}
		if p.Credential == "" && g.cfg.Credentials.Mode == "passthrough" && p.Subject != "" {
			return mcp.ToolError("This task lost the caller's credential (it was taken over by another gateway process, and credentials are kept in memory only): call the tool again."), nil
		}
		ctx = mcp.WithPrincipal(ctx, p)
		r, err := g.proxy.Do(ctx, ep, req.Arguments)
		for err == nil && r.Accepted != nil {
			acc := r.Accepted
			if req.TaskID == "" {
				return r.Result, nil // not a task: report the accepted operation and where to poll
			}
			_ = req.SetStatus(ctx, "Accepted by the upstream; polling "+acc.Location)
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
			r, err = g.proxy.Poll(ctx, ep, acc)
		}
		if err != nil {
			return nil, err
		}
		return r.Result, nil
	}
}

// prepareTask runs before a task is created, as the creating caller: it
// asks for confirmation when the tool needs it, then remembers the
// credential the task's worker will forward upstream (the caller's own, or
// with auth mode oauth the one checked or exchanged for the upstream): in
// memory, and sealed with the task (taskSecrets) unless
// TaskOptions.MemoryOnlyCredentials.
func (g *Gateway) prepareTask(confirm func(context.Context, *mcp.CallToolRequest) error) func(context.Context, *mcp.CallToolRequest) error {
	return func(ctx context.Context, req *mcp.CallToolRequest) error {
		if confirm != nil {
			if err := confirm(ctx, req); err != nil {
				return err
			}
		}
		p := req.Principal
		if g.oauth != nil && g.oauth.forwarding != nil {
			bound, err := g.oauth.forwarding.Bind(ctx)
			if err != nil {
				return mcp.NewError(mcp.CodeInvalidParams, "No credential can be forwarded to the API for this token: "+err.Error(), nil)
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
	creds map[string]string
}

func newCredentialVault() *credentialVault {
	return &credentialVault{max: 10_000, order: list.New(), m: map[string]*list.Element{}, creds: map[string]string{}}
}

func (v *credentialVault) put(subject, cred string) {
	if subject == "" || cred == "" {
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

func (v *credentialVault) get(subject string) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.creds[subject]
}

func (v *credentialVault) String() string {
	return fmt.Sprintf("credentialVault(%d subjects; redacted)", len(v.creds))
}
