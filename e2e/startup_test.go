package e2e

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runToExit runs mcpgate ARGS… to its exit (bounded) and returns its exit
// code and stderr.
func runToExit(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(baseEnv(t), env...)
	var stderr bytes.Buffer
	cmd.Stdin = strings.NewReader("")
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("mcpgate %s did not exit:\n%s", strings.Join(args, " "), stderr.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stderr.String()
}

// TestStartupFailures: every way serve and stdio can fail to start is one
// clear line naming the thing and the problem, exit status 1, and never a
// panic.
func TestStartupFailures(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	html := write("page.html", "<!doctype html><html><body>Not an API</body></html>\n")
	badYAML := write("bad.yaml", "spec: [unclosed\n")
	misspelt := write("misspelt.yaml", "log_level: debug\n")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	closed := freePort(t) // nothing listens here: an issuer that is not up yet
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()

	cases := []struct {
		name string
		env  []string
		args []string
		want []string // each must be in the one line
	}{
		{"missing spec file", nil, []string{"--spec", filepath.Join(dir, "openapi.yaml"), "--upstream", "https://api.example.com"}, []string{"openapi.yaml", "no such file"}},
		{"HTML page as spec", nil, []string{"--spec", html, "--upstream", "https://api.example.com"}, []string{"page.html"}},
		{"invalid YAML config", nil, []string{"--config", badYAML}, []string{"bad.yaml", "line 2"}},
		{"misspelt config key", nil, []string{"--config", misspelt}, []string{"misspelt.yaml", `"log_level"`, `"log.level"`}},
		{"unknown store scheme", nil, []string{"--demo", "--store", "bogus:x"}, []string{"bogus:x"}},
		{"bad upstream", nil, []string{"--spec", html, "--upstream", "ftp://x"}, []string{"ftp://x", "http(s)"}},
		{"no spec", nil, nil, []string{"--spec"}},
		{"issuer not listening", nil, []string{"--demo", "--store", "memory", "--auth-mode", "oauth", "--auth-issuer", "http://" + closed,
			"--auth-resource", "http://127.0.0.1/mcp", "--auth-startup-timeout", "1s"}, []string{closed, "refused"}},
		{"issuer without metadata", nil, []string{"--demo", "--store", "memory", "--auth-mode", "oauth", "--auth-issuer", notFound.URL,
			"--auth-resource", "http://127.0.0.1/mcp"}, []string{notFound.URL, "404"}},
		{"address in use", nil, []string{"--demo", "--store", "memory", "--addr", busy.Addr().String()}, []string{busy.Addr().String(), "in use"}},
		{"bad log level in env", []string{"MCPGATE_LOG_LEVEL=loud"}, []string{"--demo"}, []string{"MCPGATE_LOG_LEVEL", "loud"}},
	}
	for _, c := range cases {
		for _, sub := range []string{"serve", "stdio"} {
			if sub == "stdio" && c.name == "address in use" {
				continue // stdio listens on nothing
			}
			t.Run(c.name+"/"+sub, func(t *testing.T) {
				start := time.Now()
				code, stderr := runToExit(t, c.env, append([]string{sub}, c.args...)...)
				lines := strings.Split(strings.TrimSpace(stderr), "\n")
				last := lines[len(lines)-1]
				if code == 0 || strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
					t.Fatalf("exit %d:\n%s", code, stderr)
				}
				for _, w := range c.want {
					if !strings.Contains(last, w) {
						t.Errorf("the failure line lacks %q:\n%s", w, stderr)
					}
				}
				if c.name == "issuer not listening" && time.Since(start) < 900*time.Millisecond {
					t.Errorf("gave up after %s: an unreachable issuer must be retried for --auth-startup-timeout", time.Since(start))
				}
			})
		}
	}
}
