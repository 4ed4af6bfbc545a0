package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// The proxy sends its requests with the transport's RoundTrip and follows
// redirects itself, by the rules below, instead of through http.Client:
// the client clones every request's header for a redirect that almost
// never comes and carries the route in the context, a few allocations per
// call that this loop does not make. The rules are security rules:
//
//   - A redirect to another origin (scheme, host or port differ from
//     Config.BaseURL) is never followed, so its target never receives a
//     request, and so never a credential: the 3xx itself is the answer,
//     which render reports.
//   - At most Config.MaxRedirects same-origin redirects are followed (none
//     when it is negative: the 3xx is the answer); one more is
//     errTooManyRedirects.
//   - Each hop is a new request built from the first one: its header
//     (without the body's headers when the body is dropped), then the
//     credentials applied again by the resolver, since a query credential
//     is not part of a Location; the resolver must leave it on the origin.
//     User info in a Location is dropped, so no hop carries a credential
//     the resolver did not put there.
//   - Methods and bodies as net/http does it: 301, 302 and 303 turn a
//     request other than GET or HEAD into a GET without a body; 307 and
//     308 repeat the method and the body (rewound; a body that cannot be
//     rewound is not re-sent and the 3xx is the answer).
//   - No Referer is added; the body of a followed 3xx is drained (a
//     little) and closed, so the connection is reused.

// roundTrip sends req and follows same-origin redirects. The response is
// the final one (perhaps a 3xx that is not followed); its Request is the
// request that got it.
func (p *Proxy) roundTrip(req *http.Request, e *Endpoint) (*http.Response, error) {
	first := req
	keepBody := true
	for hops := 0; ; hops++ {
		resp, err := p.rt.RoundTrip(req)
		if err != nil {
			return nil, err // the transport closed req.Body
		}
		if resp.Body == nil {
			resp.Body = http.NoBody
		}
		if resp.Request == nil {
			resp.Request = req
		}
		method, follow, withBody := redirectBehavior(req.Method, resp.StatusCode, first)
		if !follow || p.maxRedirects < 0 {
			return resp, nil
		}
		loc := resp.Header.Get("Location")
		if loc == "" {
			return resp, nil
		}
		target, err := req.URL.Parse(loc)
		if err != nil || !p.sameOrigin(target) {
			return resp, nil // reported, never requested
		}
		discard(resp)
		if hops >= p.maxRedirects {
			return nil, errTooManyRedirects
		}
		keepBody = keepBody && withBody
		if req, err = p.nextHop(first, method, target, keepBody, e); err != nil {
			return nil, err
		}
	}
}

// nextHop builds the request for a followed redirect to target.
func (p *Proxy) nextHop(first *http.Request, method string, target *url.URL, keepBody bool, e *Endpoint) (*http.Request, error) {
	target.User, target.Fragment, target.RawFragment = nil, "", ""
	h := make(http.Header, len(first.Header))
	for k, v := range first.Header {
		if !keepBody && bodyHeader(k) {
			continue
		}
		h[k] = v
	}
	var body io.ReadCloser
	var length int64
	if keepBody && first.GetBody != nil {
		var err error
		if body, err = first.GetBody(); err != nil {
			return nil, fmt.Errorf("proxy: tool %s: rewinding the body for a redirect: %w", e.tool.Name, err)
		}
		length = first.ContentLength
	}
	next := newRequest(first.Context(), method, target, h, body, length)
	if keepBody {
		next.GetBody = first.GetBody
	}
	return next, p.authorize(first.Context(), next, e, "Authentication failed on a redirect: ")
}

// redirectBehavior is net/http's: whether a response is a redirect to
// follow, with which method, and whether the body goes along.
func redirectBehavior(method string, status int, first *http.Request) (next string, follow, withBody bool) {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther:
		if method != http.MethodGet && method != http.MethodHead {
			method = http.MethodGet
		}
		return method, true, false
	case http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		if first.GetBody == nil && first.Body != nil && first.ContentLength != 0 {
			return method, false, false // cannot re-send the body
		}
		return method, true, true
	}
	return method, false, false
}

// bodyHeader names the headers that describe a body dropped on a redirect.
func bodyHeader(k string) bool {
	switch k {
	case "Content-Type", "Content-Encoding", "Content-Language", "Content-Location":
		return true
	}
	return false
}

// discard drains a little of a followed redirect's body and closes it, so
// the connection can carry the next hop.
func discard(resp *http.Response) {
	const slurp = 2 << 10
	if resp.ContentLength == -1 || resp.ContentLength <= slurp {
		_, _ = io.CopyN(io.Discard, resp.Body, slurp)
	}
	resp.Body.Close()
}

var errTooManyRedirects = errors.New("too many redirects")

// newRequest is http.NewRequestWithContext for a URL already built and a
// body already wrapped, in one allocation: the request literal stays on
// the stack and WithContext makes the one copy that is sent.
func newRequest(ctx context.Context, method string, u *url.URL, h http.Header, body io.ReadCloser, length int64) *http.Request {
	r := http.Request{
		Method: method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Host: u.Host, Body: body, ContentLength: length,
	}
	return r.WithContext(ctx)
}
