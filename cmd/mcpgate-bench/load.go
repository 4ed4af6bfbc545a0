package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxReply bounds one JSON reply body.
const maxReply = 64 << 20

// worker is one keep-alive client. A worker is used by one goroutine.
type worker interface {
	// setup prepares the client (legacy MCP: initialize a session).
	setup(ctx context.Context) error
	// do sends one request and classifies the reply; err explains a failure.
	do(ctx context.Context) (errKind, error)
	// close releases what setup acquired (legacy MCP: DELETE the session).
	close(ctx context.Context)
}

// shared is what all workers of a run share: the client and the request
// templates. Request ids come from one counter, so each is fresh.
type shared struct {
	cfg    *config
	client *http.Client
	ids    atomic.Int64
	header http.Header // base headers of every measured request
}

func newShared(cfg *config) *shared {
	tr := &http.Transport{
		Proxy:               nil, // targets are loopback; never go through a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2*cfg.c + 8,
		MaxIdleConnsPerHost: 2*cfg.c + 8, // ≥ C: every client keeps its connection
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	sh := &shared{
		cfg: cfg,
		client: &http.Client{
			Transport: tr,
			Timeout:   cfg.timeout,
			// Measure the target itself: a redirect is its answer.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		header: http.Header{},
	}
	if cfg.mode == "mcp" {
		sh.header.Set("Content-Type", "application/json")
		sh.header.Set("Accept", "application/json, text/event-stream")
		if modernProto(cfg.proto) {
			sh.header.Set("MCP-Protocol-Version", cfg.proto)
			sh.header.Set("Mcp-Method", "tools/call")
			sh.header.Set("Mcp-Name", encodeHeaderValue(cfg.tool))
		}
	} else if cfg.body != "" {
		sh.header.Set("Content-Type", "application/json")
	}
	for _, kv := range cfg.headers {
		sh.header.Set(kv[0], kv[1]) // -header overrides the defaults
	}
	return sh
}

// encodeHeaderValue applies the 2026-07-28 base64 sentinel encoding to a
// value that cannot travel raw in an Mcp-Name / Mcp-Param-* header.
func encodeHeaderValue(s string) string {
	raw := s != "" && !strings.HasPrefix(s, "=?base64?") &&
		s[0] != ' ' && s[0] != '\t' && s[len(s)-1] != ' ' && s[len(s)-1] != '\t'
	for i := 0; raw && i < len(s); i++ {
		raw = s[i] >= 0x20 && s[i] < 0x7f
	}
	if raw {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

// ---- mcp mode ----

// mcpWorker is one MCP client: stateless for 2026-07-28, one session for
// legacy versions.
//
// A worker spends as little CPU per request as it can (its headers are built
// once, replies are scanned in one pass), because on a small machine it
// shares the cores with the servers it measures.
type mcpWorker struct {
	sh         *shared
	session    string      // Mcp-Session-Id (legacy)
	negotiated string      // protocol version agreed at initialize (legacy)
	header     http.Header // this worker's request headers, built once per session
	body       []byte      // reused request body
	rd         bytes.Reader
	reply      bytes.Buffer
	scan       replyScanner
}

// newRequest builds a request carrying the worker's headers. The transport
// never modifies a request's headers, so one map serves every request of a
// worker (one request at a time).
func (w *mcpWorker) newRequest(ctx context.Context, method string, body []byte) (*http.Request, error) {
	if w.header == nil {
		w.header = w.sh.header.Clone()
		if w.session != "" {
			w.header.Set("Mcp-Session-Id", w.session)
		}
		if w.negotiated != "" {
			w.header.Set("MCP-Protocol-Version", w.negotiated)
		}
	}
	w.rd.Reset(body)
	req, err := http.NewRequestWithContext(ctx, method, w.sh.cfg.url, &w.rd)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header = w.header
	return req, nil
}

func (w *mcpWorker) setup(ctx context.Context) error {
	if modernProto(w.sh.cfg.proto) {
		return nil
	}
	id := w.sh.ids.Add(1)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"mcpgate-bench","version":"0.1.0"}}}`, id, w.sh.cfg.proto)
	req, err := w.newRequest(ctx, http.MethodPost, []byte(body))
	if err != nil {
		return err
	}
	res, err := w.sh.client.Do(req)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	defer drain(res)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("initialize: HTTP %d", res.StatusCode)
	}
	version, kind, err := w.readResponse(res, id, "protocolVersion")
	if kind != okKind {
		return fmt.Errorf("initialize: %w", err)
	}
	var negotiated string
	if err := json.Unmarshal(version, &negotiated); err != nil || negotiated == "" {
		return fmt.Errorf("initialize: result has no protocolVersion string (got %s)", version)
	}
	w.session = res.Header.Get("Mcp-Session-Id")
	w.negotiated = negotiated
	w.header = nil // rebuilt with the session

	req, err = w.newRequest(ctx, http.MethodPost, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return err
	}
	res2, err := w.sh.client.Do(req)
	if err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	drain(res2)
	if res2.StatusCode/100 != 2 {
		return fmt.Errorf("notifications/initialized: HTTP %d", res2.StatusCode)
	}
	return nil
}

func (w *mcpWorker) close(ctx context.Context) {
	if w.session == "" {
		return
	}
	req, err := w.newRequest(ctx, http.MethodDelete, nil)
	if err != nil {
		return
	}
	if res, err := w.sh.client.Do(req); err == nil {
		drain(res)
	}
}

// buildCall writes the tools/call body for id into w.body.
func (w *mcpWorker) buildCall(id int64) {
	cfg := w.sh.cfg
	name, _ := json.Marshal(cfg.tool) // a string always encodes
	b := append(w.body[:0], `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"tools/call","params":{"name":`...)
	b = append(b, name...)
	b = append(b, `,"arguments":`...)
	b = append(b, cfg.args...)
	if modernProto(cfg.proto) {
		b = append(b, `,"_meta":{"io.modelcontextprotocol/protocolVersion":"`...)
		b = append(b, cfg.proto...)
		b = append(b, `","io.modelcontextprotocol/clientCapabilities":{}}`...)
	}
	b = append(b, "}}"...)
	w.body = b
}

func (w *mcpWorker) do(ctx context.Context) (errKind, error) {
	id := w.sh.ids.Add(1)
	w.buildCall(id)
	req, err := w.newRequest(ctx, http.MethodPost, w.body)
	if err != nil {
		return errTransport, err
	}
	res, err := w.sh.client.Do(req)
	if err != nil {
		return errTransport, fmt.Errorf("tools/call: %w", err)
	}
	defer drain(res)
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return errHTTPStatus, fmt.Errorf("tools/call: HTTP %d: %s", res.StatusCode, b)
	}
	isError, kind, err := w.readResponse(res, id, "isError")
	if kind != okKind {
		return kind, err
	}
	switch string(isError) {
	case "", "false":
		return okKind, nil
	case "true":
		return errTool, fmt.Errorf("tools/call result has isError: %.300s", w.reply.Bytes())
	}
	return errProtocol, fmt.Errorf("tools/call result: isError is %.40s, not a boolean", isError)
}

// readResponse reads the JSON-RPC response to request id from a JSON or SSE
// reply and returns the raw value of result[field] (nil when absent). The
// value stays valid until the next call.
func (w *mcpWorker) readResponse(res *http.Response, id int64, field string) ([]byte, errKind, error) {
	switch mediaType(res.Header.Get("Content-Type")) {
	case "application/json":
		w.reply.Reset()
		if _, err := w.reply.ReadFrom(io.LimitReader(res.Body, maxReply)); err != nil {
			return nil, errTransport, fmt.Errorf("read reply: %w", err)
		}
		r := w.scan.scan(w.reply.Bytes(), id, field)
		if !r.ours {
			return nil, errProtocol, errors.New("a JSON reply carries a request or notification, not the response")
		}
		return r.field, r.kind, r.err
	case "text/event-stream":
		var r reply
		err := readSSE(res.Body, func(data []byte) (bool, error) {
			r = w.scan.scan(data, id, field)
			w.reply.Reset()
			w.reply.Write(data) // for error messages
			return r.ours, nil  // not ours: a notification or a server request; keep reading
		})
		if err != nil {
			if errors.Is(err, errStreamEnded) {
				return nil, errProtocol, err
			}
			return nil, errTransport, err
		}
		return r.field, r.kind, r.err
	default:
		return nil, errProtocol, fmt.Errorf("reply Content-Type %q is neither application/json nor text/event-stream", res.Header.Get("Content-Type"))
	}
}

// mediaType returns the lower-cased media type of a Content-Type value,
// without parameters (and without the allocations of mime.ParseMediaType).
func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	switch {
	case strings.EqualFold(ct, "application/json"):
		return "application/json"
	case strings.EqualFold(ct, "text/event-stream"):
		return "text/event-stream"
	}
	return strings.ToLower(ct)
}

