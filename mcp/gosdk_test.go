package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/mcp"
)

// These tests drive mcpgate with the official go-sdk client, the way a real
// 2026-07-28 client does: server/discover first, then per-request _meta.
// The SDK silently falls back to the legacy initialize handshake when
// discovery fails, so every test asserts the negotiated version.

// sdkFixture is the server the go-sdk tests talk to.
func sdkFixture(t testing.TB) *mcp.Server {
	t.Helper()
	s := mcp.NewServer(mcp.Implementation{Name: "fixture", Version: "1.2.3"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	must(t, mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text"},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, error) {
			return mcp.TextResult("echo: " + in.Text), nil
		}))
	// profile asks two questions in two rounds and answers on the third call.
	must(t, mcp.AddTool(s, &mcp.Tool{Name: "profile", Description: "Ask for a name, then a colour"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
			type cont struct {
				Name string `json:"name"`
			}
			switch req.Round {
			case 0:
				return nil, mcp.RequireInput(map[string]mcp.InputRequest{
					"name": mcp.ElicitForm("What is your name?", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)),
				}, cont{})
			case 1:
				ans, ok := req.Elicitation("name")
				if !ok || ans.Action != "accept" {
					return mcp.ToolError("no name given"), nil
				}
				name, _ := ans.Content["name"].(string)
				return nil, mcp.RequireInput(map[string]mcp.InputRequest{
					"colour": mcp.ElicitForm("Favourite colour, "+name+"?", json.RawMessage(`{"type":"object","properties":{"colour":{"type":"string"}},"required":["colour"]}`)),
				}, cont{Name: name})
			default:
				c, err := mcp.ContinuationAs[cont](req.Request)
				if err != nil {
					return nil, err
				}
				ans, ok := req.Elicitation("colour")
				if !ok {
					return mcp.ToolError("no colour given"), nil
				}
				return mcp.TextResult(fmt.Sprintf("%s likes %v (round %d)", c.Name, ans.Content["colour"], req.Round)), nil
			}
		}))
	must(t, mcp.AddTool(s, &mcp.Tool{Name: "count", Description: "Report progress three times"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
			for i := 1; i <= 3; i++ {
				if err := req.Progress(float64(i), 3, fmt.Sprintf("step %d", i)); err != nil {
					return nil, err
				}
			}
			return mcp.TextResult("counted"), nil
		}))
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// tapListener shows the test every byte the server writes to its HTTP
// clients, at the connection (so that the writes of a parked listen
// stream, made on the hijacked connection, are seen too).
type tapListener struct {
	net.Listener
	tap func([]byte)
}

func (l tapListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &tapConn{c, l.tap}, nil
}

type tapConn struct {
	net.Conn
	tap func([]byte)
}

func (c *tapConn) Write(p []byte) (int, error) {
	c.tap(p)
	return c.Conn.Write(p)
}

// tapFunc shows the test what the server writes to its client.
type tapFunc func([]byte)

