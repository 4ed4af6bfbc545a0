package mcp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is an Observer that records what it is told; Begin puts a
// marker in the context, which the "span" tool reads back.
type recorder struct {
	mu   sync.Mutex
	seen []observed
}

type observed struct {
	info RequestInfo
	out  Outcome
	mark any // the context value End was given
}

type spanKey struct{}

func (r *recorder) Begin(ctx context.Context, info *RequestInfo) context.Context {
	return context.WithValue(ctx, spanKey{}, "span:"+info.Method+":"+info.Name)
}

func (r *recorder) End(ctx context.Context, info *RequestInfo, o Outcome) {
	r.mu.Lock()
	r.seen = append(r.seen, observed{*info, o, ctx.Value(spanKey{})})
	r.mu.Unlock()
}

// take returns and forgets what was recorded.
func (r *recorder) take() []observed {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.seen
	r.seen = nil
	return s
}

// waitFor waits until n observations are recorded (stdio ends requests
// asynchronously).
func (r *recorder) waitFor(t *testing.T, n int) []observed {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.mu.Lock()
		got := len(r.seen)
		r.mu.Unlock()
		if got >= n {
			return r.take()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d observations, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func observedServer(t *testing.T, rec *recorder) *Server {
	t.Helper()
	s := NewServer(Implementation{Name: "observed", Version: "1"}, &ServerOptions{Observer: rec})
	must(t, s.AddTool(&Tool{Name: "ok"}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
		return TextResult("fine"), nil
	}))
	must(t, s.AddTool(&Tool{Name: "fails"}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
		return ToolError("the upstream said no"), nil
	}))
	must(t, s.AddTool(&Tool{Name: "span"}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
		return TextResult(fmt.Sprint(ctx.Value(spanKey{}), " trace=", r.Trace.TraceParent, "|", r.Trace.TraceState, "|", r.Trace.Baggage)), nil
	}))
	return s
}

