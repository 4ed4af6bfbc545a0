package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// StdioOptions configure ServeStdio.
type StdioOptions struct {
	// MaxMessageBytes bounds one line (default 4 MiB).
	MaxMessageBytes int
	// MaxInFlight bounds concurrently served requests (default 64); reading
	// pauses while the bound is reached.
	MaxInFlight int
}

// ServeStdio serves s over newline-delimited JSON-RPC on in and out until in
// ends or ctx is done. Requests are served concurrently; notifications/
// cancelled cancels the request it names, which then gets no response. At
// the end of input, listen streams end and other requests are allowed to
// finish. Only MCP messages are written to out.
func ServeStdio(ctx context.Context, s *Server, in io.Reader, out io.Writer, opts *StdioOptions) error {
	c := newStdioConn(ctx, s, out, opts)
	defer c.close()
	return c.readLoop(in)
}

// stdioConn is one stdio connection: a client on the other end of in and
// out. Its read loop routes each message (dispatch); requests run in
// their own goroutines, bounded by MaxInFlight; a legacy client's session
// lives here (legacy_stdio.go).
type stdioConn struct {
	srv    *Server
	opts   StdioOptions
	ctx    context.Context
	cancel context.CancelFunc // ends every request at close
	w      *stdioWriter
	legacy *session // this process's legacy session, once initialized; read loop only

	mu       sync.Mutex
	inflight map[string]*stdioCall // by raw request id
	wg       sync.WaitGroup        // running requests
	sem      chan struct{}         // one token per running request
}

func newStdioConn(ctx context.Context, s *Server, out io.Writer, opts *StdioOptions) *stdioConn {
	var o StdioOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 4 << 20
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 64
	}
	ctx, cancel := context.WithCancel(ctx)
	return &stdioConn{
		srv: s, opts: o, ctx: ctx, cancel: cancel,
		w:        &stdioWriter{w: bufio.NewWriter(out)},
		inflight: map[string]*stdioCall{},
		sem:      make(chan struct{}, o.MaxInFlight),
	}
}

// stdioCall is a request in flight.
type stdioCall struct {
	cancel    context.CancelFunc
	cancelled bool // by notifications/cancelled or shutdown: no response is written
	listen    bool
}

// readLoop reads one message per line until the input ends.
func (c *stdioConn) readLoop(in io.Reader) error {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r, c.opts.MaxMessageBytes)
		if len(bytes.TrimSpace(line)) > 0 {
			c.dispatch(line)
		}
		if errors.Is(err, errTooLargeLine) {
			c.replyError(nil, NewError(CodeInvalidRequest, fmt.Sprintf("Invalid Request: message exceeds %d bytes", c.opts.MaxMessageBytes), nil))
			continue
		}
		if err != nil {
			return c.shutdown(err)
		}
	}
}

// dispatch routes one message.
func (c *stdioConn) dispatch(line []byte) {
	msg, id, jerr := decodeMessage(line)
	switch {
	case jerr != nil:
		c.replyError(id, jerr)
	case msg.response:
		c.deliverResponse(msg)
	case msg.isNotification():
		if msg.method == "notifications/cancelled" {
			c.cancelRequest(msg)
		}
	default:
		c.request(msg)
	}
}

// request starts a request: after the id check, the era decides who
// serves it. An initialize without modern _meta opens this process's
// legacy session; after it, requests without modern _meta belong to that
// session. Modern requests stay stateless either way.
func (c *stdioConn) request(msg *message) {
	if c.inUse(msg.id) {
		c.replyError(msg.id, NewError(CodeInvalidRequest, "Invalid Request: id is already in use by a request in progress", nil))
		return
	}
	if msg.method == "initialize" && !msg.hasModernMeta() {
		c.initialize(msg)
		return
	}
	if c.legacy != nil && !msg.hasModernMeta() {
		c.serveLegacy(msg)
		return
	}
	ctx, ob := c.srv.observe(c.ctx, msg, "stdio", "")
	call, jerr := c.srv.admit(ctx, msg, nil)
	if jerr != nil {
		ob.end(nil, jerr)
		c.replyError(msg.id, jerr)
		return
	}
	call.obs = ob
	c.start(ctx, msg, ob, func(ctx context.Context, st stream) ([]byte, *Error) { return c.srv.handle(ctx, call, st) })
}