// drain reads the rest of a body (bounded) and closes it, so the
// connection goes back to the idle pool.
func drain(res *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxReply))
	_ = res.Body.Close()
}

// ---- http mode ----

type httpWorker struct{ sh *shared }

func (w *httpWorker) setup(context.Context) error { return nil }
func (w *httpWorker) close(context.Context)       {}

func (w *httpWorker) do(ctx context.Context) (errKind, error) {
	cfg := w.sh.cfg
	var body io.Reader
	if cfg.body != "" {
		body = strings.NewReader(cfg.body)
	}
	req, err := http.NewRequestWithContext(ctx, cfg.method, cfg.url, body)
	if err != nil {
		return errTransport, fmt.Errorf("build request: %w", err)
	}
	req.Header = w.sh.header.Clone()
	res, err := w.sh.client.Do(req)
	if err != nil {
		return errTransport, fmt.Errorf("%s: %w", cfg.method, err)
	}
	_, err = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	if err != nil {
		return errTransport, fmt.Errorf("read body: %w", err)
	}
	if res.StatusCode/100 != 2 {
		return errHTTPStatus, fmt.Errorf("HTTP %d", res.StatusCode)
	}
	return okKind, nil
}

// ---- the run ----

// phaseResult is what one worker measured in one phase.
type phaseResult struct {
	counts   [numKinds]int64
	lat      []time.Duration
	firstErr [numKinds]error
}

