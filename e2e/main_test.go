// Package e2e tests the real mcpgate binary from the outside: TestMain
// builds ./cmd/mcpgate once, each test starts it as a subprocess on its own
// loopback port (or under stdio), drives it with the official MCP clients
// (the go-sdk in 2026-07-28 and 2025-11-25 modes, and the TypeScript SDK v1)
// and checks what the upstreams received: the built-in demo API, recording
// upstreams served by the test process (one per API with several), a real
// OpenID provider for the OAuth flows (package internal/oidctest), an OTLP
// receiver, Stoplight Prism for the corpus (prism_test.go), and several
// replicas on PostgreSQL (MCPGATE_TEST_POSTGRES; skipped without it,
// except in CI).
//
// Start-up is never waited for by sleeping: the gateway listens on
// 127.0.0.1:0 and readiness is the binary's "serving MCP" log line on
// stderr (which names the port) followed by a GET /healthz. Where a test
// waits for something only the clock shows (a token becoming due, a
// client's or a load balancer's polling), it polls in short steps under a
// deadline. Every subprocess is stopped with SIGTERM (and must exit 0:
// graceful shutdown) in t.Cleanup, with SIGKILL as the fallback.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// binary is the mcpgate executable built by TestMain.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "mcpgate-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "mcpgate")
	if runtime.GOOS == "windows" {
		binary += ".exe"
	}
	// The package directory is e2e/, so the command is one level up. Under
	// go test -race the gateway is built with the race detector too: a data
	// race in it then fails the test that stops it (exit status 66).
	args := []string{"build", "-o", binary}
	if raceEnabled() {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "../cmd/mcpgate")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building ./cmd/mcpgate:", err)
		return 1
	}
	return m.Run()
}

// raceEnabled reports whether this test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// Protocol revisions the tests negotiate.
const (
	modernVersion = "2026-07-28"
	legacyVersion = "2025-11-25"
)

// logBuffer collects a subprocess's stderr and signals when the "serving"
// line has been written.
type logBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	ready   chan struct{}
	readyOK bool
}

func newLogBuffer() *logBuffer { return &logBuffer{ready: make(chan struct{})} }

// servingLine is the gateway's "serving MCP" log record, as text or JSON.
var servingLine = regexp.MustCompile(`"?msg"?[=:]"serving MCP"[ ,]"?tools"?[=:](\d+)[ ,]"?url"?[=:]"?(http://[^"\s]+)`)

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if !b.readyOK && servingLine.Match(b.buf.Bytes()) {
		b.readyOK = true
		close(b.ready)
	}
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// gatewayProc is one running `mcpgate serve`.
type gatewayProc struct {
	URL  string // the MCP endpoint, http://127.0.0.1:PORT/mcp
	Base string // http://127.0.0.1:PORT
	Log  *logBuffer

	cmd       *exec.Cmd
	exited    chan struct{} // closed when Wait returned
	waitErr   error
	stopOnce  sync.Once
	signalled atomic.Bool
	killed    atomic.Bool // killed on purpose (a crash test): no clean exit expected
}

// freePort returns a loopback address that was free a moment ago (for an
// upstream that must refuse connections).
func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startGateway runs `mcpgate serve ARGS… --addr 127.0.0.1:0` with env
// added to a minimal environment, waits until it serves, and stops it at
// the end of the test (checking that SIGTERM makes it exit 0). The kernel
// picks the port; the binary names it in its "serving N tools at URL" line
// on stderr, so no two tests can race for a port.
func startGateway(t *testing.T, env []string, args ...string) *gatewayProc {
	t.Helper()
	g, err := launch(t, env, args)
	if err != nil {
		t.Fatalf("starting mcpgate %s: %v", strings.Join(args, " "), err)
	}
	return g
}

