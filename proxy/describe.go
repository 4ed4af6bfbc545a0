package proxy

import (
	"encoding/json"
	"strings"
)

// Describe is the request a call with args would send, as the person asked
// to confirm it reads it: the method, then the path and query exactly as
// they would be sent, below the API's base URL (never the upstream's
// address): "DELETE /pets/42". Arguments that do not validate give the
// error a call would give.
func (p *Proxy) Describe(e *Endpoint, args json.RawMessage) (string, error) {
	m, err := e.decodeArgs(args)
	if err != nil {
		return "", err
	}
	var bad argErrors
	u, err := p.requestURL(e, m, &bad)
	if err != nil {
		return "", err
	}
	if err := bad.err(); err != nil {
		return "", err
	}
	target := strings.TrimPrefix(u.EscapedPath(), p.basePath)
	if !strings.HasPrefix(target, "/") {
		target = "/" + target
	}
	if u.RawQuery != "" {
		target += "?" + u.RawQuery
	}
	return e.tool.Route.Method + " " + target, nil
}