// runLoad sets up C workers, runs the optional warm-up and the measured
// phase, and summarizes the measured phase.
func runLoad(ctx context.Context, cfg *config) (summary, error) {
	sh := newShared(cfg)
	defer sh.client.CloseIdleConnections()
	workers := make([]worker, cfg.c)
	for i := range workers {
		if cfg.mode == "mcp" {
			workers[i] = &mcpWorker{sh: sh}
		} else {
			workers[i] = &httpWorker{sh: sh}
		}
		if err := workers[i].setup(ctx); err != nil {
			return summary{}, fmt.Errorf("client %d: %w", i, err)
		}
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, w := range workers {
			w.close(cctx)
		}
	}()
	if cfg.warmup > 0 {
		phase(ctx, workers, cfg.warmup, 0)
	}
	// With -pid, the harness's own CPU is reported too, as "harness": on a
	// small machine the load generator competes with what it measures.
	watched := cfg.pids
	if len(watched) > 0 {
		watched = append(watched[:len(watched):len(watched)], namedPID{name: "harness", pid: os.Getpid()})
	}
	mem := newMemScraper(cfg.metrics)
	mem0, err := mem.snapshot(ctx)
	if err != nil {
		return summary{}, err
	}
	cpu0, err := cpuSnapshot(watched)
	if err != nil {
		return summary{}, err
	}
	results, elapsed := phase(ctx, workers, cfg.d, cfg.n)
	cpu1, err := cpuSnapshot(watched)
	if err != nil {
		return summary{}, err
	}
	mem1, err := mem.snapshot(ctx)
	if err != nil {
		return summary{}, err
	}
	var counts [numKinds]int64
	var lat []time.Duration
	var firstErr [numKinds]error
	for _, r := range results {
		for k := range counts {
			counts[k] += r.counts[k]
			if firstErr[k] == nil {
				firstErr[k] = r.firstErr[k]
			}
		}
		lat = append(lat, r.lat...)
	}
	s := newSummary(cfg, counts, lat, elapsed)
	if len(watched) > 0 && s.Requests > 0 {
		s.CPUPerReq = map[string]float64{}
		for i, p := range watched {
			s.CPUPerReq[p.name] = float64(cpu1[i]-cpu0[i]) / float64(time.Microsecond) / float64(s.Requests)
		}
	}
	if err := mem.memPerRequest(&s, mem0, mem1); err != nil {
		return summary{}, err
	}
	s.Load1 = loadAverage()
	for k, err := range firstErr {
		if err != nil {
			if s.FirstErrors == nil {
				s.FirstErrors = map[string]string{}
			}
			s.FirstErrors[errKind(k).String()] = err.Error()
		}
	}
	return s, nil
}

// phase runs all workers until d elapses (d > 0), n requests have been
// issued (n > 0), or ctx ends. A request cut off by the end of the phase is
// not counted.
func phase(ctx context.Context, workers []worker, d time.Duration, n int64) ([]phaseResult, time.Duration) {
	pctx := ctx
	if d > 0 {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	var issued atomic.Int64
	results := make([]phaseResult, len(workers))
	var wg sync.WaitGroup
	start := time.Now()
	for i, w := range workers {
		res := &results[i]
		if n > 0 {
			res.lat = make([]time.Duration, 0, n/int64(len(workers))+1)
		}
		wg.Go(func() {
			for pctx.Err() == nil && (n == 0 || issued.Add(1) <= n) {
				t0 := time.Now()
				kind, err := w.do(pctx)
				el := time.Since(t0)
				if kind != okKind && pctx.Err() != nil {
					return // cut off by the end of the phase
				}
				res.counts[kind]++
				if kind == okKind {
					res.lat = append(res.lat, el)
				} else if res.firstErr[kind] == nil {
					res.firstErr[kind] = err
				}
			}
		})
	}
	wg.Wait()
	return results, time.Since(start)
}
