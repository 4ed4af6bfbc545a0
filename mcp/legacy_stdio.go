package mcp

import "context"

// This file is the legacy (initialize-based, 2025-11-25 and earlier) side
// of the stdio transport: one process is one client, so a stdio connection
// holds at most one session, opened by initialize and ended with the
// connection. The session's list changes and resource updates are written
// as they happen; its server-to-client requests (elicitation, sampling)
// are answered on stdin.

// initialize opens this connection's legacy session, replacing an earlier
// one, and answers with the InitializeResult.
func (c *stdioConn) initialize(msg *message) {
	_, ob := c.srv.observe(c.ctx, msg, "stdio", LatestLegacyVersion)
	sess, res, jerr := c.srv.newSession(msg.params, PrincipalFrom(c.ctx))
	if sess != nil {
		ob.setVersion(sess.version)
	}
	ob.end(res, jerr)
	if jerr != nil {
		c.replyError(msg.id, jerr)
		return
	}
	if c.legacy != nil {
		c.legacy.close()
	}
	c.legacy = sess
	go c.forwardSessionNotifications(sess)
	c.w.write(appendResponse(nil, msg.id, res))
}

// serveLegacy starts a request of the legacy session.
func (c *stdioConn) serveLegacy(msg *message) {
	sess := c.legacy
	ctx, ob := c.srv.observe(c.ctx, msg, "stdio", sess.version)
	c.start(ctx, msg, ob, func(ctx context.Context, st stream) ([]byte, *Error) { return sess.serve(ctx, msg, st, ob, nil) })
}

// deliverResponse hands a client's answer to the session's
// server-to-client request; without a session, clients must not send
// responses.
func (c *stdioConn) deliverResponse(msg *message) {
	if c.legacy == nil {
		c.replyError(msg.id, NewError(CodeInvalidRequest, "Invalid Request: clients must not send JSON-RPC responses", nil))
		return
	}
	c.legacy.deliver(msg)
}

// forwardSessionNotifications writes a legacy session's list changes and
// resource updates until the session or the connection ends.
func (c *stdioConn) forwardSessionNotifications(sess *session) {
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-sess.done:
			return
		case <-sess.sub.wake:
			for _, msg := range sess.pendingNotifications() {
				if c.w.write(msg) != nil {
					return
				}
			}
		}
	}
}
