package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/demo"
)

func TestSummarize(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	rand.Shuffle(len(lat), func(i, j int) { lat[i], lat[j] = lat[j], lat[i] })
	s := summarize(lat)
	want := latencySummary{N: 100, Mean: 50500 * time.Microsecond, P50: 50 * time.Millisecond,
		P90: 90 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}
	if s != want {
		t.Errorf("summarize(1..100ms) = %+v, want %+v", s, want)
	}

	cases := []struct {
		in            []time.Duration
		p50, p99, max time.Duration
	}{
		{[]time.Duration{7}, 7, 7, 7},
		{[]time.Duration{4, 1, 3, 2}, 2, 4, 4},              // ranks ceil(2)=2, ceil(3.96)=4
		{[]time.Duration{10, 10, 10, 1000}, 10, 1000, 1000}, // one outlier is the p99
	}
	for _, c := range cases {
		s := summarize(c.in)
		if s.P50 != c.p50 || s.P99 != c.p99 || s.Max != c.max {
			t.Errorf("summarize(%v) = %+v, want p50 %v p99 %v max %v", c.in, s, c.p50, c.p99, c.max)
		}
	}
	if s := summarize(nil); s != (latencySummary{}) {
		t.Errorf("summarize(nil) = %+v", s)
	}
}

func TestNewSummaryCountsAndRate(t *testing.T) {
	cfg := &config{url: "http://127.0.0.1/x", mode: "mcp", proto: "2026-07-28", tool: "t", c: 2}
	var counts [numKinds]int64
	counts[okKind], counts[errHTTPStatus], counts[errTool] = 90, 6, 4
	s := newSummary(cfg, counts, []time.Duration{time.Millisecond}, 2*time.Second)
	if s.Requests != 100 || s.Errors != 10 || s.RPS != 50 || s.ByKind["http"] != 6 || s.ByKind["tool"] != 4 || len(s.ByKind) != 2 {
		t.Errorf("summary %+v", s)
	}
}

func TestReadSSE(t *testing.T) {
	stream := ": keep-alive comment\n" +
		"event: message\n" +
		"id: 7\n" +
		"data: {\"a\":1}\n" +
		"\n" +
		"data:first\r\n" +
		"data: second\r\n" +
		"retry: 10\r\n" +
		"\r\n" +
		"\n" + // an empty event dispatches nothing
		"data: stop\n" +
		"\n" +
		"data: never read\n\n"
	var got []string
	err := readSSE(strings.NewReader(stream), func(d []byte) (bool, error) {
		got = append(got, string(d))
		return string(d) == "stop", nil
	})
	if err != nil {
		t.Fatalf("readSSE: %v", err)
	}
	want := []string{`{"a":1}`, "first\nsecond", "stop"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", got, want)
	}

	// A final event without its blank line is discarded; the stream ended.
	got = nil
	err = readSSE(strings.NewReader("data: one\n\ndata: unterminated\n"), func(d []byte) (bool, error) {
		got = append(got, string(d))
		return false, nil
	})
	if !errors.Is(err, errStreamEnded) || len(got) != 1 || got[0] != "one" {
		t.Errorf("unterminated: err %v, events %q", err, got)
	}

	// onData errors stop the reader.
	boom := errors.New("boom")
	if err := readSSE(strings.NewReader("data: x\n\n"), func([]byte) (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Errorf("callback error: %v", err)
	}

	// A line longer than the bound is an error, not a hang or a crash.
	long := "data: " + strings.Repeat("x", maxSSELine+1) + "\n\n"
	if err := readSSE(strings.NewReader(long), func([]byte) (bool, error) { return true, nil }); err == nil || errors.Is(err, errStreamEnded) {
		t.Errorf("oversized line: %v", err)
	}
}

func TestReplyScanner(t *testing.T) {
	cases := []struct {
		msg   string
		kind  errKind
		ours  bool
		field string // the raw result.isError wanted
	}{
		{`{"jsonrpc":"2.0","id":5,"result":{"content":[]}}`, okKind, true, ""},
		{`{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"x"}],"isError":true}}`, okKind, true, "true"},
		{`{"result":{"isError":false,"structuredContent":{"isError":true}},"id":5,"jsonrpc":"2.0"}`, okKind, true, "false"},
		{`{"jsonrpc":"2.0","id":5,"result":{"\u0069sError":"yes"}}`, okKind, true, `"yes"`},
		{`{"jsonrpc":"2.0","id":5,"result":[]}`, okKind, true, ""},
		{`{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"bad"}}`, errJSONRPC, true, ""},
		{`{"jsonrpc":"2.0","id":6,"result":{}}`, errProtocol, true, ""},
		{`{"jsonrpc":"2.0","id":"5","result":{}}`, errProtocol, true, ""},
		{`{"jsonrpc":"2.0","id":5}`, errProtocol, true, ""},
		{`{"jsonrpc":"2.0","id":5,"result":null}`, errProtocol, true, ""},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, okKind, false, ""},
		{`{"jsonrpc":"2.0","id":5,"result":{}} {}`, errProtocol, true, ""},
		{`{"jsonrpc":"2.0","id":5,"result":{"isError":true}`, errProtocol, true, ""},
		{`not json`, errProtocol, true, ""},
		{`[]`, errProtocol, true, ""},
	}
	var sc replyScanner
	for _, c := range cases {
		r := sc.scan([]byte(c.msg), 5, "isError")
		if r.kind != c.kind || r.ours != c.ours || string(r.field) != c.field {
			t.Errorf("scan(%s) = kind %v, ours %v, field %q (%v); want %v, %v, %q", c.msg, r.kind, r.ours, r.field, r.err, c.kind, c.ours, c.field)
		}
		if (r.kind != okKind) != (r.err != nil) {
			t.Errorf("scan(%s): kind %v with error %v", c.msg, r.kind, r.err)
		}
	}
}