// start runs serve in its own goroutine once the in-flight limit allows
// (the read loop waits until then) and writes its answer, unless the
// request was cancelled.
func (c *stdioConn) start(ctx context.Context, msg *message, ob *observation, serve func(context.Context, stream) ([]byte, *Error)) {
	ctx, cancel := context.WithCancel(ctx)
	sc := &stdioCall{cancel: cancel, listen: msg.method == "subscriptions/listen"}
	key := string(msg.id)
	c.mu.Lock()
	c.inflight[key] = sc
	c.mu.Unlock()
	c.sem <- struct{}{}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() { <-c.sem }()
		result, jerr := serve(ctx, &stdioStream{c: c, call: sc})
		defer ob.end(result, jerr)
		c.mu.Lock()
		delete(c.inflight, key)
		skip := sc.cancelled
		c.mu.Unlock()
		cancel()
		switch {
		case skip || (result == nil && jerr == nil):
		case jerr != nil:
			c.replyError(msg.id, jerr)
		default:
			c.w.write(appendResponse(nil, msg.id, result))
		}
	}()
}

func (c *stdioConn) inUse(id json.RawMessage) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.inflight[string(id)]
	return ok
}

// cancelRequest handles notifications/cancelled: the request it names
// stops and gets no response.
func (c *stdioConn) cancelRequest(msg *message) {
	p, _ := decodeParams(msg.params)
	if p == nil || p.RequestID == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if sc, ok := c.inflight[string(p.RequestID)]; ok {
		sc.cancelled = true
		sc.cancel()
	}
}

// shutdown handles the end of input: listen streams end now, other
// requests finish and are answered.
func (c *stdioConn) shutdown(readErr error) error {
	c.mu.Lock()
	for _, sc := range c.inflight {
		if sc.listen {
			sc.cancelled = true
			sc.cancel()
		}
	}
	c.mu.Unlock()
	c.wg.Wait()
	if errors.Is(readErr, io.EOF) {
		return c.w.err()
	}
	return fmt.Errorf("mcp: stdio read: %w", readErr)
}

// close ends what is left: the legacy session and any request context.
func (c *stdioConn) close() {
	c.cancel()
	if c.legacy != nil {
		c.legacy.close()
	}
}

// replyError writes an error answer; an id that could not be read is null.
func (c *stdioConn) replyError(id json.RawMessage, jerr *Error) {
	c.w.write(appendError(nil, idOrNull(id), jerr))
}

// idOrNull is the id of an error reply on stdio: the request's id, or null
// when it could not be read (JSON-RPC 2.0 §5: a parse error or an invalid
// request without a readable id answers "id": null). Over HTTP such an
// error omits the id instead, as the MCP schema (id: string | integer)
// prefers: the reply is tied to its POST anyway, while on stdio a client
// matching replies to requests needs the member to be there.
func idOrNull(id json.RawMessage) json.RawMessage {
	if id == nil {
		return json.RawMessage("null")
	}
	return id
}

var errTooLargeLine = errors.New("line too long")

// readLine reads one line of at most max bytes; a longer line is consumed
// and reported as errTooLargeLine.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return nil, err
			}
			return nil, errTooLargeLine
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// stdioWriter serialises whole messages onto out, one per line.
type stdioWriter struct {
	mu   sync.Mutex
	w    *bufio.Writer
	fail error
}

func (sw *stdioWriter) write(msg []byte) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.fail != nil {
		return sw.fail
	}
	if _, err := sw.w.Write(msg); err != nil {
		sw.fail = err
		return err
	}
	if err := sw.w.WriteByte('\n'); err != nil {
		sw.fail = err
		return err
	}
	sw.fail = sw.w.Flush()
	return sw.fail
}

func (sw *stdioWriter) err() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.fail
}

// stdioStream carries a request's notifications; nothing more is written
// for a request once it was cancelled.
type stdioStream struct {
	c    *stdioConn
	call *stdioCall
}

func (st *stdioStream) send(msg []byte) error {
	st.c.mu.Lock()
	cancelled := st.call.cancelled
	st.c.mu.Unlock()
	if cancelled {
		return context.Canceled
	}
	return st.c.w.write(msg) // written (buffered and flushed) before it returns
}

func (st *stdioStream) keepalive() error { return nil }
