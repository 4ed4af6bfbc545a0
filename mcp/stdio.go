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
	w := &stdioWriter{w: bufio.NewWriter(out)}
	ctx, cancelAll := context.WithCancel(ctx)
	defer cancelAll()

	var legacy *session // this process's legacy session, once initialized
	defer func() {
		if legacy != nil {
			legacy.close()
		}
	}()
	var (
		mu       sync.Mutex
		inflight = map[string]*stdioCall{}
		wg       sync.WaitGroup
		sem      = make(chan struct{}, o.MaxInFlight)
	)
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r, o.MaxMessageBytes)
		if len(bytes.TrimSpace(line)) > 0 {
			msg, id, jerr := decodeMessage(line)
			switch {
			case jerr != nil:
				w.write(appendError(nil, idOrNull(id), jerr))
			case msg.response:
				if legacy != nil {
					legacy.deliver(msg) // an answer to a server-to-client request
				} else {
					w.write(appendError(nil, msg.id, NewError(CodeInvalidRequest, "Invalid Request: clients must not send JSON-RPC responses", nil)))
				}
			case msg.isNotification():
				if msg.method == "notifications/cancelled" {
					if p, _ := decodeParams(msg.params); p != nil && p.RequestID != nil {
						mu.Lock()
						if c, ok := inflight[string(p.RequestID)]; ok {
							c.cancelled = true
							c.cancel()
						}
						mu.Unlock()
					}
				}
			default:
				key := string(msg.id)
				mu.Lock()
				_, dup := inflight[key]
				mu.Unlock()
				if dup {
					w.write(appendError(nil, msg.id, NewError(CodeInvalidRequest, "Invalid Request: id is already in use by a request in progress", nil)))
					break
				}
				// Era: an initialize without modern _meta opens this
				// process's legacy session; after it, requests without
				// modern _meta belong to that session. Modern requests
				// stay stateless either way.
				if msg.method == "initialize" && !msg.hasModernMeta() {
					_, ob := s.observe(ctx, msg, "stdio", LatestLegacyVersion)
					sess, res, jerr := s.newSession(msg.params, PrincipalFrom(ctx))
					if sess != nil {
						ob.setVersion(sess.version)
					}
					ob.end(res, jerr)
					if jerr != nil {
						w.write(appendError(nil, msg.id, jerr))
						break
					}
					if legacy != nil {
						legacy.close()
					}
					legacy = sess
					go forwardSessionNotifications(ctx, sess, w)
					w.write(appendResponse(nil, msg.id, res))
					break
				}
				var serve func(ctx context.Context, st stream) ([]byte, *Error)
				var octx context.Context
				var ob *observation
				if legacy != nil && !msg.hasModernMeta() {
					sess := legacy
					octx, ob = s.observe(ctx, msg, "stdio", sess.version)
					serve = func(ctx context.Context, st stream) ([]byte, *Error) { return sess.serve(ctx, msg, st, ob) }
				} else {
					octx, ob = s.observe(ctx, msg, "stdio", "")
					c, jerr := s.admit(octx, msg, nil)
					if jerr != nil {
						ob.end(nil, jerr)
						w.write(appendError(nil, msg.id, jerr))
						break
					}
					c.obs = ob
					serve = func(ctx context.Context, st stream) ([]byte, *Error) { return s.handle(ctx, c, st) }
				}
				cctx, cancel := context.WithCancel(octx)
				sc := &stdioCall{cancel: cancel, listen: msg.method == "subscriptions/listen"}
				mu.Lock()
				inflight[key] = sc
				mu.Unlock()
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					result, jerr := serve(cctx, &stdioStream{w: w, call: sc, mu: &mu})
					defer ob.end(result, jerr)
					mu.Lock()
					delete(inflight, key)
					skip := sc.cancelled
					mu.Unlock()
					cancel()
					if skip || (result == nil && jerr == nil) {
						return
					}
					if jerr != nil {
						w.write(appendError(nil, msg.id, jerr))
					} else {
						w.write(appendResponse(nil, msg.id, result))
					}
				}()
			}
		}
		if err != nil {
			if errors.Is(err, errTooLargeLine) {
				w.write(appendError(nil, idOrNull(nil), NewError(CodeInvalidRequest, fmt.Sprintf("Invalid Request: message exceeds %d bytes", o.MaxMessageBytes), nil)))
				continue
			}
			// End of input: listen streams end now, other requests finish.
			mu.Lock()
			for _, c := range inflight {
				if c.listen {
					c.cancelled = true
					c.cancel()
				}
			}
			mu.Unlock()
			wg.Wait()
			if errors.Is(err, io.EOF) {
				return w.err()
			}
			return fmt.Errorf("mcp: stdio read: %w", err)
		}
	}
}

// forwardSessionNotifications writes a legacy session's list changes and
// resource updates to out until the session or ctx ends.
func forwardSessionNotifications(ctx context.Context, sess *session, w *stdioWriter) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sess.done:
			return
		case <-sess.sub.wake:
			for _, msg := range sess.pendingNotifications() {
				if w.write(msg) != nil {
					return
				}
			}
		}
	}
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

type stdioCall struct {
	cancel    context.CancelFunc
	cancelled bool
	listen    bool
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
	w    *stdioWriter
	call *stdioCall
	mu   *sync.Mutex
}

func (st *stdioStream) send(msg []byte) error {
	st.mu.Lock()
	cancelled := st.call.cancelled
	st.mu.Unlock()
	if cancelled {
		return context.Canceled
	}
	return st.w.write(msg) // written (buffered and flushed) before it returns
}

func (st *stdioStream) keepalive() error { return nil }
