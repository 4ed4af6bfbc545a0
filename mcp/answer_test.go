package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/mcp"
)

// The HTTP transport encodes a tools/call result into a pooled buffer and
// writes the response from it. These tests pin what that must never
// change: every answer is byte for byte the in-memory client's result in
// the JSON-RPC envelope, whatever size the answers before it had (a pooled
// buffer holds nothing of an earlier request), large answers carry their
// length, and concurrent calls never see each other's bytes.

type sizedIn struct {
	Fill string `json:"fill"`
	N    int    `json:"n"`
}

// answerServer has "sized" (a text of n copies of fill), "failing" (a
// tool execution error), "refusing" (a JSON-RPC error), "panicking" and
// "chatty" (a progress notification first, so the answer is an SSE
// stream).
func answerServer(t *testing.T) *mcp.Server {
	s := quietServer(nil)
	must(t, mcp.AddTool(s, &mcp.Tool{Name: "sized"}, func(ctx context.Context, req *mcp.CallToolRequest, in sizedIn) (*mcp.CallToolResult, error) {
		return mcp.TextResult(strings.Repeat(in.Fill, in.N)), nil
	}))
	must(t, mcp.AddTool(s, &mcp.Tool{Name: "failing"}, func(ctx context.Context, req *mcp.CallToolRequest, in sizedIn) (*mcp.CallToolResult, error) {
		return nil, errors.New(strings.Repeat(in.Fill, in.N))
	}))
	must(t, mcp.AddTool(s, &mcp.Tool{Name: "refusing"}, func(ctx context.Context, req *mcp.CallToolRequest, in sizedIn) (*mcp.CallToolResult, error) {
		return nil, mcp.ErrInvalidParams("refused %d", in.N)
	}))
	must(t, mcp.AddTool(s, &mcp.Tool{Name: "panicking"}, func(ctx context.Context, req *mcp.CallToolRequest, in sizedIn) (*mcp.CallToolResult, error) {
		panic("boom")
	}))
	must(t, mcp.AddTool(s, &mcp.Tool{Name: "chatty"}, func(ctx context.Context, req *mcp.CallToolRequest, in sizedIn) (*mcp.CallToolResult, error) {
		_ = req.Progress(1, 1, "")
		return mcp.TextResult(strings.Repeat(in.Fill, in.N)), nil
	}))
	return s
}

// callHTTP serves one tools/call of tool with fill and n through h and
// returns the recorded response.
func callHTTP(h http.Handler, id int, tool, fill string, n int) *httptest.ResponseRecorder {
	meta := metaOK
	if tool == "chatty" {
		meta = `"_meta":{` + metaVersion + `,` + metaCaps + `,"progressToken":"p"}`
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"fill":%q,"n":%d},%s}}`, id, tool, fill, n, meta)
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion)
	req.Header.Set(mcp.HeaderMethod, "tools/call")
	req.Header.Set(mcp.HeaderName, tool)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// wantAnswer is the HTTP answer the in-memory client's response implies.
func wantAnswer(t *testing.T, c *mcp.Client, id int, tool, fill string, n int) (body string, status int) {
	t.Helper()
	resp, err := c.Do(t.Context(), "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"fill": fill, "n": n}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Error != nil {
		b, err := json.Marshal(resp.Error)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":%s}`, id, b), resp.Error.HTTPStatus()
	}
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, id, resp.Result)
	if tool == "chatty" {
		return `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1,"total":1}}` + "\n\n" +
			"data: " + answer + "\n\n", http.StatusOK
	}
	return answer, http.StatusOK
}

func TestHTTPAnswerBuffers(t *testing.T) {
	s := answerServer(t)
	h := mcp.NewHTTPHandler(s, nil)
	c := mcp.NewClient(s)
	// Large, then small, then mid-sized answers, errors of every kind in
	// between: each must be exactly its own.
	for i, tc := range []struct {
		tool, fill string
		n          int
	}{
		{"sized", "a", 200 << 10},
		{"sized", "b", 1},
		{"sized", "c", 0},
		{"failing", "d", 3000},
		{"sized", "e", 5000},
		{"refusing", "f", 7},
		{"sized", "g", 2},
		{"panicking", "h", 1},
		{"sized", "i", 70 << 10},
		{"chatty", "j", 9000},
		{"sized", "k", 1},
		{"failing", "l", 1},
		{"sized", "m", 1 << 20},
		{"sized", "é", 3},
	} {
		rec := callHTTP(h, i+1, tc.tool, tc.fill, tc.n)
		want, status := wantAnswer(t, c, i+1, tc.tool, tc.fill, tc.n)
		if rec.Code != status || rec.Body.String() != want {
			t.Fatalf("%d %s(%q×%d): got %d %.200q…, want %d %.200q…", i, tc.tool, tc.fill, tc.n, rec.Code, rec.Body.String(), status, want)
		}
		length := rec.Result().Header.Get("Content-Length")
		if large := tc.tool == "sized" && tc.n > 64<<10; large != (length != "") || (large && length != strconv.Itoa(len(want))) {
			t.Errorf("%d %s(%d): Content-Length %q for %d bytes", i, tc.tool, tc.n, length, len(want))
		}
	}
}