// baseEnv is the subprocess environment: enough to run, nothing that could
// configure the gateway behind the test's back.
func baseEnv(t testing.TB) []string {
	env := []string{"HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir(),
		// A race-enabled binary sleeps 1 s at exit unless told otherwise.
		"GORACE=atexit_sleep_ms=0"}
	for _, k := range []string{"PATH", "TMPDIR", "SYSTEMROOT"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// launch starts the subprocess on a port the kernel picks and waits for
// its "serving" line and a healthy /healthz; the stop is registered with
// t.Cleanup once it serves.
func launch(t *testing.T, env, args []string) (*gatewayProc, error) {
	return launchAt(t, env, args, "127.0.0.1:0")
}

// launchAt is launch listening on addr (a loopback address).
func launchAt(t *testing.T, env, args []string, addr string) (*gatewayProc, error) {
	full := append([]string{"serve"}, args...)
	full = append(full, "--addr", addr)
	cmd := exec.Command(binary, full...)
	cmd.Env = append(baseEnv(t), env...)
	log := newLogBuffer()
	cmd.Stdout = io.Discard
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &gatewayProc{Log: log, cmd: cmd, exited: make(chan struct{})}
	go func() {
		g.waitErr = cmd.Wait()
		close(g.exited)
	}()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	select {
	case <-log.ready:
	case <-g.exited:
		return nil, fmt.Errorf("exited before serving (%v):\n%s", g.waitErr, log.String())
	case <-deadline.C:
		g.kill()
		return nil, fmt.Errorf("not serving after 30s:\n%s", log.String())
	}
	m := servingLine.FindStringSubmatch(log.String())
	g.URL = m[2]
	g.Base = strings.TrimSuffix(g.URL, "/mcp")
	if !strings.HasPrefix(g.URL, "http://127.0.0.1:") || strings.HasSuffix(g.Base, ":0") {
		g.kill()
		return nil, fmt.Errorf("serving at %s, want a loopback port", g.URL)
	}
	t.Cleanup(func() { g.stop(t) })
	if err := waitHealthy(g.Base, g.exited); err != nil {
		return nil, fmt.Errorf("%v\n%s", err, log.String())
	}
	return g, nil
}

// waitHealthy polls GET /healthz until it answers 200, the process exits,
// or a deadline passes.
func waitHealthy(base string, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte(`"status":"ok"`)) {
				return nil
			}
			err = fmt.Errorf("healthz: %d %s", resp.StatusCode, body)
		}
		select {
		case <-tick.C:
		case <-exited:
			return errors.New("exited while waiting for /healthz")
		case <-ctx.Done():
			return fmt.Errorf("not healthy: %v", err)
		}
	}
}

// stop sends SIGTERM (unless sigterm already did) and expects a clean exit
// (status 0) in time; SIGKILL otherwise.
func (g *gatewayProc) stop(t *testing.T) {
	g.stopOnce.Do(func() {
		if g.killed.Load() {
			return
		}
		if !g.signalled.Load() {
			select {
			case <-g.exited:
				t.Errorf("mcpgate exited on its own before the end of the test (%v):\n%s", g.waitErr, g.Log.String())
				return
			default:
			}
			g.sigterm()
		}
		select {
		case <-g.exited:
			if g.waitErr != nil {
				t.Errorf("mcpgate did not exit 0 on SIGTERM: %v\n%s", g.waitErr, g.Log.String())
			}
			if strings.Contains(g.Log.String(), "WARNING: DATA RACE") {
				t.Errorf("the race detector found a data race in mcpgate:\n%s", g.Log.String())
			}
		case <-time.After(15 * time.Second):
			_ = g.cmd.Process.Kill()
			<-g.exited
			t.Errorf("mcpgate did not exit within 15s of SIGTERM; killed\n%s", g.Log.String())
		}
	})
}

// sigterm asks the gateway to shut down; stop (at the latest in t.Cleanup)
// then waits for it and checks the exit status.
func (g *gatewayProc) sigterm() {
	g.signalled.Store(true)
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
}

func (g *gatewayProc) kill() {
	_ = g.cmd.Process.Kill()
	<-g.exited
}