// BenchmarkReplyScanner is the harness's per-reply parsing cost: on a small
// machine it is CPU taken from the server being measured.
func BenchmarkReplyScanner(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"{\"id\":1,\"name\":\"Rex\",\"species\":\"dog\",\"status\":\"available\",\"tags\":[\"friendly\"],\"categoryId\":2}"}],"structuredContent":{"id":1,"name":"Rex","species":"dog","status":"available","tags":["friendly"],"categoryId":2},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpgate","version":"0.1.0-dev"}}}}`)
	var sc replyScanner
	b.ReportAllocs()
	for b.Loop() {
		if r := sc.scan(msg, 1, "isError"); r.kind != okKind || r.field != nil {
			b.Fatal(r.err)
		}
	}
}

func TestEncodeHeaderValue(t *testing.T) {
	for in, want := range map[string]string{
		"get_pet":            "get_pet",
		"Hello, 世界":          "=?base64?SGVsbG8sIOS4lueVjA==?=",
		" padded ":           "=?base64?IHBhZGRlZCA=?=",
		"line1\nline2":       "=?base64?bGluZTEKbGluZTI=?=",
		"=?base64?literal?=": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
	} {
		if got := encodeHeaderValue(in); got != want {
			t.Errorf("encodeHeaderValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	ok := []string{"-url", "http://127.0.0.1:1/mcp", "-tool", "x"}
	cfg, err := parseFlags(append(ok, "-n", "10"), io.Discard)
	if err != nil || cfg.d != 0 || cfg.n != 10 {
		t.Errorf("-n alone: cfg %+v err %v, want no duration limit", cfg, err)
	}
	cfg, err = parseFlags(append(ok, "-n", "10", "-d", "1s", "-header", "Authorization: Bearer x", "-header", "X-A:b"), io.Discard)
	if err != nil || cfg.d != time.Second || len(cfg.headers) != 2 || cfg.headers[0] != [2]string{"Authorization", "Bearer x"} {
		t.Errorf("cfg %+v err %v", cfg, err)
	}
	if cfg, err := parseFlags(ok, io.Discard); err != nil || cfg.d != 10*time.Second || cfg.c != 16 {
		t.Errorf("defaults: %+v %v", cfg, err)
	}
	bad := map[string][]string{
		"remote host":     {"-url", "http://example.com/mcp", "-tool", "x"},
		"remote ip":       {"-url", "http://192.168.1.1/mcp", "-tool", "x"},
		"not http":        {"-url", "ftp://127.0.0.1/", "-tool", "x"},
		"no tool":         {"-url", "http://127.0.0.1/mcp"},
		"args not object": append(ok, "-args", "[1]"),
		"bad proto":       append(ok, "-proto", "1999-01-01"),
		"zero clients":    append(ok, "-c", "0"),
		"bad mode":        append(ok, "-mode", "grpc"),
		"bad header":      append(ok, "-header", "nocolon"),
		"zero duration":   append(ok, "-d", "0s"),
	}
	for name, args := range bad {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("%s: accepted %q", name, args)
		}
	}
	for _, u := range []string{"http://localhost:1/", "http://[::1]:1/", "http://127.0.0.2/"} {
		if err := checkTarget(u, false); err != nil {
			t.Errorf("checkTarget(%s): %v", u, err)
		}
	}
	if err := checkTarget("http://example.com/", true); err != nil {
		t.Errorf("-allow-remote: %v", err)
	}
}

// fakeMCP is a minimal MCP endpoint for the harness tests. It checks what
// the harness sends and answers JSON or SSE; tools/call request number i
// (1-based, in arrival order) fails on purpose when i%10 is 3 (isError),
// 7 (JSON-RPC error) or 9 (HTTP 500).
type fakeMCP struct {
	t      *testing.T
	legacy bool

	mu       sync.Mutex
	calls    int
	ids      map[string]bool
	sessions map[string]bool // live sessions (legacy)
	opened   int
	deleted  int
}

func (f *fakeMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method == http.MethodDelete {
		sid := r.Header.Get("Mcp-Session-Id")
		if !f.sessions[sid] {
			http.Error(w, "unknown session", 404)
			return
		}
		delete(f.sessions, sid)
		f.deleted++
		return
	}
	if r.Header.Get("Content-Type") != "application/json" || !strings.Contains(r.Header.Get("Accept"), "text/event-stream") ||
		!strings.Contains(r.Header.Get("Accept"), "application/json") {
		f.t.Errorf("bad Content-Type/Accept: %v", r.Header)
	}
	if r.Header.Get("X-Extra") != "yes" {
		f.t.Errorf("-header not sent: %v", r.Header)
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string                     `json:"name"`
			Arguments map[string]any             `json:"arguments"`
			Meta      map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		f.t.Errorf("bad body %s", body)
		return
	}
	if f.legacy {
		switch req.Method {
		case "initialize":
			f.opened++
			sid := fmt.Sprintf("s-%d", f.opened)
			f.sessions[sid] = true
			w.Header().Set("Mcp-Session-Id", sid)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}`, req.ID)
			return
		case "notifications/initialized":
			if !f.sessions[r.Header.Get("Mcp-Session-Id")] || r.Header.Get("MCP-Protocol-Version") != "2025-06-18" {
				f.t.Errorf("initialized without session/version: %v", r.Header)
			}
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if !f.sessions[r.Header.Get("Mcp-Session-Id")] || r.Header.Get("MCP-Protocol-Version") != "2025-06-18" {
			f.t.Errorf("legacy call without a live session or negotiated version: %v", r.Header)
		}
		if req.Params.Meta != nil || r.Header.Get("Mcp-Method") != "" {
			f.t.Errorf("legacy call carries modern _meta or headers")
		}
	} else {
		if r.Header.Get("MCP-Protocol-Version") != "2026-07-28" || r.Header.Get("Mcp-Method") != req.Method ||
			r.Header.Get("Mcp-Name") != req.Params.Name || r.Header.Get("Mcp-Session-Id") != "" {
			f.t.Errorf("bad modern headers %v for %s", r.Header, body)
		}
		if string(req.Params.Meta["io.modelcontextprotocol/protocolVersion"]) != `"2026-07-28"` ||
			string(req.Params.Meta["io.modelcontextprotocol/clientCapabilities"]) != `{}` {
			f.t.Errorf("bad _meta in %s", body)
		}
	}
	if req.Method != "tools/call" || req.Params.Name != "get_pet" || req.Params.Arguments["id"] != 1.0 {
		f.t.Errorf("unexpected request %s", body)
	}
	if f.ids[string(req.ID)] {
		f.t.Errorf("id %s reused", req.ID)
	}
	f.ids[string(req.ID)] = true
	f.calls++
	var reply string
	switch f.calls % 10 {
	case 3:
		reply = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"nope"}],"isError":true}}`, req.ID)
	case 7:
		reply = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"Unknown tool"}}`, req.ID)
	case 9:
		http.Error(w, "boom", 500)
		return
	default:
		reply = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"{}"}],"structuredContent":{}}}`, req.ID)
	}
	if f.calls%2 == 0 { // every other reply is an SSE stream with a notification first
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n: ping\n\ndata: %s\n\n", reply)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, reply)
}

