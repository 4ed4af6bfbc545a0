package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGracefulShutdown sends SIGTERM while a tool call is waiting for the
// upstream and a 2025-11-25 client holds its standalone SSE stream open:
// the call in flight still completes, new connections are refused, and the
// gateway exits 0 well within its 10 s grace period.
func TestGracefulShutdown(t *testing.T) {
	rec := newRecorder(t)
	g := startRecorded(t, rec, nil)
	cs := connectHTTP(t, g.URL, connectOptions{Bearer: clientBearer})
	// A legacy session with its GET stream open (the go-sdk opens it in the
	// background after initialize: wait until the client reads its headers).
	w := newWire()
	connectHTTP(t, g.URL, connectOptions{Bearer: clientBearer, Version: legacyVersion, Want: legacyVersion, Wire: w})
	if !w.waitFor("\n# GET 200 text/event-stream", 10*time.Second) {
		t.Fatalf("the legacy client opened no GET stream; it read:\n%s", w.String())
	}

	type outcome struct {
		res *sdk.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "hold", Arguments: map[string]any{}})
		done <- outcome{res, err}
	}()
	select {
	case <-rec.held:
	case <-time.After(20 * time.Second):
		t.Fatal("the call never reached the upstream")
	}

	start := time.Now()
	g.sigterm()
	// Shutdown closes the listener first: poll until a new connection is
	// refused (the call in flight keeps the process alive meanwhile).
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	refused := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		resp, err := client.Get(g.Base + "/healthz")
		if err != nil {
			refused = true
			break
		}
		resp.Body.Close()
		select {
		case <-g.exited:
			t.Fatalf("the gateway exited with a call in flight (%v)\n%s", g.waitErr, g.Log.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if !refused {
		t.Errorf("the gateway still accepts connections 5s after SIGTERM")
	}
	close(rec.release)

	out := <-done
	if out.err != nil {
		t.Fatalf("the call in flight at SIGTERM failed: %v\n%s", out.err, g.Log.String())
	}
	wantOK(t, "hold", out.res)
	if text(out.res) != `{"held":true}` {
		t.Errorf("hold = %s", text(out.res))
	}
	select {
	case <-g.exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("no exit 15s after SIGTERM\n%s", g.Log.String())
	}
	if g.waitErr != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", g.waitErr, g.Log.String())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("shutdown took %v: something (the legacy GET stream?) held it until the grace period ran out", took)
	}
}