func TestHTTPAnswerBuffersConcurrent(t *testing.T) {
	s := answerServer(t)
	h := mcp.NewHTTPHandler(s, nil)
	const workers, calls = 8, 60
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fill := string(rune('J' + w)) // J to Q: no envelope holds them
			for i := range calls {
				n := (i*7919 + w*104729) % 20000
				tool := []string{"sized", "sized", "failing", "chatty"}[i%4]
				rec := callHTTP(h, w*calls+i, tool, fill, n)
				body := rec.Body.String()
				// Only this worker's letter, exactly n of them.
				if rec.Code != http.StatusOK || strings.Count(body, fill) != n {
					errs <- fmt.Errorf("worker %d call %d (%s, %d): %d %.120q", w, i, tool, n, rec.Code, body)
					return
				}
				for other := range workers {
					if l := string(rune('J' + other)); other != w && strings.Contains(body, l) {
						errs <- fmt.Errorf("worker %d call %d holds %q: %.120q", w, i, l, body)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestHTTPRequestsForget pins that a request sees nothing of the one
// before it (the transport reuses what it decodes requests into): a call
// with a progress token, trace context and arguments, then one without.
func TestHTTPRequestsForget(t *testing.T) {
	s := quietServer(nil)
	type seen struct {
		trace mcp.TraceContext
		args  string
		round int
	}
	var got []seen
	must(t, s.AddTool(&mcp.Tool{Name: "probe"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		got = append(got, seen{req.Trace, string(req.Arguments), req.Round})
		_ = req.Progress(1, 1, "")
		return mcp.TextResult("ok"), nil
	}))
	h := mcp.NewHTTPHandler(s, nil)
	rich := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"probe","arguments":{"secret":"s3cr3t"},` +
		`"_meta":{` + metaVersion + `,` + metaCaps + `,"progressToken":"p","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","baggage":"user=alice"}}}`
	bare := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"probe",` + metaOK + `}}`
	for i := range 20 {
		for _, body := range []string{rich, bare} {
			req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion)
			req.Header.Set(mcp.HeaderMethod, "tools/call")
			req.Header.Set(mcp.HeaderName, "probe")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			sse := rec.Header().Get("Content-Type") == "text/event-stream"
			if rec.Code != http.StatusOK || sse != (body == rich) {
				t.Fatalf("round %d: %d %s: %s", i, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
		}
	}
	for i, g := range got {
		if i%2 == 1 && (g != seen{}) {
			t.Fatalf("call %d without _meta extras or arguments saw %+v", i, g)
		}
		if i%2 == 0 && (g.trace.Baggage != "user=alice" || g.args != `{"secret":"s3cr3t"}`) {
			t.Fatalf("call %d saw %+v", i, g)
		}
	}
}

// TestHTTPLegacyAnswerBuffers is TestHTTPAnswerBuffers and
// TestHTTPRequestsForget for a 2025-11-25 session, whose requests are
// decoded and answered the same way.
func TestHTTPLegacyAnswerBuffers(t *testing.T) {
	h := mcp.NewHTTPHandler(answerServer(t), nil)
	post := func(sid, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if sid != "" {
			req.Header.Set(mcp.HeaderSessionID, sid)
			req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	sid := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`).Header().Get(mcp.HeaderSessionID)
	if sid == "" {
		t.Fatal("no session")
	}
	for i, tc := range []struct {
		tool, fill string
		n          int
		token      bool
	}{
		{"sized", "a", 200 << 10, false},
		{"sized", "b", 1, false},
		{"chatty", "c", 3, true},
		{"chatty", "d", 2, false},
		{"failing", "e", 5000, false},
		{"sized", "f", 0, false},
		{"sized", "g", 70 << 10, false},
		{"failing", "h", 1, false},
	} {
		id := i + 2
		meta := ""
		if tc.token {
			meta = `,"_meta":{"progressToken":"p"}`
		}
		rec := post(sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"fill":%q,"n":%d}%s}}`, id, tc.tool, tc.fill, tc.n, meta))
		isError := ""
		if tc.tool == "failing" {
			isError = `,"isError":true`
		}
		want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":%q}]%s}}`, id, strings.Repeat(tc.fill, tc.n), isError)
		if tc.token {
			want = `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1,"total":1}}` + "\n\n" + "data: " + want + "\n\n"
		}
		if rec.Code != http.StatusOK || rec.Body.String() != want {
			t.Fatalf("%d %s(%q×%d): got %d %.200q…, want %.200q…", i, tc.tool, tc.fill, tc.n, rec.Code, rec.Body.String(), want)
		}
	}
}