func runJSON(t *testing.T, args ...string) summary {
	t.Helper()
	var out, errb bytes.Buffer
	if err := run(context.Background(), append(args, "-json"), &out, &errb); err != nil {
		t.Fatalf("run %q: %v (stderr %s)", args, err, errb.String())
	}
	var s summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	return s
}

func TestRunMCPModes(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			f := &fakeMCP{t: t, legacy: legacy, ids: map[string]bool{}, sessions: map[string]bool{}}
			srv := httptest.NewServer(f)
			defer srv.Close()
			args := []string{"-url", srv.URL + "/mcp", "-tool", "get_pet", "-args", `{"id":1}`, "-n", "50", "-c", "4", "-header", "X-Extra: yes"}
			if legacy {
				args = append(args, "-proto", "2025-11-25")
			}
			s := runJSON(t, args...)
			if s.Requests != 50 || s.Errors != 15 || s.ByKind["tool"] != 5 || s.ByKind["jsonrpc"] != 5 || s.ByKind["http"] != 5 {
				t.Errorf("summary %+v, want 50 requests with 5 tool, 5 jsonrpc, 5 http errors", s)
			}
			if s.P50ms <= 0 || s.P99ms < s.P50ms || s.MaxMs < s.P99ms || s.RPS <= 0 {
				t.Errorf("latencies %+v", s)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.calls != 50 || len(f.ids) != 50 {
				t.Errorf("server saw %d calls, %d distinct ids", f.calls, len(f.ids))
			}
			if legacy && (f.opened != 4 || f.deleted != 4) {
				t.Errorf("sessions opened %d deleted %d, want 4 and 4", f.opened, f.deleted)
			}
		})
	}
}

