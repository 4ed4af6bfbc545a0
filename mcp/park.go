package mcp

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// An idle subscriptions/listen stream served the ordinary way holds an
// HTTP/1.x connection's whole machinery: net/http's goroutine and its read,
// write and chunking buffers, the background reader that watches for the
// client leaving, and the handler's own goroutine state, about 32 KB. A
// parked stream keeps only the connection: once the stream's filter is
// accepted, the connection is hijacked, the response is written on it
// directly (an event stream delimited by the connection's close), and one
// small goroutine waits in a one-byte Read. The Read returns when the
// client leaves (the stream ends at once), when its deadline passes (a
// keep-alive is due) or when the deadline is moved to now (kick: a change
// to deliver, or the server closing).

// parking is what the transport lends a listen stream that may be parked:
// the keep-alive interval and the hook that ends the request (its limit
// slot and its observation) once the parked stream ends.
type parking struct {
	keepAlive time.Duration
	end       func(result []byte)
	parked    bool
}

// parkedStream is a listen stream on a hijacked HTTP/1.x connection.
type parkedStream struct {
	ls        *listenStream
	conn      net.Conn
	ctx       context.Context // the request's values, without its cancellation
	timeout   time.Duration   // each write's deadline
	keepAlive time.Duration
	end       func(result []byte)
	kicked    atomic.Bool
	one       [1]byte
}

// park takes the listen stream over from the request when the connection
// can be hijacked: it writes the response head and the acknowledgement and
// starts the stream's goroutine.
func (st *httpStream) park(ctx context.Context, ls *listenStream) bool {
	pk := st.parking
	if pk == nil {
		return false
	}
	conn, _, err := st.rc.Hijack() // the server's buffers are dropped with the request
	if err != nil {
		return false // not HTTP/1.x underneath (a wrapper without Unwrap, a test recorder)
	}
	pk.parked = true
	p := &parkedStream{
		ls: ls, conn: conn, ctx: context.WithoutCancel(ctx),
		timeout: st.timeout, keepAlive: pk.keepAlive, end: pk.end,
	}
	// Subscribed before the acknowledgement: a client that saw it cannot
	// miss a change made after.
	ls.subscribe(p.kick)
	if p.write(responseHead(st.w.Header()), ls.ack()) != nil {
		ls.unsubscribe()
		_ = conn.Close()
		p.end(nil)
		return true
	}
	go p.run()
	return true
}

// responseHead is the status line and headers of a parked stream: the
// headers set on the ResponseWriter so far (by middleware; written by
// net/http's own Header.Write, which keeps line breaks out of values) and
// those of an event stream. The body ends when the connection closes.
func responseHead(h http.Header) []byte {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\n")
	h = h.Clone()
	for _, own := range [...]string{"Content-Type", "Content-Length", "Transfer-Encoding", "Connection", "Cache-Control", "Date", "X-Accel-Buffering"} {
		h.Del(own)
	}
	_ = h.Write(&b)
	b.WriteString("Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\nConnection: close\r\nDate: ")
	b.Write(time.Now().UTC().AppendFormat(nil, http.TimeFormat))
	b.WriteString("\r\n\r\n")
	return b.Bytes()
}

// kick wakes the stream's goroutine: something is to be delivered, or the
// server is closing.
func (p *parkedStream) kick() {
	p.kicked.Store(true)
	_ = p.conn.SetReadDeadline(time.Now())
}

// run waits in Read until the client leaves, a keep-alive is due or the
// stream is kicked, and ends the stream when the client left, a write
// failed or the server closed.
func (p *parkedStream) run() {
	var final []byte
	defer func() {
		p.ls.unsubscribe()
		_ = p.conn.Close()
		p.end(final)
	}()
	next := time.Now().Add(p.keepAlive)
	for {
		_ = p.conn.SetReadDeadline(next)
		if !p.kicked.Load() {
			n, err := p.conn.Read(p.one[:])
			if n > 0 || (err != nil && !errors.Is(err, os.ErrDeadlineExceeded)) {
				return // the client left, or sent what a stream does not expect
			}
		}
		p.kicked.Store(false)
		if p.ls.srv.listeners.isClosed() {
			final = p.ls.final()
			_ = p.write(nil, appendResponse(nil, p.ls.id, final))
			return
		}
		if p.ls.deliver(p.ctx, func(msg []byte) error { return p.write(nil, msg) }) != nil {
			return
		}
		if now := time.Now(); !now.Before(next) {
			if p.write([]byte(": keep-alive\n\n")) != nil {
				return
			}
			next = now.Add(p.keepAlive)
		}
	}
}

// write writes raw (the response head, a keep-alive comment) and then each
// message as an event, in one write bounded by the write timeout.
func (p *parkedStream) write(raw []byte, msgs ...[]byte) error {
	buf := getBuf()
	defer putBuf(buf)
	b := append((*buf)[:0], raw...)
	for _, m := range msgs {
		b = append(append(append(b, "data: "...), m...), "\n\n"...)
	}
	*buf = b
	_ = p.conn.SetWriteDeadline(time.Now().Add(p.timeout))
	_, err := p.conn.Write(b)
	return err
}
