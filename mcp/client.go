package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Client drives a Server in-process: every call is encoded, decoded,
// admitted and dispatched exactly as a transport would, without a network.
// It is the simulator library users test their handlers with.
type Client struct {
	srv *Server
	// Capabilities are declared on every request (default: none).
	Capabilities ClientCapabilities
	// Principal is the caller every request is made as.
	Principal Principal
	// Info is sent as clientInfo.
	Info Implementation
	// AnswerInput answers the input requests of multi round-trip requests
	// (key, method and params of each). Without it, a call that needs input
	// fails with *UnansweredInputError.
	AnswerInput func(ctx context.Context, key string, req InputRequest) (any, error)
	// MaxRounds bounds automatic input rounds (default 10).
	MaxRounds int

	nextID atomic.Int64
}

// NewClient returns a client of s.
func NewClient(s *Server) *Client {
	return &Client{srv: s, Info: Implementation{Name: "mcpgate-inmemory-client", Version: "0"}}
}

// Response is one raw exchange: the notifications the server sent while
// serving the request, then its result or error.
type Response struct {
	Result        json.RawMessage
	Error         *Error
	Notifications []json.RawMessage
}

// Do sends method with params (a JSON object, or nil) after adding the
// required _meta, and returns the raw response.
func (c *Client) Do(ctx context.Context, method string, params map[string]any) (*Response, error) {
	p := make(map[string]any, len(params)+1)
	for k, v := range params {
		p[k] = v
	}
	meta := map[string]any{
		MetaProtocolVersion:    ProtocolVersion,
		MetaClientCapabilities: c.Capabilities,
		MetaClientInfo:         c.Info,
	}
	if m, ok := p["_meta"].(map[string]any); ok {
		for k, v := range m {
			meta[k] = v
		}
	}
	p["_meta"] = meta
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID.Add(1), "method": method, "params": p})
	if err != nil {
		return nil, fmt.Errorf("mcp client: encode %s: %w", method, err)
	}
	return c.DoRaw(ctx, body)
}

// DoRaw sends one raw JSON-RPC message.
func (c *Client) DoRaw(ctx context.Context, body []byte) (*Response, error) {
	resp := &Response{}
	msg, _, jerr := decodeMessage(body)
	if jerr != nil {
		resp.Error = jerr
		return resp, nil
	}
	ctx = WithPrincipal(ctx, c.Principal)
	var ob *observation
	if !msg.isNotification() {
		ctx, ob = c.srv.observe(ctx, msg, "memory", "")
	}
	call, jerr := c.srv.admit(ctx, msg, nil)
	if jerr != nil {
		ob.end(nil, jerr)
		resp.Error = jerr
		return resp, nil
	}
	call.obs = ob
	st := &memStream{}
	result, jerr := c.srv.handle(ctx, call, st)
	ob.end(result, jerr)
	resp.Notifications, resp.Result, resp.Error = st.msgs, result, jerr
	return resp, nil
}

type memStream struct {
	mu   sync.Mutex
	msgs []json.RawMessage
}

func (m *memStream) send(msg []byte) error {
	m.mu.Lock()
	m.msgs = append(m.msgs, append(json.RawMessage(nil), msg...))
	m.mu.Unlock()
	return nil
}

func (m *memStream) keepalive() error { return nil }

// UnansweredInputError is what a Client returns when the server answered
// with an InputRequiredResult and the client has no AnswerInput: the
// client's side of a pause (the server's side is InputRequiredError). It
// carries what the server asked and the requestState to retry with.
type UnansweredInputError struct {
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
}

func (e *UnansweredInputError) Error() string {
	return fmt.Sprintf("mcp client: the server asked for %d inputs", len(e.InputRequests))
}

// roundTrip calls method and follows input rounds through AnswerInput.
func (c *Client) roundTrip(ctx context.Context, method string, params map[string]any, out any) error {
	max := c.MaxRounds
	if max <= 0 {
		max = 10
	}
	for round := 0; ; round++ {
		resp, err := c.Do(ctx, method, params)
		if err != nil {
			return err
		}
		if resp.Error != nil {
			return resp.Error
		}
		var head struct {
			ResultType string `json:"resultType"`
			UnansweredInputError
		}
		if err := json.Unmarshal(resp.Result, &head); err != nil {
			return fmt.Errorf("mcp client: decode %s result: %w", method, err)
		}
		if head.ResultType != ResultInputRequired {
			return json.Unmarshal(resp.Result, out)
		}
		if c.AnswerInput == nil {
			return &head.UnansweredInputError
		}
		if round+1 >= max {
			return errors.New("mcp client: too many input rounds")
		}
		answers := map[string]any{}
		for key, raw := range head.InputRequests {
			var ir struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if err := json.Unmarshal(raw, &ir); err != nil {
				return fmt.Errorf("mcp client: decode input request %q: %w", key, err)
			}
			a, err := c.AnswerInput(ctx, key, InputRequest{Method: ir.Method, Params: ir.Params})
			if err != nil {
				return err
			}
			answers[key] = a
		}
		next := make(map[string]any, len(params)+2)
		for k, v := range params {
			next[k] = v
		}
		next["inputResponses"] = answers
		if head.RequestState != "" {
			next["requestState"] = head.RequestState
		}
		params = next
	}
}

// DiscoverResult is the result of server/discover.
type DiscoverResult struct {
	ResultType        string             `json:"resultType"`
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      ServerCapabilities `json:"capabilities"`
	Instructions      string             `json:"instructions,omitempty"`
	TTLMs             int64              `json:"ttlMs"`
	CacheScope        string             `json:"cacheScope"`
	Meta              map[string]any     `json:"_meta,omitempty"`
}

// Discover calls server/discover.
func (c *Client) Discover(ctx context.Context) (*DiscoverResult, error) {
	var r DiscoverResult
	return &r, c.roundTrip(ctx, "server/discover", nil, &r)
}

// ListTools lists every tool, following cursors.
func (c *Client) ListTools(ctx context.Context) ([]Tool, error) {
	var all []Tool
	params := map[string]any{}
	for {
		var page struct {
			Tools      []Tool `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := c.roundTrip(ctx, "tools/list", params, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Tools...)
		if page.NextCursor == "" {
			return all, nil
		}
		params = map[string]any{"cursor": page.NextCursor}
	}
}

// CallTool calls a tool, answering input rounds through AnswerInput.
func (c *Client) CallTool(ctx context.Context, name string, args any) (*CallToolResult, error) {
	var r CallToolResult
	p := map[string]any{"name": name}
	if args != nil {
		p["arguments"] = args
	}
	return &r, c.roundTrip(ctx, "tools/call", p, &r)
}

// GetPrompt gets a prompt.
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string) (*GetPromptResult, error) {
	var r GetPromptResult
	p := map[string]any{"name": name}
	if args != nil {
		p["arguments"] = args
	}
	return &r, c.roundTrip(ctx, "prompts/get", p, &r)
}

// ReadResource reads a resource.
func (c *Client) ReadResource(ctx context.Context, uri string) (*ReadResourceResult, error) {
	var r ReadResourceResult
	return &r, c.roundTrip(ctx, "resources/read", map[string]any{"uri": uri}, &r)
}