// crash kills the gateway with SIGKILL, as a crash would.
func (g *gatewayProc) crash() {
	g.killed.Store(true)
	g.kill()
}

// bearerTransport adds the caller's Authorization header to every request
// the MCP client sends.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// tapTransport shows every response body the MCP client reads (JSON or
// SSE) to tap, as it is read, each after a line
// "# METHOD STATUS CONTENT-TYPE".
type tapTransport struct {
	tap  func([]byte)
	next http.RoundTripper
}

func (tt tapTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := tt.next.RoundTrip(r)
	if err == nil && resp.Body != nil {
		tt.tap([]byte(fmt.Sprintf("\n# %s %d %s\n", r.Method, resp.StatusCode, resp.Header.Get("Content-Type"))))
		resp.Body = tapBody{resp.Body, tt.tap}
	}
	return resp, err
}

type tapBody struct {
	io.ReadCloser
	tap func([]byte)
}

func (b tapBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.tap(p[:n])
	}
	return n, err
}

// wire records what the server sent a client.
type wire struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // a token after each write (capacity 1)
}

func newWire() *wire { return &wire{changed: make(chan struct{}, 1)} }

func (w *wire) tap(p []byte) {
	w.mu.Lock()
	w.buf.Write(p)
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until the recorded text contains s.
func (w *wire) waitFor(s string, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !strings.Contains(w.String(), s) {
		select {
		case <-w.changed:
		case <-deadline.C:
			return false
		}
	}
	return true
}

// responses splits what was recorded into responses, each beginning with
// "METHOD STATUS CONTENT-TYPE\n".
func (w *wire) responses() []string {
	parts := strings.Split(w.String(), "\n# ")
	return parts[1:]
}

func (w *wire) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// connectOptions configures connectHTTP.
type connectOptions struct {
	Bearer   string // sent as Authorization: Bearer … when not empty
	Version  string // the protocol version to ask for (empty: the SDK's latest)
	Client   *sdk.ClientOptions
	Want     string // the version that must be negotiated
	NoStream bool   // DisableStandaloneSSE
	Wire     *wire  // when set, records every response body
	// Wrap, when set, wraps the client's HTTP transport.
	Wrap func(http.RoundTripper) http.RoundTripper
}

// connectHTTP connects the go-sdk client to the gateway over Streamable
// HTTP and checks the negotiated protocol version.
func connectHTTP(t *testing.T, url string, o connectOptions) *sdk.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	var rt http.RoundTripper = tr
	if o.Wire != nil {
		rt = tapTransport{o.Wire.tap, rt}
	}
	if o.Bearer != "" {
		rt = bearerTransport{o.Bearer, rt}
	}
	if o.Wrap != nil {
		rt = o.Wrap(rt)
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "mcpgate-e2e", Version: "0.0.1"}, o.Client)
	var so *sdk.ClientSessionOptions
	if o.Version != "" {
		so = &sdk.ClientSessionOptions{ProtocolVersion: o.Version}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1, DisableStandaloneSSE: o.NoStream,
	}, so)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	want := o.Want
	if want == "" {
		want = modernVersion
	}
	if got := cs.InitializeResult(); got == nil || got.ProtocolVersion != want {
		t.Fatalf("negotiated protocol version = %+v, want exactly %q", got, want)
	}
	return cs
}

// call calls a tool and fails the test on a protocol error.
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// text joins the text blocks of a result.
func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// wantOK fails unless res is a success.
func wantOK(t *testing.T, name string, res *sdk.CallToolResult) {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s: isError: %s", name, text(res))
	}
}

// wantError fails unless res is a tool error whose text has every part.
func wantError(t *testing.T, name string, res *sdk.CallToolResult, parts ...string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("%s: want isError, got success: %s", name, text(res))
	}
	for _, p := range parts {
		if !strings.Contains(text(res), p) {
			t.Errorf("%s: error text lacks %q: %s", name, p, text(res))
		}
	}
}

// toolNames lists every tool the session sees.
func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	return names
}