// summary is the part of an observation the tests compare.
func summary(o observed) string {
	i := o.info
	return fmt.Sprintf("%s %s name=%q id=%s v=%s legacy=%v code=%d rt=%q toolError=%v mark=%v",
		i.Transport, i.Method, i.Name, i.ID, i.ProtocolVersion, i.Legacy, o.out.ErrorCode, o.out.ResultType, o.out.ToolError, o.mark)
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func modernCall(id int, tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,%s}}`, id, tool, modernMeta)
}

func TestObserverHTTP(t *testing.T) {
	rec := &recorder{}
	ts := httptest.NewServer(NewHTTPHandler(observedServer(t, rec), nil))
	defer ts.Close()
	post := func(tool string, body string, hdr map[string]string) string {
		t.Helper()
		h := map[string]string{HeaderProtocolVersion: ProtocolVersion, HeaderMethod: "tools/call", HeaderName: tool}
		for k, v := range hdr {
			h[k] = v
		}
		_, m := dupPost(t, ts.URL, h, body)
		return string(m["result"]) + string(m["error"])
	}
	post("ok", modernCall(1, "ok"), nil)
	post("fails", modernCall(2, "fails"), nil)
	post("nope", modernCall(3, "nope"), nil)
	post("ok", modernCall(4, "ok"), map[string]string{HeaderName: "other"})
	got := post("span", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"span","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},`+
		`"traceparent":"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01","tracestate":"k=v","baggage":"user=1"}}}`, nil)
	if !strings.Contains(got, "span:tools/call:span trace=00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01|k=v|user=1") {
		t.Errorf("the handler did not see the observer's context and the trace keys: %s", got)
	}
	want := []string{
		`http tools/call name="ok" id=1 v=2026-07-28 legacy=false code=0 rt="complete" toolError=false mark=span:tools/call:ok`,
		`http tools/call name="fails" id=2 v=2026-07-28 legacy=false code=0 rt="complete" toolError=true mark=span:tools/call:fails`,
		`http tools/call name="nope" id=3 v=2026-07-28 legacy=false code=-32602 rt="" toolError=false mark=span:tools/call:nope`,
		`http tools/call name="ok" id=4 v=2026-07-28 legacy=false code=-32020 rt="" toolError=false mark=span:tools/call:ok`,
		`http tools/call name="span" id=5 v=2026-07-28 legacy=false code=0 rt="complete" toolError=false mark=span:tools/call:span`,
	}
	seen := rec.take()
	checkObserved(t, seen, want)
	if len(seen) == 5 && seen[4].info.Trace.TraceParent != "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01" {
		t.Errorf("RequestInfo.Trace = %+v", seen[4].info.Trace)
	}
	for _, o := range seen {
		if o.out.Duration <= 0 || o.info.Start.IsZero() {
			t.Errorf("no timing in %+v", o)
		}
	}

	// Legacy requests on the same endpoint.
	c := &legacyClient{t: t, url: ts.URL}
	c.initialize()
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fails","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	} {
		resp := c.post(body)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	c.sid = "unknown"
	resp := c.post(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	resp.Body.Close()
	checkObserved(t, rec.take(), []string{
		`http initialize name="" id=1 v=2025-11-25 legacy=true code=0 rt="" toolError=false mark=span:initialize:`,
		`http tools/call name="fails" id=2 v=2025-11-25 legacy=true code=0 rt="" toolError=true mark=span:tools/call:fails`,
		`http ping name="" id=3 v=2025-11-25 legacy=true code=0 rt="" toolError=false mark=span:ping:`,
		`http tools/list name="" id=4 v=2025-11-25 legacy=true code=-32600 rt="" toolError=false mark=span:tools/list:`,
	})
}

func checkObserved(t *testing.T, seen []observed, want []string) {
	t.Helper()
	var got []string
	for _, o := range seen {
		got = append(got, summary(o))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("observed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestObserverStdioAndMemory(t *testing.T) {
	rec := &recorder{}
	s := observedServer(t, rec)
	p := openStdio(t, s)
	roundTrip := func(msg string) {
		t.Helper()
		p.send(msg)
		p.next()
	}
	roundTrip(modernCall(1, "fails"))
	checkObserved(t, rec.waitFor(t, 1), []string{ // stdio answers before it ends the observation
		`stdio tools/call name="fails" id=1 v=2026-07-28 legacy=false code=0 rt="complete" toolError=true mark=span:tools/call:fails`,
	})
	roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ok"}}`) // modern without _meta: refused
	roundTrip(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`)
	roundTrip(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ok"}}`)
	seen := rec.waitFor(t, 3)
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	checkObserved(t, seen, []string{
		`stdio tools/call name="ok" id=2 v= legacy=false code=-32602 rt="" toolError=false mark=span:tools/call:ok`,
		`stdio initialize name="" id=3 v=2025-06-18 legacy=true code=0 rt="" toolError=false mark=span:initialize:`,
		`stdio tools/call name="ok" id=4 v=2025-06-18 legacy=true code=0 rt="" toolError=false mark=span:tools/call:ok`,
	})

	c := NewClient(s)
	if _, err := c.CallTool(t.Context(), "fails", nil); err != nil {
		t.Fatal(err)
	}
	checkObserved(t, rec.take(), []string{
		`memory tools/call name="fails" id=1 v=2026-07-28 legacy=false code=0 rt="complete" toolError=true mark=span:tools/call:fails`,
	})
}

// TestObserverListenStream: a listen stream is observed from its start to
// its end, and one refused over a limit is observed with the refusal.
func TestObserverListenStream(t *testing.T) {
	rec := &recorder{}
	s := observedServer(t, rec)
	h := NewHTTPHandler(s, &HTTPOptions{ListenStreams: Limits{PerAddress: 1}})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	if status, _ := openListen(ctx, h, "192.0.2.1", "", &wg); status != 200 {
		t.Fatalf("listen: %d", status)
	}
	if status, _ := openListen(ctx, h, "192.0.2.1", "", &wg); status != http.StatusTooManyRequests {
		t.Fatalf("second listen: %d", status)
	}
	cancel()
	wg.Wait()
	seen := rec.take()
	checkObserved(t, seen, []string{
		`http subscriptions/listen name="" id="L" v=2026-07-28 legacy=false code=-32603 rt="" toolError=false mark=span:subscriptions/listen:`,
		`http subscriptions/listen name="" id="L" v=2026-07-28 legacy=false code=0 rt="" toolError=false mark=span:subscriptions/listen:`,
	})
}

// TestNoObserverNoCost: without an observer, observe does nothing and
// allocates nothing.
func TestNoObserverNoCost(t *testing.T) {
	s := NewServer(Implementation{Name: "plain", Version: "1"}, nil)
	msg, _, jerr := decodeMessage([]byte(modernCall(1, "ok")))
	if jerr != nil {
		t.Fatal(jerr)
	}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		octx, ob := s.observe(ctx, msg, "http", "")
		ob.setVersion("x")
		ob.end(nil, nil)
		if octx != ctx || ob != nil {
			t.Fatal("observe without an observer changed something")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per request without an observer", allocs)
	}
}
