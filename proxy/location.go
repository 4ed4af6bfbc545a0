package proxy

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
)

// StatusCall names the tool call that reads the status of an operation the
// upstream accepted: the GET endpoint among eps whose route matches
// location (an [Accepted] Location: an absolute URL on the upstream), and
// the arguments that make exactly that request. Typed path and query
// values are converted to the argument's schema type (integer, number,
// boolean, else string). ok is false when location is on another origin or
// outside the base URL's path, when no GET route matches it, or when the
// matching route needs an argument the URL does not carry (a header, a
// body) or the URL has a query parameter the route does not declare. Of
// several matching routes the most specific (the most literal text) wins.
//
// A gateway tells an agent this call instead of the upstream's address,
// which the agent can neither reach nor authenticate to.
func (p *Proxy) StatusCall(location string, eps []*Endpoint) (tool string, args map[string]any, ok bool) {
	u, err := url.Parse(location)
	if err != nil || !u.IsAbs() || !p.sameOrigin(u) {
		return "", nil, false
	}
	rest, found := strings.CutPrefix(u.EscapedPath(), p.basePath)
	if !found || (rest != "" && rest[0] != '/') {
		return "", nil, false
	}
	best := -1
	for _, e := range eps {
		if e == nil || e.proxy != p || e.method != "GET" {
			continue
		}
		a, literal, matched := e.matchStatusURL(rest, u.Query())
		if matched && literal > best {
			tool, args, best = e.tool.Name, a, literal
		}
	}
	return tool, args, best >= 0
}

// matchStatusURL matches an escaped path (after the base path) and a query
// against the endpoint's route; it returns the arguments and how much
// literal path text matched.
func (e *Endpoint) matchStatusURL(path string, query url.Values) (map[string]any, int, bool) {
	if len(e.queryTmpl) > 0 || e.whole != nil || len(e.bodyProps) > 0 && e.anyRequired(e.bodyProps) ||
		e.anyRequired(e.headers) || e.anyRequired(e.cookies) {
		return nil, 0, false
	}
	types := e.argumentTypes()
	args := map[string]any{}
	literal := 0
	for i, part := range e.pathParts {
		if part.param == nil {
			if !strings.HasPrefix(path, part.literal) {
				return nil, 0, false
			}
			path, literal = path[len(part.literal):], literal+len(part.literal)
			continue
		}
		end := strings.IndexByte(path, '/')
		if end < 0 {
			end = len(path)
		}
		if i+1 < len(e.pathParts) && !strings.HasPrefix(e.pathParts[i+1].literal, "/") {
			// A literal inside the segment ("{id}.json") ends the value.
			j := strings.Index(path[:end], e.pathParts[i+1].literal)
			if j < 0 {
				return nil, 0, false
			}
			end = j
		}
		raw, err := url.PathUnescape(path[:end])
		if err != nil || raw == "" {
			return nil, 0, false
		}
		v, ok := typed(raw, types[part.param.Name])
		if !ok {
			return nil, 0, false
		}
		args[part.param.Name] = v
		path = path[end:]
	}
	if path != "" && path != "/" {
		return nil, 0, false
	}
	known := map[string]*param{}
	for _, q := range e.query {
		known[q.Param] = q
	}
	for key, values := range query {
		q := known[key]
		if q == nil || len(values) != 1 {
			return nil, 0, false
		}
		v, ok := typed(values[0], types[q.Name])
		if !ok {
			return nil, 0, false
		}
		args[q.Name] = v
	}
	for _, q := range e.query {
		if _, given := args[q.Name]; q.Required && !given {
			return nil, 0, false
		}
	}
	return args, literal, true
}

func (e *Endpoint) anyRequired(ps []*param) bool {
	for _, p := range ps {
		if p.Required {
			return true
		}
	}
	return false
}

// argumentTypes reads each argument's JSON Schema type from the tool's
// input schema ("" when it names none or several).
func (e *Endpoint) argumentTypes() map[string]string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(e.tool.InputSchema, &s)
	out := make(map[string]string, len(s.Properties))
	for name, p := range s.Properties {
		if t, ok := p.Type.(string); ok {
			out[name] = t
		}
	}
	return out
}

// typed converts a path or query value to an argument of JSON Schema type
// t.
func typed(s, t string) (any, bool) {
	switch t {
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	case "number":
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	case "boolean":
		b, err := strconv.ParseBool(s)
		return b, err == nil
	}
	return s, true
}