func (f tapFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// sdkConnect connects the SDK client to s; tap, when not nil, sees every
// byte the server writes before the client does.
type sdkConnect func(t *testing.T, s *mcp.Server, opts *sdk.ClientOptions, tap func([]byte)) *sdk.ClientSession

func sdkConnectHTTP(t *testing.T, s *mcp.Server, opts *sdk.ClientOptions, tap func([]byte)) *sdk.ClientSession {
	t.Helper()
	ts := httptest.NewUnstartedServer(mcp.NewHTTPHandler(s, nil))
	if tap != nil {
		ts.Listener = tapListener{ts.Listener, tap}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	c := sdk.NewClient(&sdk.Implementation{Name: "sdk-client", Version: "0.0.1"}, opts)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// sdkConnectStdio serves s with ServeStdio over two io.Pipe pairs and
// connects the SDK client to the other ends.
func sdkConnectStdio(t *testing.T, s *mcp.Server, opts *sdk.ClientOptions, tap func([]byte)) *sdk.ClientSession {
	t.Helper()
	c2sR, c2sW := io.Pipe() // client writes, server reads
	s2cR, s2cW := io.Pipe() // server writes, client reads
	var out io.Writer = s2cW
	if tap != nil {
		out = io.MultiWriter(tapFunc(tap), s2cW)
	}
	done := make(chan error, 1)
	go func() {
		err := mcp.ServeStdio(context.Background(), s, c2sR, out, nil)
		s2cW.Close()
		done <- err
	}()
	c := sdk.NewClient(&sdk.Implementation{Name: "sdk-client", Version: "0.0.1"}, opts)
	cs, err := c.Connect(t.Context(), &sdk.IOTransport{Reader: s2cR, Writer: c2sW}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		c2sW.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	})
	return cs
}

func TestGoSDKClient(t *testing.T) {
	for _, tr := range []struct {
		name    string
		connect sdkConnect
	}{
		{"http", sdkConnectHTTP},
		{"stdio", sdkConnectStdio},
	} {
		t.Run(tr.name, func(t *testing.T) {
			t.Run("ListAndCall", func(t *testing.T) {
				cs := tr.connect(t, sdkFixture(t), nil, nil)
				init := cs.InitializeResult()
				if init == nil || init.ProtocolVersion != mcp.ProtocolVersion {
					t.Fatalf("negotiated version = %+v, want %s", init, mcp.ProtocolVersion)
				}
				if init.ServerInfo == nil || init.ServerInfo.Name != "fixture" || init.ServerInfo.Version != "1.2.3" {
					t.Errorf("server info = %+v", init.ServerInfo)
				}
				if init.Capabilities == nil || init.Capabilities.Tools == nil {
					t.Errorf("capabilities = %+v, want tools", init.Capabilities)
				}
				lt, err := cs.ListTools(t.Context(), nil)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, tool := range lt.Tools {
					names = append(names, tool.Name)
				}
				if fmt.Sprint(names) != "[echo profile count]" {
					t.Errorf("tools = %v", names)
				}
				res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
				if err != nil {
					t.Fatal(err)
				}
				if got := sdkText(res); got != "echo: hi" || res.IsError {
					t.Errorf("echo = %q (isError %v)", got, res.IsError)
				}
				// An unknown tool is a JSON-RPC error, not a transport failure:
				// the session keeps working.
				if _, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "nope"}); err == nil {
					t.Error("unknown tool: no error")
				}
				if res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "again"}}); err != nil || sdkText(res) != "echo: again" {
					t.Errorf("after error: %v %v", res, err)
				}
			})
			t.Run("TwoRoundElicitation", func(t *testing.T) {
				var mu sync.Mutex
				var asked []string
				opts := &sdk.ClientOptions{
					ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
						mu.Lock()
						asked = append(asked, req.Params.Message)
						mu.Unlock()
						switch req.Params.Message {
						case "What is your name?":
							return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
						case "Favourite colour, Ada?":
							return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"colour": "green"}}, nil
						}
						return &sdk.ElicitResult{Action: "decline"}, nil
					},
				}
				cs := tr.connect(t, sdkFixture(t), opts, nil)
				if v := cs.InitializeResult().ProtocolVersion; v != mcp.ProtocolVersion {
					t.Fatalf("negotiated %q", v)
				}
				res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "profile", Arguments: map[string]any{}})
				if err != nil {
					t.Fatal(err)
				}
				if got := sdkText(res); got != "Ada likes green (round 2)" {
					t.Errorf("final text = %q", got)
				}
				if fmt.Sprint(asked) != "[What is your name? Favourite colour, Ada?]" {
					t.Errorf("asked %q", asked)
				}
			})
			t.Run("ElicitationWithoutCapability", func(t *testing.T) {
				// The SDK client without an elicitation handler declares no
				// elicitation capability: the server answers -32021.
				cs := tr.connect(t, sdkFixture(t), nil, nil)
				_, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "profile", Arguments: map[string]any{}})
				if err == nil {
					t.Fatal("no error")
				}
				var we *jsonrpc.Error
				if !errors.As(err, &we) || we.Code != mcp.CodeMissingRequiredClientCapability {
					t.Errorf("err = %v, want code %d", err, mcp.CodeMissingRequiredClientCapability)
				}
			})
			t.Run("Progress", func(t *testing.T) {
				got := make(chan string, 8)
				opts := &sdk.ClientOptions{
					ProgressNotificationHandler: func(ctx context.Context, req *sdk.ProgressNotificationClientRequest) {
						got <- fmt.Sprintf("%v:%v/%v:%s", req.Params.ProgressToken, req.Params.Progress, req.Params.Total, req.Params.Message)
					},
				}
				cs := tr.connect(t, sdkFixture(t), opts, nil)
				params := &sdk.CallToolParams{Name: "count", Arguments: map[string]any{}}
				params.SetProgressToken("tok-1")
				res, err := cs.CallTool(t.Context(), params)
				if err != nil {
					t.Fatal(err)
				}
				if sdkText(res) != "counted" {
					t.Errorf("result %q", sdkText(res))
				}
				// The server writes the notifications before the response on
				// the same stream (SSE events / stdio lines); the SDK runs its
				// notification handlers asynchronously, so they may still be
				// in flight when CallTool returns.
				// (The SDK may dispatch them concurrently: compare as a set; the
				// server's ordering is asserted in TestHTTPResponseKind.)
				var all []string
				for len(all) < 3 {
					select {
					case g := <-got:
						all = append(all, g)
					case <-t.Context().Done():
						t.Fatalf("only %d progress notifications: %v", len(all), all)
					}
				}
				slices.Sort(all)
				if want := "[tok-1:1/3:step 1 tok-1:2/3:step 2 tok-1:3/3:step 3]"; fmt.Sprint(all) != want {
					t.Errorf("progress = %v, want %v", all, want)
				}
			})
			t.Run("ToolListChanged", func(t *testing.T) {
				changed := make(chan struct{}, 8)
				opts := &sdk.ClientOptions{
					ToolListChangedHandler: func(ctx context.Context, req *sdk.ToolListChangedRequest) {
						changed <- struct{}{}
					},
				}
				s := sdkFixture(t)
				// With a ToolListChangedHandler, Connect opens subscriptions/listen
				// in the background. The server subscribes the stream before it
				// writes the acknowledgement, so once the tap saw the ack an
				// AddTool cannot be missed.
				acked := make(chan struct{})
				var once sync.Once
				tap := func(p []byte) {
					if strings.Contains(string(p), "notifications/subscriptions/acknowledged") {
						once.Do(func() { close(acked) })
					}
				}
				cs := tr.connect(t, s, opts, tap)
				if v := cs.InitializeResult().ProtocolVersion; v != mcp.ProtocolVersion {
					t.Fatalf("negotiated %q", v)
				}
				if _, err := cs.ListTools(t.Context(), nil); err != nil {
					t.Fatal(err)
				}
				<-acked
				must(t, s.AddTool(&mcp.Tool{Name: "late"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.TextResult("late"), nil
				}))
				select {
				case <-changed:
				case <-t.Context().Done():
					t.Fatal("no tools/list_changed")
				}
				// The SDK invalidates its tools cache on the notification.
				lt, err := cs.ListTools(t.Context(), nil)
				if err != nil {
					t.Fatal(err)
				}
				if n := len(lt.Tools); n != 4 {
					t.Errorf("after AddTool: %d tools, want 4", n)
				}
			})
		})
	}
}

func sdkText(res *sdk.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); ok {
		return tc.Text
	}
	return fmt.Sprintf("%T", res.Content[0])
}
