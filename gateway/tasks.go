package gateway

import (
	"bytes"
	"container/list"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
	"github.com/mcpgate/mcpgate/proxy"
	"github.com/mcpgate/mcpgate/tasks"
)

// Polling bounds for an upstream long-running operation.
const (
	minPoll     = 500 * time.Millisecond
	defaultPoll = 2 * time.Second
	maxPoll     = time.Minute
)

// taskCheckpoint is what a task tool's worker records durably (through
// tasks.Exec.Checkpoint) so that a re-run after a crash, on any replica,
// goes on from where the task stood instead of guessing.
type taskCheckpoint struct {
	// Location is the status URL of the operation the upstream accepted
	// (202): a re-run polls it instead of sending the request again.
	Location     string `json:"location,omitempty"`
	RetryAfterMs int64  `json:"retryAfterMs,omitempty"`
	// IdempotencyKey is the key sent in the Idempotency-Key header the API
	// declares: a re-run sends the same key, so the API applies the
	// request once.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// taskRun runs a task tool: the upstream call, and when the upstream answers
// 202 Accepted with a Location, polling that location (honouring
// Retry-After) until the operation is done. In a worker it records where
// the task stands before each step that matters (tasks.Stage): in doubt
// before a request that must not be repeated, resumable once a resend is
// safe (an idempotency key) or the upstream accepted the operation, so
// recovery re-runs, resumes or fails the task knowing which.
func (g *Gateway) taskRun(a *api, ep *proxy.Endpoint) func(ctx context.Context, req *mcp.TaskRequest) (*mcp.CallToolResult, error) {
	keyArg := idempotencyKeyArgument(ep.Tool())
	return func(ctx context.Context, req *mcp.TaskRequest) (*mcp.CallToolResult, error) {
		p := req.Principal
		if a.cfg.Credentials.Mode == "oauth" {
			// The user's own grant, from the store, on any replica.
			var err error
			if ctx, err = g.conn.WithToken(ctx, a.connectName(), p); err != nil {
				return mcp.ToolError("This task cannot call the API with your account: " + err.Error() + ". Connect your account (call any tool of this API) and call the tool again."), nil
			}
		} else if req.TaskID == "" && a.creds.forward != nil {
			// Run inline: the request's own validated token is in ctx.
			bound, err := a.creds.bind(ctx)
			if err != nil {
				return toolError(err)
			}
			p = mcp.PrincipalFrom(bound)
		} else if req.TaskID != "" || p.Credential.IsZero() {
			// In a worker: the credential sealed with the task, or
			// remembered for this caller (already checked or exchanged for
			// the upstream).
			p.Credential = g.taskCredential(ctx, p.Subject, req.Name)
		}
		if p.Credential.IsZero() && a.creds.needsCallerCredential() && p.Subject != "" {
			return mcp.ToolError("This task lost the caller's credential (it was taken over by another gateway process, and credentials are kept in memory only): call the tool again."), nil
		}
		ctx = mcp.WithPrincipal(ctx, p)
		x := tasks.ExecFrom(ctx) // nil when running inline
		var cp taskCheckpoint
		if x != nil && len(x.Task().Checkpoint) > 0 {
			_ = json.Unmarshal(x.Task().Checkpoint, &cp) // an unreadable one is as none
		}
		var r *proxy.DispatchResult
		var err error
		if cp.Location != "" {
			// Accepted before this worker: only the polling remains.
			r = &proxy.DispatchResult{Accepted: &proxy.Accepted{Location: cp.Location, RetryAfter: time.Duration(cp.RetryAfterMs) * time.Millisecond}}
		} else {
			args, serr := g.beforeSend(ctx, x, ep, keyArg, req.Arguments, &cp)
			if serr != nil {
				return nil, serr
			}
			r, err = ep.Proxy().Do(ctx, ep, args)
		}
		if err == nil && r.Accepted != nil && req.TaskID == "" {
			return g.waitInline(ctx, a, ep, req, r)
		}
		for err == nil && r.Accepted != nil {
			acc := r.Accepted
			if cp.Location != acc.Location {
				cp.Location, cp.RetryAfterMs = acc.Location, acc.RetryAfter.Milliseconds()
				if err := checkpoint(ctx, x, tasks.StageResumable, cp); err != nil {
					return nil, err
				}
				_ = req.SetStatus(ctx, "The API accepted the operation; waiting for it to finish")
			}
			select {
			case <-time.After(pollWait(acc)):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			r, err = ep.Proxy().Poll(ctx, ep, acc)
		}
		if err != nil {
			return nil, err
		}
		return r.Result, nil
	}
}

// pollWait is how long to wait before polling an accepted operation: its
// Retry-After within bounds, or defaultPoll.
func pollWait(acc *proxy.Accepted) time.Duration {
	wait := acc.RetryAfter
	if wait <= 0 {
		wait = defaultPoll
	}
	return min(max(wait, minPoll), maxPoll)
}

// waitInline is the answer to a client without the Tasks extension whose
// call the upstream accepted (202): it polls the operation inside the call
// for up to task_inline_wait, reporting progress, and returns its
// result; if it is still running then, a result that says so and names
// the tool call that reads its status (never the upstream's address, which
// the agent can neither reach nor authenticate to).
func (g *Gateway) waitInline(ctx context.Context, a *api, ep *proxy.Endpoint, req *mcp.TaskRequest, r *proxy.DispatchResult) (*mcp.CallToolResult, error) {
	bound := g.cfg.TaskInlineWait
	deadline := time.Now().Add(bound)
	for polls := 1; r.Accepted != nil; polls++ {
		acc := r.Accepted
		wait := pollWait(acc)
		if bound < 0 || time.Now().Add(wait).After(deadline) {
			return a.stillRunning(r, max(bound, 0)), nil
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		next, err := ep.Proxy().Poll(ctx, ep, acc)
		if err != nil {
			return nil, err
		}
		r = next
		if r.Accepted != nil {
			_ = req.Progress(float64(polls), 0, "The API accepted the operation; waiting for it to finish")
		}
	}
	return r.Result, nil
}

// stillRunning is the result for an accepted operation that did not finish
// within the inline wait: what the upstream last said about it, and how to
// read its status.
func (a *api) stillRunning(r *proxy.DispatchResult, waited time.Duration) *mcp.CallToolResult {
	note := "The API accepted the operation and it is still running"
	if waited > 0 {
		note += " after " + waited.Round(time.Second).String()
	}
	if tool, args, ok := a.statusCall(r.Accepted.Location); ok {
		b, _ := json.Marshal(args)
		note += fmt.Sprintf(". Call %s with %s to read its status.", tool, b)
	} else {
		note += "; none of these tools reads its status, so check the API itself before calling this tool again."
	}
	out := &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(note)}}
	if r.Result != nil && r.Result.StructuredContent != nil && !r.Result.IsError {
		out.StructuredContent = r.Result.StructuredContent
		if b, ok := r.Result.StructuredContent.(json.RawMessage); ok {
			out.Content = append(out.Content, mcp.TextContent(string(b)))
		} else if b, err := json.Marshal(r.Result.StructuredContent); err == nil {
			out.Content = append(out.Content, mcp.TextContent(string(b)))
		}
	}
	return out
}

// statusCall names the tool call that reads the status at location, on
// whichever of the API's servers it is (the upstream, or an operation's
// own: see operation_servers).
func (a *api) statusCall(location string) (tool string, args map[string]any, ok bool) {
	eps := a.statusEndpoints()
	tried := map[*proxy.Proxy]bool{}
	for _, e := range eps {
		if p := e.Proxy(); !tried[p] {
			tried[p] = true
			if tool, args, ok := p.StatusCall(location, eps); ok {
				return tool, args, true
			}
		}
	}
	return "", nil, false
}

// statusEndpoints are the compiled endpoints of every tool of the API,
// for StatusCall; compiled once, on first use.
func (a *api) statusEndpoints() []*proxy.Endpoint {
	a.statusOnce.Do(func() {
		for i := range a.tools {
			if e, err := a.proxyFor(&a.tools[i]).Endpoint(&a.tools[i]); err == nil {
				a.statusEps = append(a.statusEps, e)
			}
		}
	})
	return a.statusEps
}

// beforeSend records, in a worker, what a re-run must know about the
// request about to be sent, and returns the arguments to send: with an
// Idempotency-Key header the API declares, the key (the caller's, the one
// an earlier run sent, or a fresh one) is sent and recorded, and a resend
// is safe; otherwise a request that must not be repeated (a write) is in
// doubt from now until the upstream answers.
func (g *Gateway) beforeSend(ctx context.Context, x *tasks.Exec, ep *proxy.Endpoint, keyArg string, args json.RawMessage, cp *taskCheckpoint) (json.RawMessage, error) {
	if x == nil {
		return args, nil
	}
	if keyArg != "" {
		args, key, err := withIdempotencyKey(args, keyArg, cp.IdempotencyKey)
		if err != nil {
			return args, nil // not an object: the proxy reports the arguments
		}
		cp.IdempotencyKey = key
		return args, checkpoint(ctx, x, tasks.StageResumable, *cp)
	}
	if ep.Tool().Route.Mutating {
		return args, x.Checkpoint(ctx, tasks.StageInDoubt, nil)
	}
	return args, nil // a read: re-running it is harmless
}

// checkpoint records stage and cp on the running task.
func checkpoint(ctx context.Context, x *tasks.Exec, stage tasks.Stage, cp taskCheckpoint) error {
	b, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	return x.Checkpoint(ctx, stage, b)
}

// idempotencyKeyArgument returns the argument of the operation's
// Idempotency-Key header parameter, or "" when it declares none.
func idempotencyKeyArgument(t *openapi.Tool) string {
	for _, a := range t.Route.Arguments {
		if a.In == openapi.InHeader && strings.EqualFold(a.Param, "Idempotency-Key") {
			return a.Name
		}
	}
	return ""
}

// withIdempotencyKey returns args with the key argument set: to its value
// in args if the caller gave one, else to key, else to a fresh UUID.
func withIdempotencyKey(args json.RawMessage, name, key string) (json.RawMessage, string, error) {
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(args)) > 0 && string(bytes.TrimSpace(args)) != "null" {
		if err := json.Unmarshal(args, &m); err != nil {
			return args, "", err
		}
	}
	var given string
	if v, ok := m[name]; ok && json.Unmarshal(v, &given) == nil && given != "" {
		return args, given, nil
	}
	if key == "" {
		key = newUUID()
	}
	m[name], _ = json.Marshal(key)
	out, err := json.Marshal(m)
	return out, key, err
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// prepareTask runs before a task is created, as the creating caller: it
// asks for confirmation when the tool needs it, then remembers the
// credential the task's worker will forward upstream (the caller's own, or
// with auth mode oauth the one checked or exchanged for the API): in
// memory, and sealed with the task (taskSecrets) unless task_credentials
// is memory.
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
		g.taskCreds.put(vaultKey(p.Subject, req.Name), p.Credential)
		return nil
	}
}

// vaultKey is where the credential for one caller's tasks of one tool is
// remembered (each API may get a different credential of the caller's).
func vaultKey(subject, tool string) string { return subject + "\x00" + tool }

// credentialVault remembers, in memory only, the latest credential of each
// subject for each tool, so that a task's worker can call the upstream as
// its creator.
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
