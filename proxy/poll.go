package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// Poll fetches the status resource of an earlier 202 Accepted (a GET of
// a.Location) with the credentials the endpoint's route gets, and renders
// the answer like any response of that endpoint (redaction included). The
// operation is still under way (Accepted is set again) when the answer is
// a further 202, or a 200 JSON object whose "status" or "state" is one of
// the usual in-progress words (running, pending, in_progress, queued, …);
// otherwise the answer is the operation's result. A Location on another
// origin is never requested (a tool error says so), so polling cannot
// carry a credential off the upstream. It is the hook a Tasks integration
// drives.
func (p *Proxy) Poll(ctx context.Context, e *Endpoint, a *Accepted) (*DispatchResult, error) {
	if a == nil {
		return nil, errors.New("proxy: Poll needs an Accepted")
	}
	if err := p.owns(e); err != nil {
		return nil, err
	}
	parent := ctx
	if p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	req, err := p.pollRequest(ctx, e, a)
	if err != nil {
		r, err := p.failed(err)
		if err != nil {
			return nil, err
		}
		return &r, nil
	}
	r := p.send(parent, ctx, e, req)
	if r.Accepted == nil && stillRunning(&r) {
		r.Accepted = &Accepted{Location: a.Location, Path: a.Path, RetryAfter: retryAfter(r.Header.Get("Retry-After"))}
	}
	return &r, nil
}

// pollRequest is the GET of a status location, with credentials.
func (p *Proxy) pollRequest(ctx context.Context, e *Endpoint, a *Accepted) (*http.Request, error) {
	u, err := url.Parse(a.Location)
	if err != nil || !u.IsAbs() {
		return nil, &callError{msg: "The status location of the accepted operation is not an absolute URL."}
	}
	if !p.sameOrigin(u) {
		return nil, &callError{msg: "The status location of the accepted operation is on another origin; it is not polled so that no credential leaves the configured upstream."}
	}
	u.Fragment, u.RawFragment, u.User = "", "", nil
	h := http.Header{"Accept": acceptAny}
	if p.userAgent != nil {
		h["User-Agent"] = p.userAgent
	}
	req := newRequest(ctx, http.MethodGet, u, h, nil, 0)
	return req, p.authorize(ctx, req, e, "Authentication failed: ")
}

// stillRunning reports whether a polled status resource says the
// operation is not finished.
func stillRunning(r *DispatchResult) bool {
	if r.Result == nil || r.Result.IsError || r.Status != http.StatusOK {
		return false
	}
	raw, ok := r.Result.StructuredContent.(json.RawMessage)
	if !ok {
		return false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return false
	}
	for _, k := range []string{"status", "state"} {
		var v string
		if json.Unmarshal(obj[k], &v) != nil {
			continue
		}
		switch strings.ToLower(strings.ReplaceAll(v, "_", "")) {
		case "running", "pending", "inprogress", "queued", "notstarted", "accepted", "working", "processing", "started":
			return true
		}
	}
	return false
}