func TestRunHTTPModeAgainstDemo(t *testing.T) {
	srv := httptest.NewServer(demo.New(demo.Options{RequireAuth: true, Tokens: map[string]string{"tok": "bench"}}))
	defer srv.Close()
	s := runJSON(t, "-mode", "http", "-url", srv.URL+"/pets/1", "-n", "40", "-c", "3", "-header", "Authorization: Bearer tok")
	if s.Requests != 40 || s.Errors != 0 {
		t.Errorf("authorized: %+v", s)
	}
	s = runJSON(t, "-mode", "http", "-url", srv.URL+"/pets/1", "-n", "10", "-c", "2")
	if s.Requests != 10 || s.ByKind["http"] != 10 || !strings.Contains(s.FirstErrors["http"], "401") {
		t.Errorf("unauthorized: %+v", s)
	}
	s = runJSON(t, "-mode", "http", "-method", "POST", "-url", srv.URL+"/reports", "-body", `{"kind":"inventory"}`,
		"-n", "5", "-c", "1", "-header", "Authorization: Bearer tok")
	if s.Requests != 5 || s.Errors != 0 {
		t.Errorf("POST with body: %+v", s)
	}
}

func TestRunStopsAfterDuration(t *testing.T) {
	srv := httptest.NewServer(demo.New(demo.Options{}))
	defer srv.Close()
	start := time.Now()
	s := runJSON(t, "-mode", "http", "-url", srv.URL+"/pets/1", "-d", "300ms", "-warmup", "100ms", "-c", "2")
	if el := time.Since(start); el > 5*time.Second || s.Seconds < 0.25 || s.Seconds > 2 {
		t.Errorf("run took %v, measured %.2fs", el, s.Seconds)
	}
	if s.Requests == 0 || s.Errors != 0 {
		t.Errorf("summary %+v", s)
	}
}

func TestHumanOutput(t *testing.T) {
	srv := httptest.NewServer(demo.New(demo.Options{}))
	defer srv.Close()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-mode", "http", "-url", srv.URL + "/pets/999", "-n", "3", "-c", "1"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"requests  3", "errors    3", "rps", "p50", "p99", "first http error: HTTP 404"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestParseProcStat(t *testing.T) {
	// Field 2 may hold spaces and parentheses; utime=250 and stime=50 ticks.
	stat := "4242 (my (odd) srv) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 9 0 1000 1000000 500 18446744073709551615"
	d, err := parseProcStat(stat)
	if err != nil || d != 3*time.Second {
		t.Errorf("parseProcStat = %v, %v; want 3s", d, err)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 x 0"} {
		if _, err := parseProcStat(bad); err == nil {
			t.Errorf("parseProcStat(%q) accepted", bad)
		}
	}
	var p pidFlags
	if err := p.Set("gw=12"); err != nil || p[0] != (namedPID{"gw", 12}) {
		t.Errorf("Set(gw=12): %v %v", p, err)
	}
	if err := p.Set("13"); err != nil || p[1] != (namedPID{"13", 13}) {
		t.Errorf("Set(13): %v %v", p, err)
	}
	if err := p.Set("x=-1"); err == nil {
		t.Error("Set(x=-1) accepted")
	}
}

func TestRunReportsCPUPerRequest(t *testing.T) {
	if _, err := procCPU(os.Getpid()); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// The test process is the server here, so it must have used some CPU.
	srv := httptest.NewServer(demo.New(demo.Options{}))
	defer srv.Close()
	s := runJSON(t, "-mode", "http", "-url", srv.URL+"/pets/1", "-n", "3000", "-c", "4", "-pid", fmt.Sprintf("self=%d", os.Getpid()))
	// Both are this process, read from /proc one after the other: a clock
	// tick (10 ms at Linux's USER_HZ of 100) may fall between the reads, at
	// the start or at the end, so they may differ by up to two ticks.
	twoTicks := 2 * 10e3 / float64(s.Requests)
	if us, ok := s.CPUPerReq["self"]; !ok || us <= 0 || us > 1e5 || math.Abs(s.CPUPerReq["harness"]-us) > twoTicks {
		t.Errorf("cpuUsPerReq %v (%d requests)", s.CPUPerReq, s.Requests)
	}
	if _, err := parseFlags([]string{"-mode", "http", "-url", srv.URL, "-pid", "999999999"}, io.Discard); err == nil {
		t.Error("a pid that does not exist was accepted")
	}
}
